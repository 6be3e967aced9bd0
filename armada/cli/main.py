"""``armadactl``: the command-line client of the Armada control plane.

``main(argv)`` parses, runs one command and returns the exit code: 0 on success, 1 when
the server or a local check rejects something (``Error: <message>`` on stderr, then one
``  <field>: <message>`` line per field error), 2 for a usage error, 130 on Ctrl-C.
It never lets a traceback out.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC
from typing import Any, NoReturn

from armada.cli.client import ApiError, ArmadaClient
from armada.cli.config import ConfigError, Settings, resolve_settings
from armada.cli.jobfile import JobFileError, check_job_file, describe_job_file, load_job_file
from armada.cli.output import (
    DOCUMENT_FORMATS,
    OUTPUT_FORMATS,
    format_error,
    render_data,
    render_policies,
    render_queue,
    render_queues,
)
from armada.cli.policyfile import load_policy_file
from armada.cli.watch import JobSetTracker, run_watch

PROG = "armadactl"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
GLOBAL_KEYS = ("url", "username", "password", "token", "config")

DESCRIPTION = "Command-line client of the Armada batch-job control plane."
EPILOG = """\
connection options (--url, --username, --password, --token, --config) go before the
command or after it: `armadactl --url URL get queues` and `armadactl get queues --url URL`
are the same.

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
  armadactl get retry-policy ml-training-retries > policy.yaml   # edit, then:
  armadactl update retry-policy -f policy.yaml
  armadactl submit jobs.yaml --dry-run
  armadactl watch analytics nightly --exit-if-inactive
  armadactl get job 01jabc...          # the job and its runs (state, exit code, category)
  armadactl logs 01jrun...             # the log of one run
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
        "create", help="Create a resource.", description="Create a resource."
    )
    create_what = create.add_subparsers(dest="resource", metavar="RESOURCE", required=True)
    cq = leaf(create_what, "queue", "Create a queue.")
    cq.add_argument("name", metavar="NAME", help="queue name (a lower-case RFC 1123 label)")
    _add_queue_fields(cq, update=False)
    cq.add_argument(
        "--cordoned", action="store_true", help="create it cordoned (no new jobs accepted)"
    )
    cq.set_defaults(handler=cmd_create_queue)
    crp = policy_leaf(create_what, "retry-policy", "Create a retry policy from a file.")
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


def settings_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> Settings:
    flags = {key: getattr(args, key, None) for key in ("url", "username", "password", "token")}
    return resolve_settings(flags, environ, config_path=getattr(args, "config", None))


def make_client(args: argparse.Namespace) -> ArmadaClient:
    return ArmadaClient(settings_from_args(args))


def out(text: str = "") -> None:
    print(text, file=sys.stdout, flush=True)


def cmd_create_queue(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"name": args.name}
    if args.priority_factor is not None:
        body["priorityFactor"] = args.priority_factor
    if args.owners is not None:
        body["owners"] = args.owners
    if args.group_owners is not None:
        body["groupOwners"] = args.group_owners
    if args.labels is not None:
        body["labels"] = args.labels
    if args.retry_policies is not None:
        body["retryPolicies"] = args.retry_policies
    if args.cordoned:
        body["cordoned"] = True
    queue = make_client(args).create_queue(body)
    out(f"Created queue {queue.get('name') or args.name}")
    return EXIT_OK


QUEUE_FIELDS = (
    ("priority_factor", "priorityFactor"),
    ("owners", "owners"),
    ("group_owners", "groupOwners"),
    ("labels", "labels"),
    ("retry_policies", "retryPolicies"),
    ("cordoned", "cordoned"),
)


def queue_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The PATCH body of ``update queue``: only the flags that were given."""
    return {
        key: getattr(args, dest) for dest, key in QUEUE_FIELDS if getattr(args, dest) is not None
    }


def check_update_queue(args: argparse.Namespace) -> str | None:
    if not queue_changes(args):
        return (
            "nothing to change; give at least one of --priority-factor, --owners, "
            "--group-owners, --labels, --retry-policies, --cordoned, --uncordoned"
        )
    return None


def cmd_update_queue(args: argparse.Namespace) -> int:
    queue = make_client(args).update_queue(args.name, queue_changes(args))
    out(f"Updated queue {queue.get('name') or args.name}")
    return EXIT_OK


def cmd_delete_queue(args: argparse.Namespace) -> int:
    make_client(args).delete_queue(args.name)
    out(f"Deleted queue {args.name}")
    return EXIT_OK


def cmd_cordon_queue(args: argparse.Namespace) -> int:
    queue = make_client(args).set_queue_cordoned(args.name, args.cordoned)
    out(f"{'Cordoned' if args.cordoned else 'Uncordoned'} queue {queue.get('name') or args.name}")
    return EXIT_OK


def cmd_get_queue(args: argparse.Namespace) -> int:
    out(render_queue(make_client(args).get_queue(args.name), args.output))
    return EXIT_OK


def cmd_get_queues(args: argparse.Namespace) -> int:
    queues = make_client(args).list_queues()
    if not queues and args.output == "table":
        print("No queues found.", file=sys.stderr)
        return EXIT_OK
    out(render_queues(queues, args.output))
    return EXIT_OK


def _policy_line(verb: str, policy: Mapping[str, Any], document: Mapping[str, Any]) -> str:
    name = policy.get("name") or document.get("name")
    version = policy.get("version")
    return f"{verb} retry policy {name}" + (f" (version {version})" if version is not None else "")


def cmd_create_retry_policy(args: argparse.Namespace) -> int:
    document = load_policy_file(args.file)
    policy = make_client(args).create_retry_policy(document)
    out(_policy_line("Created", policy, document))
    return EXIT_OK


def cmd_update_retry_policy(args: argparse.Namespace) -> int:
    document = load_policy_file(args.file, need_name=True)
    policy = make_client(args).update_retry_policy(document["name"], document)
    out(_policy_line("Updated", policy, document))
    return EXIT_OK


def cmd_get_retry_policy(args: argparse.Namespace) -> int:
    out(render_data(make_client(args).get_retry_policy(args.name), args.output))
    return EXIT_OK


def cmd_get_retry_policies(args: argparse.Namespace) -> int:
    policies = make_client(args).list_retry_policies()
    if not policies and args.output == "table":
        print("No retry policies found.", file=sys.stderr)
        return EXIT_OK
    out(render_policies(policies, args.output))
    return EXIT_OK


def cmd_delete_retry_policy(args: argparse.Namespace) -> int:
    make_client(args).delete_retry_policy(args.name)
    out(f"Deleted retry policy {args.name}")
    return EXIT_OK


def cmd_get_job(args: argparse.Namespace) -> int:
    out(render_data(make_client(args).get_job(args.job_id), args.output))
    return EXIT_OK


def cmd_preempt_job(args: argparse.Namespace) -> int:
    client = make_client(args)
    job = client.get_job(args.job_id)
    if job.get("queue") != args.queue or job.get("jobSetId") != args.job_set:
        raise ApiError(f"job {args.job_id} is not in queue {args.queue}, job set {args.job_set}")
    client.preempt_job(args.job_id, args.reason)
    out(f"Requested preemption of job {args.job_id}")
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    ids = [args.job_id] if args.job_id else None
    cancelled = make_client(args).cancel(args.queue, args.job_set, ids)
    out(f"Cancelling {len(cancelled)} job(s)")
    return EXIT_OK


def cmd_reprioritize(args: argparse.Namespace) -> int:
    ids = [args.job_id] if args.job_id else None
    changed = make_client(args).reprioritize(args.queue, args.job_set, args.priority, ids)
    out(f"Reprioritized {len(changed)} job(s) to priority {args.priority}")
    return EXIT_OK


def cmd_logs(args: argparse.Namespace) -> int:
    """The log text goes to stdout untouched (no newline added); notes go to stderr."""
    entry = make_client(args).get_run_log(args.run_id)
    text = entry.get("log") or ""
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        print(f"Run {args.run_id} has no log.", file=sys.stderr)
    if entry.get("truncated"):
        print("Note: the server truncated this log; it is not the whole log.", file=sys.stderr)
    return EXIT_OK


def _checked_job_file(path: str) -> dict[str, Any]:
    data = load_job_file(path)
    errors = check_job_file(data)
    if errors:
        raise JobFileError(f"job file {'(stdin)' if path == '-' else path} is not valid", errors)
    return dict(data)


def cmd_submit(args: argparse.Namespace) -> int:
    data = _checked_job_file(args.file)
    if args.dry_run:
        for line in describe_job_file(data):
            out(line)
        out("Dry run: nothing was submitted.")
        return EXIT_OK
    answer = make_client(args).submit_jobs(data)
    job_set = answer.get("jobSetId") or data["jobSetId"]
    for job_id in answer["jobIds"]:
        out(f"Submitted job id {job_id} (job set {job_set})")
    return EXIT_OK


class _Cursor:
    """Remembers the id of the last event passed through, for a resume hint on Ctrl-C."""

    def __init__(self, start: int | None) -> None:
        self.last = start

    def follow(self, events: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for event in events:
            if isinstance(event.get("id"), int):
                self.last = event["id"]
            yield event


def cmd_watch(args: argparse.Namespace) -> int:
    client = make_client(args)

    def on_reconnect(reason: str, at: int | None) -> None:
        where = f"after event {at}" if at is not None else "from the start"
        print(f"Connection lost ({reason}); reconnecting {where}...", file=sys.stderr, flush=True)

    position = _Cursor(args.from_)
    tracker = JobSetTracker()
    events = client.watch_events(
        args.queue, args.job_set, cursor=args.from_, on_reconnect=on_reconnect
    )
    try:
        return run_watch(
            position.follow(events),
            sys.stdout,
            exit_if_inactive=args.exit_if_inactive,
            tz=UTC if args.utc else None,
            tracker=tracker,
        )
    except KeyboardInterrupt:
        if tracker.states:
            out(tracker.summary())
        resume = f"; resume with --from {position.last}" if position.last is not None else ""
        print(f"Stopped{resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        events.close()


# -- entry point ------------------------------------------------------------------------


def _report(message: str, errors: Sequence[tuple[str, str]] = ()) -> None:
    print(format_error(message, errors), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``armadactl`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
        check: Callable[[argparse.Namespace], str | None] | None = getattr(args, "check", None)
        problem = check(args) if check is not None else None
        if problem:
            args.command_parser.error(problem)
    except SystemExit as exc:  # --help, or a usage error already printed
        return (
            exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_USAGE)
        )
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except ApiError as exc:
        _report(exc.message, exc.errors)
    except JobFileError as exc:
        _report(exc.message, exc.errors)
    except ConfigError as exc:
        _report(str(exc))
    except KeyboardInterrupt:
        print("Interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`armadactl get queues | head`): stop quietly.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
