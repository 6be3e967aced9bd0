"""The command line of ``armadactl``: the top-level commands and their help texts.

Each concept adds its own subcommands: ``parser_queues``, ``parser_resources`` (files and
retry policies), ``parser_jobs``, ``parser_admin`` (executors and their credentials, login),
``parser_reports``; ``parser_common`` holds what they share."""

from __future__ import annotations

import argparse

from armada.cli.exitcodes import PROG
from armada.cli.parser_admin import (
    add_config_commands,
    add_executor_commands,
    add_executor_credential_commands,
    add_node_commands,
    add_session_commands,
)
from armada.cli.parser_backtest import add_backtest_commands
from armada.cli.parser_common import (
    ArgumentParser,
    CommandTree,
    add_global_options,
    cursor,
    label_map,
    name_list,
    priority_factor,
)
from armada.cli.parser_grants import add_grant_commands
from armada.cli.parser_jobs import add_job_commands
from armada.cli.parser_queues import add_queue_commands
from armada.cli.parser_reports import add_report_commands
from armada.cli.parser_resources import add_file_groups, add_policy_commands

__all__ = [
    "ArgumentParser",
    "build_parser",
    "cursor",
    "label_map",
    "name_list",
    "priority_factor",
]

DESCRIPTION = "Command-line client of the Armada batch-job control plane."
EPILOG = """\
connection options (--url or --armadaUrl, --username, --password, --token, --config,
--context) go before the command or after it: `armadactl --url URL get queues` and
`armadactl get queues --url URL` are the same.

`armadactl login` asks for your password once and stores an API token in the config
file; every later command sends the token (`armadactl logout` revokes it).

Each setting is taken from, first match wins:
  1. the flag;
  2. the environment: ARMADA_URL, ARMADA_USERNAME, ARMADA_PASSWORD, ARMADA_TOKEN;
  3. the config file: --config PATH, else $ARMADACTL_CONFIG, else ~/.armadactl.yaml
     (YAML with the keys url, username, password, token; or Armada's currentContext and
     contexts: {NAME: {armadaUrl, basicAuth: {username, password}, ...}}, the context
     chosen by --context, else $ARMADA_CONTEXT, else currentContext);
  4. the default url http://127.0.0.1:8000, no credentials.
A token is sent as `Authorization: Token <token>`; otherwise a username and password are
sent with HTTP basic auth.

examples:
  armadactl create queue analytics --priority-factor 2 --owners alice,bob
  armadactl get queues -o yaml
  armadactl update queue analytics --retry-policies ml-training-retries
  armadactl cordon queue analytics
  armadactl grant queue analytics watch --user alice --group ml   # alice and ml may watch
  armadactl revoke queue analytics watch --user alice
  armadactl create retry-policy -f policy.yaml
  armadactl create -f resources.yaml --dry-run   # queues and policies, --- between them
  armadactl get retry-policy ml-training-retries > policy.yaml   # edit, then:
  armadactl update retry-policy -f policy.yaml
  armadactl backtest retry-policy -f draft.yaml --since 7d   # what the draft would change
  armadactl submit jobs.yaml --dry-run
  armadactl watch analytics nightly --exit-if-inactive
  armadactl get job 01jabc...          # the job and its runs (state, exit code, category)
  armadactl logs 01jrun...             # the log of one run
  armadactl get job-sets analytics     # job counts per state of each job set
  armadactl get scheduling 01jabc...   # why a job is still queued
  armadactl cancel queue analytics --state queued
  armadactl cancel queues -l team=ml -s queued,running --dry-run   # many queues at once
  armadactl cordon queues -l team=ml --inverse
  armadactl preempt node node-7 -e cluster-1 --reason "disk failing"
  armadactl get queue-report analytics -v; armadactl get scheduling-report
  armadactl get executors; armadactl cordon executor cluster-1 "kernel upgrade"
  armadactl cancel executor cluster-1 -a -q analytics   # every job of a queue on it
  armadactl delete executor cluster-1    # retire it: credentials revoked, out of listings
  armadactl create executor-credential cluster-1 > executor.key   # the key, shown once
  armadactl get executor-credentials cluster-1; armadactl revoke executor-credential 7
  armadactl config use-context prod; armadactl --context dev get queues
  armadactl docs connection              # short help on a topic, offline
"""


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_global_options(parser, suppress=False)
    tree = CommandTree(parser)
    add_file_groups(tree)
    tree.group("delete", "Delete a resource.")
    tree.group("cordon", "Stop new work: cordon queues or an executor; running jobs carry on.")
    tree.group("uncordon", "Uncordon queues or an executor: they take new work again.")
    tree.group("get", "Show resources.")
    tree.group("grant", "Let users and groups act on a queue.")
    tree.group(
        "revoke",
        "Take a queue's verbs from users and groups, or revoke a credential (its key stops "
        "working from its next use).",
    )
    tree.group("preempt", "Preempt running jobs.", dest="kind", metavar="KIND")
    tree.group("cancel", "Cancel jobs.", dest="kind", metavar="KIND")
    tree.group("reprioritize", "Change the priority of waiting jobs.", dest="kind", metavar="KIND")
    tree.group("backtest", "Try a retry policy on the failures already recorded.")
    tree.group(
        "config",
        "Work with the contexts of the config file (Armada's format).",
        dest="action",
        metavar="ACTION",
    )
    add_queue_commands(tree)
    add_grant_commands(tree)
    add_policy_commands(tree)
    add_job_commands(tree)
    add_executor_commands(tree)
    add_executor_credential_commands(tree)
    add_node_commands(tree)
    add_report_commands(tree)
    add_session_commands(tree)
    add_config_commands(tree)
    add_backtest_commands(tree)
    return parser
