"""``armadactl`` commands that explain scheduling: ``get scheduling JOB_ID`` (ours), and
Armada's ``get queue-report QUEUE``, ``get job-report JOB_ID``, ``get scheduling-report``."""

from __future__ import annotations

import argparse

from armada.cli.parser_common import CommandTree, add_output_option, lazy

(cmd_get_scheduling,) = lazy("commands", "cmd_get_scheduling")
cmd_job_report, cmd_queue_report, cmd_scheduling_report = lazy(
    "reports", "cmd_job_report", "cmd_queue_report", "cmd_scheduling_report"
)

MAX_VERBOSITY = 3


def _verbosity(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="more detail; repeat (-vv) for more: job ids per reason, the latest rounds",
    )
    parser.add_argument("--pool", metavar="POOL", help="one pool's shares (default: all pools)")


def _check_report(args: argparse.Namespace) -> str | None:
    if args.verbose > MAX_VERBOSITY:
        return f"argument -v/--verbose: at most {MAX_VERBOSITY} times (-vvv)"
    if getattr(args, "queue", None) is not None and not args.queue.strip():
        return "argument QUEUE: cannot provide an empty queue name"
    if getattr(args, "job_id", None) is not None and not args.job_id.strip():
        return "argument JOB_ID: cannot provide an empty job id"
    return None


def add_report_commands(tree: CommandTree) -> None:
    scheduling = tree.leaf(
        "get", "scheduling", "Show why a job is still queued (its scheduling record)."
    )
    scheduling.add_argument("job_id", metavar="JOB_ID")
    add_output_option(scheduling)
    scheduling.set_defaults(handler=cmd_get_scheduling)

    queue = tree.leaf(
        "get",
        "queue-report",
        "A queue's scheduling report: its shares, its jobs per state, why its queued jobs "
        "wait, the latest round.",
    )
    queue.add_argument("queue", metavar="QUEUE")
    _verbosity(queue)
    add_output_option(queue)
    queue.set_defaults(handler=cmd_queue_report, check=_check_report, command_parser=queue)

    job = tree.leaf(
        "get",
        "job-report",
        "A job's scheduling report: its state, why it waits, where its latest run went.",
    )
    job.add_argument("job_id", metavar="JOB_ID")
    add_output_option(job)
    job.set_defaults(handler=cmd_job_report, verbose=0, check=_check_report, command_parser=job)

    overall = tree.leaf(
        "get",
        "scheduling-report",
        "The scheduling report: the latest rounds, the shares of the queues you may watch, "
        "why queued jobs wait.",
    )
    _verbosity(overall)
    which = overall.add_mutually_exclusive_group()
    which.add_argument(
        "--queue", metavar="QUEUE", help="deprecated (as in Armada): use get queue-report"
    )
    which.add_argument(
        "--job-id", metavar="JOB_ID", help="deprecated (as in Armada): use get job-report"
    )
    add_output_option(overall)
    overall.set_defaults(handler=cmd_scheduling_report, check=_check_report, command_parser=overall)
