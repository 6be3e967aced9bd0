"""``armadactl create executor-credential``, ``get executor-credentials`` and ``revoke
executor-credential``: the credentials executors authenticate with, each good for one
cluster id and only for the executor API. All need the ``manage_executor_credentials``
permission.

``create`` writes the key, and nothing else, to stdout (so that ``armadactl create
executor-credential c1 > key`` leaves just the key in the file); what it is and how to use
it goes to stderr around it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from armada.cli.commands import EXIT_OK, make_client, out
from armada.cli.output import cell, render_data, render_table, timestamp_cell

CREDENTIAL_HEADERS = (
    "ID",
    "CLUSTER",
    "NAME",
    "PREFIX",
    "CREATED",
    "CREATED BY",
    "LAST USED",
    "REVOKED",
)


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def credential_id(text: str) -> int:
    """A credential's id as given on the command line: a whole number above 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a credential id (a whole number; see get executor-credentials)"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a credential id (ids start at 1)")
    return value


def render_credentials(credentials: Sequence[Mapping[str, Any]], fmt: str) -> str:
    if fmt != "table":
        return render_data(list(credentials), fmt)
    rows = [
        [
            cell(c.get("id")),
            cell(c.get("clusterId")),
            cell(c.get("name")),
            cell(c.get("prefix")),
            timestamp_cell(c.get("createdAt")),
            cell(c.get("createdBy")),
            timestamp_cell(c.get("lastUsedAt")),
            timestamp_cell(c.get("revokedAt")),
        ]
        for c in credentials
    ]
    return render_table(CREDENTIAL_HEADERS, rows)


def cmd_create_executor_credential(args: argparse.Namespace) -> int:
    made = make_client(args).create_executor_credential(args.cluster_id, args.name)
    cluster = made.get("clusterId") or args.cluster_id
    note(
        f"Created executor credential {made.get('id')} ({made.get('name')}) for cluster "
        f"{cluster}. Its key, shown only now (it is not stored and cannot be shown again):"
    )
    out(made["key"])
    note(
        f"Give it to the executor of cluster {cluster}: write it to the file its api.tokenFile "
        "names (readable only by the executor), or put it in ARMADA_EXECUTOR_TOKEN. It is "
        f"good only for the executor API, as cluster {cluster}."
    )
    return EXIT_OK


def cmd_get_executor_credentials(args: argparse.Namespace) -> int:
    credentials = make_client(args).list_executor_credentials(args.cluster_id)
    if not credentials and args.output == "table":
        where = f" for cluster {args.cluster_id}" if args.cluster_id else ""
        note(f"No executor credentials found{where}.")
        return EXIT_OK
    out(render_credentials(credentials, args.output))
    return EXIT_OK


def cmd_revoke_executor_credential(args: argparse.Namespace) -> int:
    revoked = make_client(args).revoke_executor_credential(args.credential_id)
    out(
        f"Executor credential {revoked.get('id')} ({revoked.get('name')}, cluster "
        f"{revoked.get('clusterId')}) is revoked since {timestamp_cell(revoked.get('revokedAt'))}: "
        "its key is refused from its next call"
    )
    return EXIT_OK
