"""``armadactl cancel executor``, ``preempt executor`` and ``delete executor``.

Cancel and preempt take Armada's flags: ``-q/--queues``, ``-p/--priority-classes`` or
``-a/--all-priority-classes`` (one of the two is required, as in Armada, so that nobody
stops every job by leaving a flag out) and ``--pools``. They print Armada's
``Requesting ... of jobs matching executor: ...`` line, then how many jobs are being
stopped. ``delete executor`` retires the executor (see ``armada.services.executor_actions``).
"""

from __future__ import annotations

import argparse

from armada.cli.commands import EXIT_OK, make_client, out
from armada.cli.output import render_data

_WORDS = {"cancel": ("cancellation", "Cancelling"), "preempt": ("preemption", "Preempting")}


def check_executor_action(args: argparse.Namespace) -> str | None:
    if not args.executor.strip():
        return "argument EXECUTOR: cannot provide an empty executor name"
    if not args.priority_classes and not args.all_priority_classes:
        return (
            "give -p/--priority-classes PC1,PC2 or -a/--all-priority-classes (Armada asks for "
            "one, so that no job is stopped by a flag left out)"
        )
    return None


def _all(values: list[str] | None) -> str:
    return ",".join(values) if values else "all"


def cmd_executor_action(args: argparse.Namespace) -> int:
    noun, doing = _WORDS[args.action]
    body: dict[str, object] = {}
    if args.reason:
        body["reason"] = args.reason
    if args.queues:
        body["queues"] = list(args.queues)
    if args.priority_classes:
        body["priorityClasses"] = list(args.priority_classes)
    if args.pools:
        body["pools"] = list(args.pools)
    table = args.output == "table"
    if table:
        out(
            f"Requesting {noun} of jobs matching executor: {args.executor}, queues: "
            f"{_all(args.queues)}, priority-classes: {_all(args.priority_classes)}, pools: "
            f"{_all(args.pools)}"
        )
    ids = make_client(args).executor_action(args.action, args.executor, body)
    if not table:
        out(render_data({"jobIds": ids}, args.output))
        return EXIT_OK
    out(f"{doing} {len(ids)} job(s) on executor {args.executor}")
    return EXIT_OK


def check_delete_executor(args: argparse.Namespace) -> str | None:
    if not args.executor.strip():
        return "argument EXECUTOR: executor name must be non-empty"
    return None


def cmd_delete_executor(args: argparse.Namespace) -> int:
    result = make_client(args).delete_executor(args.executor)
    revoked = int(result.get("credentialsRevoked") or 0)
    active = int(result.get("activeRuns") or 0)
    notes = [f"{revoked} credential(s) revoked"]
    if active:
        notes.append(f"{active} active run(s) will end by lease expiry")
    out(f"Deleted executor {args.executor} ({'; '.join(notes)})")
    return EXIT_OK
