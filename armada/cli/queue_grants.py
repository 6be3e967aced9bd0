"""``armadactl grant queue`` and ``armadactl revoke queue``: give users and groups verbs on
one queue, or take them away, without rewriting the queue's whole ``permissions`` list
(``POST /api/v1/queues/{name}/grant|revoke``; the server changes the list under the
queue's lock, so two people granting at once each keep their grant).

    armadactl grant queue analytics watch --user alice --group ml
    armadactl revoke queue analytics watch --user alice
    armadactl revoke queue analytics --group ml        # every verb
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from armada.cli.commands import EXIT_OK, make_client, out
from armada.core.queues import VERBS

KINDS = (("users", "User", "user"), ("groups", "Group", "group"))


def verb_list(text: str) -> list[str]:
    """``watch,submit`` -> ``["watch", "submit"]``; each must be a queue verb."""
    verbs = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [v for v in verbs if v not in VERBS]
    if unknown or not verbs:
        raise argparse.ArgumentTypeError(
            f"{', '.join(unknown) or repr(text)}: verbs are {', '.join(VERBS)} (comma separated)"
        )
    return verbs


def check_subjects(args: argparse.Namespace) -> str | None:
    if not (args.users or args.groups):
        return "name at least one subject: --user NAME or --group NAME"
    return None


def _subjects(args: argparse.Namespace) -> list[dict[str, str]]:
    return [
        {"kind": kind, "name": name}
        for attribute, kind, _ in KINDS
        for name in dict.fromkeys(getattr(args, attribute) or [])
    ]


def _who(subjects: Sequence[Mapping[str, str]]) -> str:
    return ", ".join(f"{s['kind'].lower()} {s['name']}" for s in subjects)


def holdings(queue: Mapping[str, Any], subject: Mapping[str, str]) -> str:
    """What ``subject`` may do on ``queue`` now through its grants and ownership."""
    verbs = {
        verb
        for grant in queue.get("permissions") or []
        if dict(subject) in grant.get("subjects", [])
        for verb in grant.get("verbs", [])
    }
    owners = queue.get("owners" if subject["kind"] == "User" else "groupOwners") or []
    if subject["name"] in owners:
        return "every verb (an owner of the queue)"
    return ", ".join(v for v in VERBS if v in verbs) or "nothing (through this queue)"


def _change(args: argparse.Namespace, action: str) -> int:
    subjects = _subjects(args)
    body: dict[str, Any] = {"subjects": subjects}
    if args.verbs:
        body["verbs"] = args.verbs
    queue = make_client(args).change_queue_permissions(args.name, action, body)
    verbs = ", ".join(args.verbs) if args.verbs else "every verb"
    if action == "grant":
        out(f"Granted {verbs} on queue {args.name} to {_who(subjects)}")
    else:
        out(f"Revoked {verbs} on queue {args.name} from {_who(subjects)}")
    for subject in subjects:
        out(f"  {subject['kind'].lower()} {subject['name']} may now: {holdings(queue, subject)}")
    return EXIT_OK


def cmd_grant_queue(args: argparse.Namespace) -> int:
    return _change(args, "grant")


def cmd_revoke_queue(args: argparse.Namespace) -> int:
    return _change(args, "revoke")
