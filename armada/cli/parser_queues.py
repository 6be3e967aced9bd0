"""``armadactl`` commands for queues: create, update, delete, get, and the commands that
act on many queues at once (``cancel|preempt|cordon|uncordon queues``, ``get queues``),
with Armada's flag names beside ours."""

from __future__ import annotations

import argparse
from typing import Any

from armada.cli.parser_common import (
    ArgumentParser,
    CommandTree,
    add_output_option,
    add_priority_class_filter,
    label_map,
    lazy,
    name_list,
    priority_factor,
)

check_update_queue, cmd_create_queue, cmd_delete_queue, cmd_get_queue, cmd_update_queue = lazy(
    "commands",
    "check_update_queue",
    "cmd_create_queue",
    "cmd_delete_queue",
    "cmd_get_queue",
    "cmd_update_queue",
)
(
    check_cancel,
    check_selection,
    cmd_cancel_queues,
    cmd_cordon_queues,
    cmd_get_queues,
    cmd_preempt_queues,
) = lazy(
    "queue_actions",
    "check_cancel",
    "check_selection",
    "cmd_cancel_queues",
    "cmd_cordon_queues",
    "cmd_get_queues",
    "cmd_preempt_queues",
)


class MergeLabels(argparse.Action):
    """``--labels a=1 --labels b=2`` gives ``{"a": "1", "b": "2"}`` (Armada's flag may be
    repeated); a key given twice is an error."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        current = dict(getattr(namespace, self.dest, None) or {})
        twice = sorted(set(current) & set(values))
        if twice:
            parser.error(f"argument {option_string}: label {twice[0]!r} is given twice")
        setattr(namespace, self.dest, {**current, **values})


def _add_queue_fields(parser: argparse.ArgumentParser, *, update: bool) -> None:
    """The queue flags shared by ``create queue`` and ``update queue``. Lists are comma
    separated, and a flag may be repeated (as Armada's): the values add up."""
    clear = '; "" clears it' if update else ""
    parser.add_argument(
        "--priority-factor",
        type=priority_factor,
        metavar="F",
        help="at least 1.0; higher means a smaller fair share",
    )
    parser.add_argument(
        "--owners",
        type=name_list,
        action="extend",
        metavar="A,B",
        help=f"users who own the queue{clear}",
    )
    parser.add_argument(
        "--group-owners",
        type=name_list,
        action="extend",
        metavar="G,H",
        help=f"groups who own the queue{clear}",
    )
    parser.add_argument(
        "-l",
        "--labels",
        type=label_map,
        action=MergeLabels,
        metavar="K=V,K2=V2",
        help=f"labels of the queue{' (replaces them all)' if update else ''}{clear}",
    )
    parser.add_argument(
        "--retry-policies",
        type=name_list,
        action="extend",
        metavar="P1,P2",
        help=f"retry policies: the first decides what a failure means; any others are kept but not used{clear}",
    )


NESTED_FIELDS_HELP = """Give users and groups verbs on a queue with `armadactl grant queue` (and take
them with `armadactl revoke queue`). To set the permissions whole, or
resourceLimitsByPriorityClassName, write them in a queue file (kind: Queue) and send it
with `armadactl {verb} -f FILE` (`armadactl {verb} --help` shows the file's shape)."""


def add_queue_commands(tree: CommandTree) -> None:
    create = tree.leaf(
        "create", "queue", "Create a queue.", epilog=NESTED_FIELDS_HELP.format(verb="create")
    )
    create.add_argument("name", metavar="NAME", help="queue name (a lower-case RFC 1123 label)")
    _add_queue_fields(create, update=False)
    create.add_argument(
        "--cordoned",
        "--cordon",
        dest="cordoned",
        action="store_true",
        help="create it cordoned (no new jobs accepted)",
    )
    create.add_argument(
        "--dry-run", action="store_true", help="have the server check it; create nothing"
    )
    create.set_defaults(handler=cmd_create_queue)

    update = tree.leaf(
        "update",
        "queue",
        "Change a queue: only the fields given are sent (the rest stay as they are).",
        epilog=NESTED_FIELDS_HELP.format(verb="update"),
    )
    update.add_argument("name", metavar="NAME")
    _add_queue_fields(update, update=True)
    cordon_flags = update.add_mutually_exclusive_group()
    cordon_flags.add_argument(
        "--cordoned",
        "--cordon",
        dest="cordoned",
        action="store_const",
        const=True,
        help="cordon it (no new jobs accepted)",
    )
    cordon_flags.add_argument(
        "--uncordoned", dest="cordoned", action="store_const", const=False, help="uncordon it"
    )
    update.set_defaults(handler=cmd_update_queue, check=check_update_queue, command_parser=update)

    delete = tree.leaf("delete", "queue", "Delete a queue (refused while it has unfinished jobs).")
    delete.add_argument("name", metavar="NAME")
    delete.set_defaults(handler=cmd_delete_queue)

    get = tree.leaf("get", "queue", "Show one queue.")
    get.add_argument("name", metavar="NAME")
    add_output_option(get)
    get.set_defaults(handler=cmd_get_queue)
    get_all = tree.leaf(
        "get",
        "queues",
        "List the queues: all of them, or those picked by name or by labels (-l).",
    )
    _add_selection(get_all, only_cordoned=True, dry_run=False)
    add_output_option(get_all)
    get_all.set_defaults(
        handler=cmd_get_queues,
        check=lambda args: check_selection(args, required=False),
        command_parser=get_all,
    )
    add_queue_actions(tree)


def _add_selection(parser: ArgumentParser, *, only_cordoned: bool, dry_run: bool = True) -> None:
    """Picking queues: names, or ``-l`` label selector terms, with ``--inverse``."""
    parser.add_argument(
        "queues", nargs="*", metavar="QUEUE", help="queue names (or pick them with -l)"
    )
    parser.add_argument(
        "-l",
        "--selector",
        "--match-labels",
        dest="selector",
        type=name_list,
        action="extend",
        metavar="K=V,K2",
        help="pick the queues that have every one of these labels (key=value, or key: any "
        "value); comma separated or repeated",
    )
    parser.add_argument(
        "--inverse",
        action="store_true",
        help="pick every queue except those the names or labels pick",
    )
    if only_cordoned:
        parser.add_argument(
            "--only-cordoned", action="store_true", help="pick only cordoned queues"
        )
    if dry_run:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="have the server check everything and say what would be done; change nothing",
        )


def _add_job_filters(parser: ArgumentParser, verb: str, done: str) -> None:
    add_priority_class_filter(parser, verb)
    parser.add_argument(
        "--pools",
        type=name_list,
        action="extend",
        metavar="P1,P2",
        help=f"{verb} only jobs in these pools (default: all; a queued job matches every pool)",
    )
    parser.add_argument("--reason", default="", help=f"recorded on the {done} jobs")
    add_output_option(parser)


def add_queue_actions(tree: CommandTree) -> None:
    """``cancel|preempt|cordon|uncordon queues`` (``queue`` is the same command)."""
    cancel = tree.leaf(
        "cancel",
        "queues",
        "Cancel the jobs in the given states of every queue picked by name or by labels "
        "(-l), all or nothing.",
        aliases=["queue"],
    )
    _add_selection(cancel, only_cordoned=True)
    cancel.add_argument(
        "-s",
        "--job-states",
        "--state",
        dest="states",
        type=name_list,
        action="extend",
        required=True,
        metavar="S1,S2",
        help="the states to cancel: queued, leased, pending, running (comma separated or repeated)",
    )
    _add_job_filters(cancel, "cancel", "cancelled")
    cancel.set_defaults(handler=cmd_cancel_queues, check=check_cancel, command_parser=cancel)

    preempt = tree.leaf(
        "preempt",
        "queues",
        "Preempt the jobs holding a run (leased, pending, running) of every queue picked by "
        "name or by labels (-l), all or nothing; they end preempted and are not retried.",
        aliases=["queue"],
    )
    _add_selection(preempt, only_cordoned=True)
    _add_job_filters(preempt, "preempt", "preempted")
    preempt.set_defaults(handler=cmd_preempt_queues, check=check_selection, command_parser=preempt)

    for verb, cordoned, help_text in (
        (
            "cordon",
            True,
            "Cordon queues picked by name or by labels (-l): no new jobs are accepted or "
            "scheduled; running jobs carry on.",
        ),
        (
            "uncordon",
            False,
            "Uncordon queues picked by name or by labels (-l): they accept new jobs again.",
        ),
    ):
        leaf = tree.leaf(verb, "queues", help_text, aliases=["queue"])
        _add_selection(leaf, only_cordoned=False)
        add_output_option(leaf)
        leaf.set_defaults(
            handler=cmd_cordon_queues, cordoned=cordoned, check=check_selection, command_parser=leaf
        )
