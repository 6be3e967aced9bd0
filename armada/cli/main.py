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
from armada.cli.output import OUTPUT_FORMATS, format_error, render_queue, render_queues
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
  armadactl submit jobs.yaml --dry-run
  armadactl watch analytics nightly --exit-if-inactive
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


def _add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=OUTPUT_FORMATS,
        default="table",
        help="table (default), yaml or json",
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

    def leaf(sub: Any, name: str, help_text: str) -> ArgumentParser:
        p: ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
        _add_global_options(p, suppress=True)
        return p

    # create queue
    create = commands.add_parser(
        "create", help="Create a resource.", description="Create a resource."
    )
    create_what = create.add_subparsers(dest="resource", metavar="RESOURCE", required=True)
    cq = leaf(create_what, "queue", "Create a queue.")
    cq.add_argument("name", metavar="NAME", help="queue name (a lower-case RFC 1123 label)")
    cq.add_argument(
        "--priority-factor",
        type=priority_factor,
        metavar="F",
        help="at least 1.0; higher means a smaller fair share",
    )
    cq.add_argument("--owners", type=name_list, metavar="A,B", help="users who own the queue")
    cq.add_argument(
        "--group-owners", type=name_list, metavar="G,H", help="groups who own the queue"
    )
    cq.add_argument("--labels", type=label_map, metavar="K=V,K2=V2", help="labels of the queue")
    cq.add_argument(
        "--retry-policies", type=name_list, metavar="P1,P2", help="retry policies, in order"
    )
    cq.add_argument(
        "--cordoned", action="store_true", help="create it cordoned (no new jobs accepted)"
    )
    cq.set_defaults(handler=cmd_create_queue)

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
