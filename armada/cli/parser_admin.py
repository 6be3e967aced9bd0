"""``armadactl`` commands for operators and for the session: executors (get, cordon,
uncordon), login and logout, the config file's contexts, version."""

from __future__ import annotations

from armada.cli.commands import cmd_cordon_executor, cmd_get_executor, cmd_get_executors
from armada.cli.config_commands import (
    cmd_current_context,
    cmd_get_contexts,
    cmd_use_context,
    cmd_version,
)
from armada.cli.login import cmd_login, cmd_logout
from armada.cli.parser_common import CommandTree, add_output_option


def add_executor_commands(tree: CommandTree) -> None:
    get_all = tree.leaf("get", "executors", "List the executors.")
    add_output_option(get_all)
    get_all.set_defaults(handler=cmd_get_executors)
    get = tree.leaf("get", "executor", "Show one executor with its nodes.")
    get.add_argument("executor_id", metavar="ID")
    add_output_option(get)
    get.set_defaults(handler=cmd_get_executor)

    for verb, cordoned, help_text in (
        ("cordon", True, "Cordon an executor: it gets no new leases; its running jobs carry on."),
        ("uncordon", False, "Uncordon an executor: it gets new leases again."),
    ):
        leaf = tree.leaf(verb, "executor", help_text)
        leaf.add_argument("executor_id", metavar="ID")
        leaf.set_defaults(handler=cmd_cordon_executor, cordoned=cordoned)


def add_session_commands(tree: CommandTree) -> None:
    login = tree.leaf(
        None,
        "login",
        "Ask for your password once, create an API token with it and store the token (with "
        "the url and username) in the config file, readable only by you; later commands use it.",
    )
    login.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input (for scripts)",
    )
    login.add_argument(
        "--name", metavar="NAME", help="the token's name (default: armadactl on <host> <time>)"
    )
    login.add_argument(
        "--expires-in", metavar="DURATION", help="e.g. 90d or 12h (default: never expires)"
    )
    login.set_defaults(handler=cmd_login)
    logout = tree.leaf(
        None, "logout", "Revoke the stored token and remove it from the config file."
    )
    logout.set_defaults(handler=cmd_logout)


def add_config_commands(tree: CommandTree) -> None:
    """``config use-context | get-contexts | current-context`` and ``version``."""
    use = tree.leaf(
        "config",
        "use-context",
        "Make a context of the config file the one used when --context is not given "
        "(sets its currentContext).",
    )
    use.add_argument("name", metavar="CONTEXT")
    use.set_defaults(handler=cmd_use_context)
    get = tree.leaf("config", "get-contexts", "List the contexts of the config file.")
    get.set_defaults(handler=cmd_get_contexts)
    current = tree.leaf("config", "current-context", "Show the context in use.")
    current.set_defaults(handler=cmd_current_context)
    version = tree.leaf(None, "version", "Show the version of armadactl.")
    version.set_defaults(handler=cmd_version)
