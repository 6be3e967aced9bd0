"""``armadactl`` commands for resource documents: ``create -f FILE`` and ``update -f FILE``
(queues and retry policies in one file) and the retry-policy commands."""

from __future__ import annotations

import argparse

from armada.cli.output import DOCUMENT_FORMATS
from armada.cli.parser_common import ArgumentParser, CommandTree, add_output_option, lazy

cmd_create_from_file, cmd_update_from_file = lazy(
    "file_commands", "cmd_create_from_file", "cmd_update_from_file"
)
(
    cmd_create_retry_policy,
    cmd_delete_retry_policy,
    cmd_get_retry_policies,
    cmd_get_retry_policy,
    cmd_update_retry_policy,
) = lazy(
    "commands",
    "cmd_create_retry_policy",
    "cmd_delete_retry_policy",
    "cmd_get_retry_policies",
    "cmd_get_retry_policy",
    "cmd_update_retry_policy",
)

RESOURCE_FILE_HELP = """FILE is YAML (several documents separated by ---) or JSON; each document has a
kind, Queue or RetryPolicy:

  apiVersion: armadaproject.io/v1beta1
  kind: Queue
  name: analytics
  priorityFactor: 2
  owners: [alice]
  retryPolicies: [ml-training-retries]
  resourceLimitsByPriorityClassName:
    armada-preemptible:
      maximumResourceFraction: {cpu: 0.3, memory: 0.3}
      maximumResourceFractionByPool:
        gpu-pool: {maximumResourceFraction: {cpu: 0.1}}
  ---
  apiVersion: armadaproject.io/v1beta1
  kind: RetryPolicy
  name: ml-training-retries
  retryLimit: 3
  defaultAction: Fail

A queue's permissions (whole; `armadactl grant|revoke queue` changes one user's or
group's) and resourceLimitsByPriorityClassName (per priority class, the largest fraction
of a pool's resources its jobs may hold; configured classes and pools only) are set in a
file.
"""

CREATE_FILE_HELP = (
    RESOURCE_FILE_HELP
    + """
The documents are created in order; the first one the server refuses stops the command
(exit 1). With --dry-run the server checks each one and nothing is created.
"""
)

UPDATE_FILE_HELP = (
    RESOURCE_FILE_HELP
    + """
The documents are sent in order; the first one the server refuses stops the command
(exit 1). A queue gets the fields its document has, the others stay as they are (as with
update queue); a retry policy is replaced by its document (as with update retry-policy).
"""
)

POLICY_FILE_HELP = """FILE is YAML or JSON (- for standard input) holding one retry policy:

  apiVersion: armadaproject.io/v1beta1
  kind: RetryPolicy
  name: ml-training-retries
  retryLimit: 3
  defaultAction: Fail
  rules:
    - action: Retry
      onCategory: oom
      mutate: {resources: {memory: {factor: 1.5}}}

Locally the file must be one mapping whose kind, if given, is RetryPolicy; the server
checks the rest. The fields the server adds (version, createdAt, updatedAt, updatedBy)
are not sent, so the output of `armadactl get retry-policy NAME` can be edited and sent
back with `armadactl update retry-policy -f FILE`.
"""


def add_file_groups(tree: CommandTree) -> None:
    """The ``create`` and ``update`` groups, each of which also takes ``-f FILE`` itself
    (every document of a resource file; ``create`` with ``--dry-run``)."""
    for verb, summary, change, epilog, handler in (
        ("create", "Create a resource", "create", CREATE_FILE_HELP, cmd_create_from_file),
        ("update", "Change a resource", "change", UPDATE_FILE_HELP, cmd_update_from_file),
    ):
        group = tree.group(
            verb,
            f"{summary}, or every resource in a file (-f FILE).",
            required=False,
            global_options=True,
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        group.add_argument(
            "-f",
            "--file",
            metavar="FILE",
            help=f"queues and retry policies to {change} (kind: Queue | RetryPolicy); - for stdin",
        )
        if verb == "create":
            group.add_argument(
                "--dry-run",
                action="store_true",
                help="have the server check everything; create nothing",
            )
        group.set_defaults(handler=handler)


def _policy_leaf(tree: CommandTree, group: str, help_text: str) -> ArgumentParser:
    parser = tree.leaf(
        group,
        "retry-policy",
        help_text,
        epilog=POLICY_FILE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-f",
        "--file",
        required=True,
        metavar="FILE",
        help="the policy document, YAML or JSON; - for standard input",
    )
    return parser


def add_policy_commands(tree: CommandTree) -> None:
    """``create|update|delete|get retry-policy``, ``get retry-policies``."""
    create = _policy_leaf(tree, "create", "Create a retry policy from a file.")
    create.add_argument(
        "--dry-run", action="store_true", help="have the server check it; create nothing"
    )
    create.set_defaults(handler=cmd_create_retry_policy)

    update = _policy_leaf(
        tree,
        "update",
        "Replace a retry policy with the one in a file (the policy named in the file).",
    )
    update.set_defaults(handler=cmd_update_retry_policy)

    delete = tree.leaf(
        "delete",
        "retry-policy",
        "Delete a retry policy (refused while a queue names it: detach it first).",
    )
    delete.add_argument("name", metavar="NAME")
    delete.set_defaults(handler=cmd_delete_retry_policy)

    get = tree.leaf("get", "retry-policy", "Show one retry policy as a document.")
    get.add_argument("name", metavar="NAME")
    add_output_option(get, DOCUMENT_FORMATS)
    get.set_defaults(handler=cmd_get_retry_policy)

    get_all = tree.leaf("get", "retry-policies", "List the retry policies.")
    add_output_option(get_all)
    get_all.set_defaults(handler=cmd_get_retry_policies)
