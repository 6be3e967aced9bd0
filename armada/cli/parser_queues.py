"""``armadactl`` commands for queues: create, update, delete, cordon, uncordon, get, and
cancel the jobs of a queue by state."""

from __future__ import annotations

import argparse

from armada.cli.commands import (
    check_update_queue,
    cmd_cancel_queue,
    cmd_cordon_queue,
    cmd_create_queue,
    cmd_delete_queue,
    cmd_get_queue,
    cmd_get_queues,
    cmd_update_queue,
)
from armada.cli.parser_common import (
    CommandTree,
    add_output_option,
    label_map,
    name_list,
    priority_factor,
)


def _add_queue_fields(parser: argparse.ArgumentParser, *, update: bool) -> None:
    """The queue flags shared by ``create queue`` and ``update queue``."""
    clear = '; "" clears it' if update else ""
    parser.add_argument(
        "--priority-factor",
        type=priority_factor,
        metavar="F",
        help="at least 1.0; higher means a smaller fair share",
    )
    parser.add_argument(
        "--owners", type=name_list, metavar="A,B", help=f"users who own the queue{clear}"
    )
    parser.add_argument(
        "--group-owners", type=name_list, metavar="G,H", help=f"groups who own the queue{clear}"
    )
    parser.add_argument(
        "--labels",
        type=label_map,
        metavar="K=V,K2=V2",
        help=f"labels of the queue{' (replaces them all)' if update else ''}{clear}",
    )
    parser.add_argument(
        "--retry-policies",
        type=name_list,
        metavar="P1,P2",
        help=f"retry policies, in order (the first whose rules match decides){clear}",
    )


def add_queue_commands(tree: CommandTree) -> None:
    create = tree.leaf("create", "queue", "Create a queue.")
    create.add_argument("name", metavar="NAME", help="queue name (a lower-case RFC 1123 label)")
    _add_queue_fields(create, update=False)
    create.add_argument(
        "--cordoned", action="store_true", help="create it cordoned (no new jobs accepted)"
    )
    create.add_argument(
        "--dry-run", action="store_true", help="have the server check it; create nothing"
    )
    create.set_defaults(handler=cmd_create_queue)

    update = tree.leaf(
        "update",
        "queue",
        "Change a queue: only the fields given are sent (the rest stay as they are).",
    )
    update.add_argument("name", metavar="NAME")
    _add_queue_fields(update, update=True)
    cordon_flags = update.add_mutually_exclusive_group()
    cordon_flags.add_argument(
        "--cordoned",
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

    for verb, cordoned, help_text in (
        (
            "cordon",
            True,
            "Cordon a queue: no new jobs are accepted or scheduled; running jobs carry on.",
        ),
        ("uncordon", False, "Uncordon a queue: it accepts new jobs again."),
    ):
        leaf = tree.leaf(verb, "queue", help_text)
        leaf.add_argument("name", metavar="NAME")
        leaf.set_defaults(handler=cmd_cordon_queue, cordoned=cordoned)

    get = tree.leaf("get", "queue", "Show one queue.")
    get.add_argument("name", metavar="NAME")
    add_output_option(get)
    get.set_defaults(handler=cmd_get_queue)
    get_all = tree.leaf("get", "queues", "List the queues.")
    add_output_option(get_all)
    get_all.set_defaults(handler=cmd_get_queues)

    cancel = tree.leaf(
        "cancel",
        "queue",
        "Cancel every job of a queue (any job set) in the given states, all or nothing.",
    )
    cancel.add_argument("queue", metavar="QUEUE")
    cancel.add_argument(
        "--state",
        dest="states",
        action="append",
        required=True,
        choices=("queued", "leased", "pending", "running"),
        help="a state to cancel (repeat for several)",
    )
    cancel.add_argument("--reason", default="", help="recorded on the cancelled jobs")
    cancel.set_defaults(handler=cmd_cancel_queue)
