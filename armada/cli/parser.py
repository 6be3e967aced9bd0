"""The command line of ``armadactl``: commands, arguments and their help texts."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from armada.cli.commands import (
    EXIT_USAGE,
    PROG,
    check_update_queue,
    cmd_cancel,
    cmd_cancel_queue,
    cmd_cordon_executor,
    cmd_cordon_queue,
    cmd_create_from_file,
    cmd_create_queue,
    cmd_create_retry_policy,
    cmd_delete_queue,
    cmd_delete_retry_policy,
    cmd_get_executor,
    cmd_get_executors,
    cmd_get_job,
    cmd_get_job_sets,
    cmd_get_queue,
    cmd_get_queues,
    cmd_get_retry_policies,
    cmd_get_retry_policy,
    cmd_get_scheduling,
    cmd_logs,
    cmd_preempt_job,
    cmd_reprioritize,
    cmd_submit,
    cmd_update_queue,
    cmd_update_retry_policy,
    cmd_watch,
)
from armada.cli.login import cmd_login, cmd_logout
from armada.cli.output import (
    DOCUMENT_FORMATS,
    OUTPUT_FORMATS,
)

DESCRIPTION = "Command-line client of the Armada batch-job control plane."
EPILOG = """\
connection options (--url, --username, --password, --token, --config) go before the
command or after it: `armadactl --url URL get queues` and `armadactl get queues --url URL`
are the same.

`armadactl login` asks for your password once and stores an API token in the config
file; every later command sends the token (`armadactl logout` revokes it).

Each setting is taken from, first match wins:
  1. the flag;
  2. the environment: ARMADA_URL, ARMADA_USERNAME, ARMADA_PASSWORD, ARMADA_TOKEN;
  3. the config file: --config PATH, else $ARMADACTL_CONFIG, else ~/.armadactl.yaml
     (YAML with the keys url, username, password, token);
  4. the default url http://127.0.0.1:8000, no credentials.
A token is sent as `Authorization: Token <token>`; otherwise a username and password are
sent with HTTP basic auth.

examples:
  armadactl create queue analytics --priority-factor 2 --owners alice,bob
  armadactl get queues -o yaml
  armadactl update queue analytics --retry-policies ml-training-retries
  armadactl cordon queue analytics
  armadactl create retry-policy -f policy.yaml
  armadactl create -f resources.yaml --dry-run   # queues and policies, --- between them
  armadactl get retry-policy ml-training-retries > policy.yaml   # edit, then:
  armadactl update retry-policy -f policy.yaml
  armadactl submit jobs.yaml --dry-run
  armadactl watch analytics nightly --exit-if-inactive
  armadactl get job 01jabc...          # the job and its runs (state, exit code, category)
  armadactl logs 01jrun...             # the log of one run
  armadactl get job-sets analytics     # job counts per state of each job set
  armadactl get scheduling 01jabc...   # why a job is still queued
  armadactl cancel queue analytics --state queued
  armadactl get executors; armadactl cordon executor cluster-1
"""

RESOURCE_FILE_HELP = """FILE is YAML (several documents separated by ---) or JSON; each document has a
kind, Queue or RetryPolicy:

  apiVersion: armadaproject.io/v1beta1
  kind: Queue
  name: analytics
  priorityFactor: 2
  owners: [alice]
  retryPolicies: [ml-training-retries]
  ---
  apiVersion: armadaproject.io/v1beta1
  kind: RetryPolicy
  name: ml-training-retries
  retryLimit: 3
  defaultAction: Fail

The documents are created in order; the first one the server refuses stops the command
(exit 1). With --dry-run the server checks each one and nothing is created.
"""

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


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the project's error format: usage, then ``Error: <message>``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"Error: {message}\n")


# -- argument types ---------------------------------------------------------------------


def name_list(text: str) -> list[str]:
    """``a,b , c`` -> ``["a", "b", "c"]``; blanks between commas are dropped."""
    return [part.strip() for part in text.split(",") if part.strip()]


def label_map(text: str) -> dict[str, str]:
    """``k=v,k2=v2`` -> ``{"k": "v", "k2": "v2"}``; a key must be given once, with ``=``."""
    labels: dict[str, str] = {}
    for part in name_list(text):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"label {part!r} must look like key=value")
        if key in labels:
            raise argparse.ArgumentTypeError(f"label {key!r} is given twice")
        labels[key] = value.strip()
    return labels


def priority_factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def cursor(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an event id (a whole number)") from None
    if value < 0:
        raise argparse.ArgumentTypeError("an event id cannot be negative")
    return value


# -- the parser -------------------------------------------------------------------------


def _add_global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """The connection options; on subcommands they default to SUPPRESS so that a value
    given before the command is not overwritten by the subcommand's default."""
    default: Any = argparse.SUPPRESS if suppress else None
    group = parser.add_argument_group("connection options")
    group.add_argument("--url", default=default, help="server URL (default http://127.0.0.1:8000)")
    group.add_argument("--username", default=default, help="user for HTTP basic auth")
    group.add_argument("--password", default=default, help="password for HTTP basic auth")
    group.add_argument("--token", default=default, help="API token (Authorization: Token ...)")
    group.add_argument(
        "--config", default=default, metavar="PATH", help="config file (default ~/.armadactl.yaml)"
    )


def _format_choices(formats: Sequence[str]) -> str:
    """``table (default), yaml or json``; ``yaml (default) or json``."""
    first, *rest = formats
    if not rest:
        return f"{first} (default)"
    if len(rest) == 1:
        return f"{first} (default) or {rest[0]}"
    return f"{first} (default), {', '.join(rest[:-1])} or {rest[-1]}"


def _add_output_option(
    parser: argparse.ArgumentParser, formats: Sequence[str] = OUTPUT_FORMATS
) -> None:
    """``-o FORMAT``; the first of ``formats`` is the default."""
    parser.add_argument(
        "-o",
        "--output",
        choices=formats,
        default=formats[0],
        help=_format_choices(formats),
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


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_global_options(parser, suppress=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def leaf(sub: Any, name: str, help_text: str, **extra: Any) -> ArgumentParser:
        p: ArgumentParser = sub.add_parser(name, help=help_text, description=help_text, **extra)
        _add_global_options(p, suppress=True)
        return p

    def policy_leaf(sub: Any, name: str, help_text: str) -> ArgumentParser:
        p = leaf(
            sub,
            name,
            help_text,
            epilog=POLICY_FILE_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument(
            "-f",
            "--file",
            required=True,
            metavar="FILE",
            help="the policy document, YAML or JSON; - for standard input",
        )
        return p

    # create queue
    create = commands.add_parser(
        "create",
        help="Create a resource, or every resource in a file (-f FILE).",
        description="Create a resource, or every resource in a file (-f FILE).",
        epilog=RESOURCE_FILE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_global_options(create, suppress=True)
    create.add_argument(
        "-f",
        "--file",
        metavar="FILE",
        help="queues and retry policies to create (kind: Queue | RetryPolicy); - for stdin",
    )
    create.add_argument(
        "--dry-run",
        action="store_true",
        help="have the server check everything; create nothing",
    )
    create.set_defaults(handler=cmd_create_from_file)
    create_what = create.add_subparsers(dest="resource", metavar="RESOURCE", required=False)
    cq = leaf(create_what, "queue", "Create a queue.")
    cq.add_argument("name", metavar="NAME", help="queue name (a lower-case RFC 1123 label)")
    _add_queue_fields(cq, update=False)
    cq.add_argument(
        "--cordoned", action="store_true", help="create it cordoned (no new jobs accepted)"
    )
    cq.add_argument(
        "--dry-run", action="store_true", help="have the server check it; create nothing"
    )
    cq.set_defaults(handler=cmd_create_queue)
    crp = policy_leaf(create_what, "retry-policy", "Create a retry policy from a file.")
    crp.add_argument(
        "--dry-run", action="store_true", help="have the server check it; create nothing"
    )
    crp.set_defaults(handler=cmd_create_retry_policy)

    # update queue / update retry-policy
    update = commands.add_parser(
        "update", help="Change a resource.", description="Change a resource."
    )
    update_what = update.add_subparsers(dest="resource", metavar="RESOURCE", required=True)
    uq = leaf(
        update_what,
        "queue",
        "Change a queue: only the fields given are sent (the rest stay as they are).",
    )
    uq.add_argument("name", metavar="NAME")
    _add_queue_fields(uq, update=True)
    cordon_flags = uq.add_mutually_exclusive_group()
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
    uq.set_defaults(handler=cmd_update_queue, check=check_update_queue, command_parser=uq)
    urp = policy_leaf(
        update_what,
        "retry-policy",
        "Replace a retry policy with the one in a file (the policy named in the file).",
    )
    urp.set_defaults(handler=cmd_update_retry_policy)

    # delete queue / delete retry-policy
    delete = commands.add_parser(
        "delete", help="Delete a resource.", description="Delete a resource."
    )
    delete_what = delete.add_subparsers(dest="resource", metavar="RESOURCE", required=True)
    dq = leaf(delete_what, "queue", "Delete a queue (refused while it has unfinished jobs).")
    dq.add_argument("name", metavar="NAME")
    dq.set_defaults(handler=cmd_delete_queue)
    drp = leaf(
        delete_what,
        "retry-policy",
        "Delete a retry policy (refused while a queue names it: detach it first).",
    )
    drp.add_argument("name", metavar="NAME")
    drp.set_defaults(handler=cmd_delete_retry_policy)

    # cordon queue / uncordon queue
    for verb, cordoned, help_text in (
        (
            "cordon",
            True,
            "Cordon a queue: no new jobs are accepted or scheduled; running jobs carry on.",
        ),
        ("uncordon", False, "Uncordon a queue: it accepts new jobs again."),
    ):
        verb_parser = commands.add_parser(verb, help=help_text, description=help_text)
        verb_what = verb_parser.add_subparsers(dest="resource", metavar="RESOURCE", required=True)
        vq = leaf(verb_what, "queue", help_text)
        vq.add_argument("name", metavar="NAME")
        vq.set_defaults(handler=cmd_cordon_queue, cordoned=cordoned)
        executor_help = (
            "Cordon an executor: it gets no new leases; its running jobs carry on."
            if cordoned
            else "Uncordon an executor: it gets new leases again."
        )
        ve = leaf(verb_what, "executor", executor_help)
        ve.add_argument("executor_id", metavar="ID")
        ve.set_defaults(handler=cmd_cordon_executor, cordoned=cordoned)

    # get queue / get queues
    get = commands.add_parser("get", help="Show resources.", description="Show resources.")
    get_what = get.add_subparsers(dest="resource", metavar="RESOURCE", required=True)
    gq = leaf(get_what, "queue", "Show one queue.")
    gq.add_argument("name", metavar="NAME")
    _add_output_option(gq)
    gq.set_defaults(handler=cmd_get_queue)
    gqs = leaf(get_what, "queues", "List the queues.")
    _add_output_option(gqs)
    gqs.set_defaults(handler=cmd_get_queues)
    grp = leaf(get_what, "retry-policy", "Show one retry policy as a document.")
    grp.add_argument("name", metavar="NAME")
    _add_output_option(grp, DOCUMENT_FORMATS)
    grp.set_defaults(handler=cmd_get_retry_policy)
    grps = leaf(get_what, "retry-policies", "List the retry policies.")
    _add_output_option(grps)
    grps.set_defaults(handler=cmd_get_retry_policies)
    gj = leaf(get_what, "job", "Show one job with its runs, as the server returns it.")
    gj.add_argument("job_id", metavar="JOB_ID")
    _add_output_option(gj, DOCUMENT_FORMATS)
    gj.set_defaults(handler=cmd_get_job)
    gjs = leaf(get_what, "job-sets", "List the job sets of a queue with job counts per state.")
    gjs.add_argument("queue", metavar="QUEUE")
    _add_output_option(gjs)
    gjs.set_defaults(handler=cmd_get_job_sets)
    ges = leaf(get_what, "executors", "List the executors.")
    _add_output_option(ges)
    ges.set_defaults(handler=cmd_get_executors)
    ge = leaf(get_what, "executor", "Show one executor with its nodes.")
    ge.add_argument("executor_id", metavar="ID")
    _add_output_option(ge)
    ge.set_defaults(handler=cmd_get_executor)
    gs = leaf(get_what, "scheduling", "Show why a job is still queued (its scheduling record).")
    gs.add_argument("job_id", metavar="JOB_ID")
    _add_output_option(gs)
    gs.set_defaults(handler=cmd_get_scheduling)

    # submit
    submit = leaf(commands, "submit", "Submit the jobs of a job file (YAML or JSON).")
    submit.add_argument(
        "file", metavar="FILE", help="job file: {queue, jobSetId, jobs: [...]}; - for stdin"
    )
    submit.add_argument(
        "--dry-run",
        action="store_true",
        help="check the file and show what would be submitted; send nothing",
    )
    submit.set_defaults(handler=cmd_submit)

    # watch
    watch = leaf(commands, "watch", "Print the events of a job set as they happen.")
    watch.add_argument("queue", metavar="QUEUE")
    watch.add_argument("job_set", metavar="JOBSET")
    watch.add_argument(
        "--exit-if-inactive",
        action="store_true",
        help="exit 0 once every job seen is finished (succeeded, cancelled, preempted, or failed for good)",
    )
    watch.add_argument(
        "--from",
        dest="from_",
        type=cursor,
        metavar="CURSOR",
        help="start after this event id (exclusive)",
    )
    watch.add_argument(
        "--utc", action="store_true", help="print times in UTC rather than local time"
    )
    watch.set_defaults(handler=cmd_watch)

    # logs
    logs = leaf(commands, "logs", "Print the log of a job run, as it is.")
    logs.add_argument("run_id", metavar="RUN_ID", help="a run id (see `armadactl get job`)")
    logs.set_defaults(handler=cmd_logs)

    # login, logout
    login = leaf(
        commands,
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
    logout = leaf(commands, "logout", "Revoke the stored token and remove it from the config file.")
    logout.set_defaults(handler=cmd_logout)

    # preempt
    preempt = commands.add_parser(
        "preempt", help="Preempt running jobs.", description="Preempt running jobs."
    )
    preempt_kinds = preempt.add_subparsers(dest="kind", metavar="KIND", required=True)
    pj = leaf(
        preempt_kinds,
        "job",
        "Stop a running job for other work; it ends preempted and is not retried.",
    )
    pj.add_argument("queue", metavar="QUEUE")
    pj.add_argument("job_set", metavar="JOBSET")
    pj.add_argument("job_id", metavar="JOB_ID")
    pj.add_argument("reason", metavar="REASON", nargs="?", default="")
    pj.set_defaults(handler=cmd_preempt_job)

    # cancel
    cancel = commands.add_parser("cancel", help="Cancel jobs.", description="Cancel jobs.")
    cancel_kinds = cancel.add_subparsers(dest="kind", metavar="KIND", required=True)
    cj = leaf(cancel_kinds, "job", "Cancel one job (a running job's pod is stopped first).")
    cj.add_argument("queue", metavar="QUEUE")
    cj.add_argument("job_set", metavar="JOBSET")
    cj.add_argument("job_id", metavar="JOB_ID")
    cj.set_defaults(handler=cmd_cancel)
    cs = leaf(cancel_kinds, "job-set", "Cancel every unfinished job of a job set.")
    cs.add_argument("queue", metavar="QUEUE")
    cs.add_argument("job_set", metavar="JOBSET")
    cs.set_defaults(handler=cmd_cancel, job_id=None)
    cqs = leaf(
        cancel_kinds,
        "queue",
        "Cancel every job of a queue (any job set) in the given states, all or nothing.",
    )
    cqs.add_argument("queue", metavar="QUEUE")
    cqs.add_argument(
        "--state",
        dest="states",
        action="append",
        required=True,
        choices=("queued", "leased", "pending", "running"),
        help="a state to cancel (repeat for several)",
    )
    cqs.add_argument("--reason", default="", help="recorded on the cancelled jobs")
    cqs.set_defaults(handler=cmd_cancel_queue)

    # reprioritize
    repri = commands.add_parser(
        "reprioritize",
        help="Change the priority of waiting jobs.",
        description="Change the priority of waiting jobs.",
    )
    repri_kinds = repri.add_subparsers(dest="kind", metavar="KIND", required=True)
    rj = leaf(
        repri_kinds, "job", "Set the priority of one job (lower goes first within its queue)."
    )
    rj.add_argument("queue", metavar="QUEUE")
    rj.add_argument("job_set", metavar="JOBSET")
    rj.add_argument("job_id", metavar="JOB_ID")
    rj.add_argument("priority", metavar="PRIORITY", type=int)
    rj.set_defaults(handler=cmd_reprioritize)
    rs = leaf(repri_kinds, "job-set", "Set the priority of every unfinished job of a job set.")
    rs.add_argument("queue", metavar="QUEUE")
    rs.add_argument("job_set", metavar="JOBSET")
    rs.add_argument("priority", metavar="PRIORITY", type=int)
    rs.set_defaults(handler=cmd_reprioritize, job_id=None)
    return parser


# -- commands ---------------------------------------------------------------------------
