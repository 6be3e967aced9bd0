"""``armadactl cancel node`` and ``preempt node``: every active job on one node of an
executor, optionally only those of some queues or priority classes, all or nothing.

Armada's shape is ``cancel node NODE -e EXECUTOR``; ``cancel on-node EXECUTOR NODE`` is the
same command with both names given in order. Nothing asks for confirmation (Armada's
armadactl does not either)."""

from __future__ import annotations

import argparse

from armada.cli.commands import EXIT_OK, make_client, out
from armada.cli.output import render_data

VERBS = {"cancel": ("Cancelling", "cancelled"), "preempt": ("Preempting", "preempted")}


def check_node(args: argparse.Namespace) -> str | None:
    if not (args.executor or "").strip():
        return "the following arguments are required: -e/--executor"
    if not args.node.strip():
        return "argument NODE: cannot provide an empty node name"
    return None


def cmd_node_action(args: argparse.Namespace) -> int:
    body: dict[str, object] = {}
    if args.reason:
        body["reason"] = args.reason
    if args.queues:
        body["queues"] = list(args.queues)
    if args.priority_classes:
        body["priorityClasses"] = list(args.priority_classes)
    ids = make_client(args).node_action(args.action, args.executor, args.node, body)
    if args.output != "table":
        out(render_data({"jobIds": ids}, args.output))
        return EXIT_OK
    filters = []
    if args.queues:
        filters.append(f"queues {','.join(args.queues)}")
    if args.priority_classes:
        filters.append(f"priority classes {','.join(args.priority_classes)}")
    where = f"node {args.node} of executor {args.executor}"
    suffix = f" ({'; '.join(filters)})" if filters else ""
    out(f"{VERBS[args.action][0]} {len(ids)} job(s) on {where}{suffix}")
    return EXIT_OK
