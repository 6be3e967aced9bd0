"""``armadactl`` commands that give users and groups verbs on one queue or take them away:
``grant queue Q VERBS --user U --group G`` and ``revoke queue Q [VERBS] --user U``."""

from __future__ import annotations

import argparse

from armada.cli.parser_common import CommandTree, lazy, name_list

check_subjects, cmd_grant_queue, cmd_revoke_queue, verb_list = lazy(
    "queue_grants", "check_subjects", "cmd_grant_queue", "cmd_revoke_queue", "verb_list"
)

VERBS_TEXT = "submit, cancel, preempt, reprioritize, watch"


def _add_subjects(parser: argparse.ArgumentParser, to: str) -> None:
    parser.add_argument("name", metavar="QUEUE", help="queue name")
    parser.add_argument(
        "--user",
        "--users",
        dest="users",
        type=name_list,
        action="extend",
        metavar="A,B",
        help=f"users {to} (comma separated or repeated)",
    )
    parser.add_argument(
        "--group",
        "--groups",
        dest="groups",
        type=name_list,
        action="extend",
        metavar="G,H",
        help=f"groups {to} (comma separated or repeated)",
    )


def add_grant_commands(tree: CommandTree) -> None:
    grant = tree.leaf(
        "grant",
        "queue",
        "Let users and groups do more on one queue: each gets every verb named "
        "(the queue's other grants stay as they are). Needs the create_queue permission.",
        epilog="example: armadactl grant queue analytics watch --user alice --group ml",
    )
    _add_subjects(grant, "to grant the verbs to")
    grant.add_argument(
        "verbs", type=verb_list, metavar="VERBS", help=f"comma separated: {VERBS_TEXT}"
    )
    grant.set_defaults(handler=cmd_grant_queue, check=check_subjects, command_parser=grant)

    revoke = tree.leaf(
        "revoke",
        "queue",
        "Take verbs on one queue away from users and groups (every verb when none is "
        "named). Owners and holders of a global permission keep theirs. Needs the "
        "create_queue permission.",
        epilog="example: armadactl revoke queue analytics watch --user alice",
    )
    _add_subjects(revoke, "to take the verbs from")
    revoke.add_argument(
        "verbs",
        type=verb_list,
        nargs="?",
        metavar="VERBS",
        help=f"comma separated: {VERBS_TEXT} (default: every verb)",
    )
    revoke.set_defaults(handler=cmd_revoke_queue, check=check_subjects, command_parser=revoke)
