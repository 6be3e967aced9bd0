"""``armadactl`` commands for operators and for the session: executors (get, cordon,
uncordon, delete, cancel or preempt their jobs), executor credentials (create, get, revoke),
jobs on a node (cancel, preempt), login and logout, the config file's contexts, version,
docs."""

from __future__ import annotations

from armada.cli.docs_topics import TOPICS
from armada.cli.parser_common import (
    ArgumentParser,
    CommandTree,
    add_output_option,
    add_priority_class_filter,
    lazy,
    name_list,
)

cmd_cordon_executor, cmd_get_executor, cmd_get_executors = lazy(
    "commands", "cmd_cordon_executor", "cmd_get_executor", "cmd_get_executors"
)
cmd_current_context, cmd_get_contexts, cmd_use_context, cmd_version = lazy(
    "config_commands", "cmd_current_context", "cmd_get_contexts", "cmd_use_context", "cmd_version"
)
check_delete_executor, check_executor_action, cmd_delete_executor, cmd_executor_action = lazy(
    "executor_actions",
    "check_delete_executor",
    "check_executor_action",
    "cmd_delete_executor",
    "cmd_executor_action",
)
(credential_id,) = lazy("executor_credentials", "credential_id")
(cmd_docs,) = lazy("docs_topics", "cmd_docs")
cmd_create_executor_credential, cmd_get_executor_credentials, cmd_revoke_executor_credential = lazy(
    "executor_credentials",
    "cmd_create_executor_credential",
    "cmd_get_executor_credentials",
    "cmd_revoke_executor_credential",
)
cmd_login, cmd_logout = lazy("login", "cmd_login", "cmd_logout")
check_node, cmd_node_action = lazy("node_actions", "check_node", "cmd_node_action")


def add_executor_commands(tree: CommandTree) -> None:
    get_all = tree.leaf("get", "executors", "List the executors.")
    add_output_option(get_all)
    get_all.set_defaults(handler=cmd_get_executors)
    get = tree.leaf("get", "executor", "Show one executor with its nodes.")
    get.add_argument("executor_id", metavar="ID")
    add_output_option(get)
    get.set_defaults(handler=cmd_get_executor)

    cordon = tree.leaf(
        "cordon",
        "executor",
        "Cordon an executor: it gets no new leases; its running jobs carry on. Needs the "
        "update_executor_settings permission.",
    )
    cordon.add_argument("executor_id", metavar="ID")
    cordon.add_argument(
        "reason",
        metavar="REASON",
        nargs="?",
        default="",
        help="why; shown with the executor until it is uncordoned (Armada's armadactl asks "
        "for one)",
    )
    cordon.set_defaults(handler=cmd_cordon_executor, cordoned=True)
    uncordon = tree.leaf("uncordon", "executor", "Uncordon an executor: it gets new leases again.")
    uncordon.add_argument("executor_id", metavar="ID")
    uncordon.set_defaults(handler=cmd_cordon_executor, cordoned=False)

    delete = tree.leaf(
        "delete",
        "executor",
        "Delete (retire) an executor: its credentials are revoked, it leaves the listings and "
        "gets no new leases; its runs still active end by lease expiry at the next scheduling "
        "cycle. Needs the update_executor_settings permission.",
    )
    delete.add_argument("executor", metavar="EXECUTOR")
    delete.set_defaults(
        handler=cmd_delete_executor, check=check_delete_executor, command_parser=delete
    )
    for action, done, permission in (
        ("cancel", "cancelled", "cancel_any_jobs"),
        ("preempt", "preempted", "preempt_any_jobs"),
    ):
        stop = tree.leaf(
            action,
            "executor",
            f"{action.capitalize()} every active job on an executor (of some queues, priority "
            f"classes and pools), all or nothing. Needs the {permission} permission.",
        )
        stop.add_argument("executor", metavar="EXECUTOR")
        _add_node_filters(stop, action, done)
        stop.add_argument(
            "--pools",
            type=name_list,
            action="extend",
            metavar="P1,P2",
            help=f"{action} only jobs running in these pools (default: all)",
        )
        stop.set_defaults(
            handler=cmd_executor_action,
            action=action,
            check=check_executor_action,
            command_parser=stop,
        )


def add_executor_credential_commands(tree: CommandTree) -> None:
    """``create executor-credential CLUSTER_ID [--name]``, ``get executor-credentials
    [CLUSTER_ID]``, ``revoke executor-credential ID``."""
    needs = "Needs the manage_executor_credentials permission."
    create = tree.leaf(
        "create",
        "executor-credential",
        "Create a credential for the executor of one cluster and print its key, once (to "
        "stdout; the notes go to stderr). The key is good only for the executor API, as that "
        f"cluster. {needs}",
    )
    create.add_argument("cluster_id", metavar="CLUSTER_ID", help="the executor's id")
    create.add_argument(
        "--name",
        metavar="NAME",
        help="unique among the cluster's credentials not revoked (default: executor)",
    )
    create.set_defaults(handler=cmd_create_executor_credential)

    get = tree.leaf(
        "get",
        "executor-credentials",
        f"List executor credentials, revoked ones too (never their keys). {needs}",
    )
    get.add_argument(
        "cluster_id", metavar="CLUSTER_ID", nargs="?", help="only those of this executor id"
    )
    add_output_option(get)
    get.set_defaults(handler=cmd_get_executor_credentials)

    revoke = tree.leaf(
        "revoke",
        "executor-credential",
        f"Revoke an executor credential: its key is refused from its next call. {needs}",
    )
    revoke.add_argument(
        "credential_id", metavar="ID", type=credential_id, help="as get executor-credentials shows"
    )
    revoke.set_defaults(handler=cmd_revoke_executor_credential)


def _add_node_filters(parser: ArgumentParser, action: str, done: str) -> None:
    parser.add_argument(
        "-q",
        "--queues",
        type=name_list,
        action="extend",
        metavar="Q1,Q2",
        help=f"{action} only jobs of these queues (default: all)",
    )
    add_priority_class_filter(parser, action)
    parser.add_argument("--reason", default="", help=f"recorded on the {done} jobs")
    add_output_option(parser)


def add_node_commands(tree: CommandTree) -> None:
    """``cancel|preempt node NODE -e EXECUTOR`` (Armada's shape) and the same as
    ``cancel|preempt on-node EXECUTOR NODE``."""
    for action, done in (("cancel", "cancelled"), ("preempt", "preempted")):
        help_text = (
            f"{action.capitalize()} every active job on a node of an executor, all or nothing."
        )
        node = tree.leaf(action, "node", help_text)
        node.add_argument("node", metavar="NODE")
        node.add_argument(
            "-e", "--executor", metavar="EXECUTOR", help="the executor the node belongs to"
        )
        _add_node_filters(node, action, done)
        node.set_defaults(
            handler=cmd_node_action, action=action, check=check_node, command_parser=node
        )
        on_node = tree.leaf(action, "on-node", help_text)
        on_node.add_argument("executor", metavar="EXECUTOR")
        on_node.add_argument("node", metavar="NODE")
        _add_node_filters(on_node, action, done)
        on_node.set_defaults(
            handler=cmd_node_action, action=action, check=check_node, command_parser=on_node
        )


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
        "--expires-in",
        metavar="DURATION",
        help="e.g. 30d or 12h (default: the server's auth.tokenLifetime, 90 days unless configured)",
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
    docs = tree.leaf(
        None,
        "docs",
        "Show armadactl's documentation on a topic, offline (no topic: the list of topics).",
    )
    docs.add_argument("topic", metavar="TOPIC", nargs="?", help=", ".join(TOPICS))
    docs.add_argument(
        "-p",
        "--to-stdout",
        action="store_true",
        help="accepted for Armada's scripts; the text always goes to standard output",
    )
    docs.set_defaults(handler=cmd_docs)
