"""``armadactl create -f FILE`` and ``armadactl update -f FILE``: every document of a
resource file (``resourcefile``), in order, each sent as its own request.

A queue's nested fields (``permissions``, ``resourceLimitsByPriorityClassName``) have no
flags: a file is the way to set them, and these commands the way to send it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from armada.cli.client import ApiError, ArmadaClient
from armada.cli.commands import EXIT_OK, make_client, out, print_warnings
from armada.cli.resourcefile import Resource, load_resources


def _label(resource: Resource) -> str:
    return f"{'queue' if resource.kind == 'Queue' else 'retry policy'} {resource.name}"


def _each(
    args: argparse.Namespace,
    done_word: str,
    send: Callable[[ArmadaClient, Resource], None],
    line: Callable[[str], str] | None = None,
) -> None:
    """``send`` every document of ``args.file`` in order, printing ``line(label)`` after
    each (``<Done_word> <label>`` by default). Stops at the first one the server refuses,
    naming it and those done before it (they stay done)."""
    if not args.file:
        raise ApiError("give a RESOURCE (queue, retry-policy) or -f FILE")
    resources = load_resources(args.file)
    client = make_client(args)
    done: list[str] = []
    for resource in resources:
        label = _label(resource)
        try:
            send(client, resource)
        except ApiError as exc:
            before = f" ({', '.join(done)} {done_word.lower()} before it)"
            raise ApiError(
                f"{label}: {exc.message}" + (before if done else ""), exc.errors, exc.status
            ) from None
        done.append(label)
        out(line(label) if line else f"{done_word} {label}")


def cmd_create_from_file(args: argparse.Namespace) -> int:
    """``create -f FILE``: every document of the file, in order. With ``--dry-run`` every
    document is checked by the server and nothing is created."""
    policies_in_file: set[str] = set()

    def send(client: ArmadaClient, resource: Resource) -> None:
        if resource.kind == "Queue":
            body = resource.body
            named = body.get("retryPolicies")
            if args.dry_run and isinstance(named, list):
                # A policy created earlier in this file does not exist yet in a dry run;
                # the server checks the other names.
                body = {**body, "retryPolicies": [p for p in named if p not in policies_in_file]}
            client.create_queue(body, dry_run=args.dry_run)
        else:
            print_warnings(client.create_retry_policy(resource.body, dry_run=args.dry_run))
            policies_in_file.add(resource.name)

    if args.dry_run:
        _each(args, "Checked", send, lambda label: f"{label[0].upper()}{label[1:]} is valid")
        out("Dry run: nothing was created.")
    else:
        _each(args, "Created", send)
    return EXIT_OK


def cmd_update_from_file(args: argparse.Namespace) -> int:
    """``update -f FILE``: every document of the file, in order. A queue gets the fields its
    document has (those it leaves out stay as they are, as with ``update queue``); a retry
    policy is replaced by its document (as with ``update retry-policy -f``)."""

    def send(client: ArmadaClient, resource: Resource) -> None:
        if resource.kind == "Queue":
            client.update_queue(resource.name, resource.body)
        else:
            print_warnings(client.update_retry_policy(resource.name, resource.body))

    _each(args, "Updated", send)
    return EXIT_OK
