"""``armadactl`` commands for jobs: submit, watch, logs, get job / job-sets, cancel,
preempt and reprioritize."""

from __future__ import annotations

import argparse

from armada.cli.output import DOCUMENT_FORMATS
from armada.cli.parser_common import CommandTree, add_output_option, cursor, lazy

(
    cmd_cancel,
    cmd_get_job,
    cmd_get_job_sets,
    cmd_logs,
    cmd_preempt_job,
    cmd_reprioritize,
    cmd_submit,
    cmd_watch,
) = lazy(
    "commands",
    "cmd_cancel",
    "cmd_get_job",
    "cmd_get_job_sets",
    "cmd_logs",
    "cmd_preempt_job",
    "cmd_reprioritize",
    "cmd_submit",
    "cmd_watch",
)


def add_job_commands(tree: CommandTree) -> None:
    _add_reads(tree)
    _add_submit_watch_logs(tree)
    _add_actions(tree)


def _add_reads(tree: CommandTree) -> None:
    job = tree.leaf("get", "job", "Show one job with its runs, as the server returns it.")
    job.add_argument("job_id", metavar="JOB_ID")
    add_output_option(job, DOCUMENT_FORMATS)
    job.set_defaults(handler=cmd_get_job)
    job_sets = tree.leaf(
        "get", "job-sets", "List the job sets of a queue with job counts per state."
    )
    job_sets.add_argument("queue", metavar="QUEUE")
    add_output_option(job_sets)
    job_sets.set_defaults(handler=cmd_get_job_sets)


def _add_submit_watch_logs(tree: CommandTree) -> None:
    submit = tree.leaf(None, "submit", "Submit the jobs of a job file (YAML or JSON).")
    submit.add_argument(
        "file", metavar="FILE", help="job file: {queue, jobSetId, jobs: [...]}; - for stdin"
    )
    submit.add_argument(
        "--dry-run",
        action="store_true",
        help="check the file and show what would be submitted; send nothing",
    )
    submit.set_defaults(handler=cmd_submit)

    watch = tree.leaf(None, "watch", "Print the events of a job set as they happen.")
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
    watch.add_argument(
        "--raw",
        action="store_true",
        help="print each event as the server sends it, one JSON object a line (Armada's flag)",
    )
    for flag in ("--force-new-events", "--force-legacy-events"):
        # Armada's debugging switches between its event stores: accepted, nothing to switch.
        watch.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    watch.set_defaults(handler=cmd_watch)

    logs = tree.leaf(None, "logs", "Print the log of a job run, as it is.")
    logs.add_argument("run_id", metavar="RUN_ID", help="a run id (see `armadactl get job`)")
    logs.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep printing new lines as the run writes them (read about once a second), "
        "until the run ends",
    )
    logs.set_defaults(handler=cmd_logs)


def _add_actions(tree: CommandTree) -> None:
    preempt = tree.leaf(
        "preempt",
        "job",
        "Stop a running job for other work; it ends preempted and is not retried.",
    )
    preempt.add_argument("queue", metavar="QUEUE")
    preempt.add_argument("job_set", metavar="JOBSET")
    preempt.add_argument("job_id", metavar="JOB_ID")
    preempt.add_argument("reason", metavar="REASON", nargs="?", default="")
    preempt.set_defaults(handler=cmd_preempt_job)

    cancel_job = tree.leaf(
        "cancel", "job", "Cancel one job (a running job's pod is stopped first)."
    )
    cancel_job.add_argument("queue", metavar="QUEUE")
    cancel_job.add_argument("job_set", metavar="JOBSET")
    cancel_job.add_argument("job_id", metavar="JOB_ID")
    cancel_job.set_defaults(handler=cmd_cancel)
    cancel_set = tree.leaf("cancel", "job-set", "Cancel every unfinished job of a job set.")
    cancel_set.add_argument("queue", metavar="QUEUE")
    cancel_set.add_argument("job_set", metavar="JOBSET")
    cancel_set.set_defaults(handler=cmd_cancel, job_id=None)

    repri_job = tree.leaf(
        "reprioritize", "job", "Set the priority of one job (lower goes first within its queue)."
    )
    repri_job.add_argument("queue", metavar="QUEUE")
    repri_job.add_argument("job_set", metavar="JOBSET")
    repri_job.add_argument("job_id", metavar="JOB_ID")
    repri_job.add_argument("priority", metavar="PRIORITY", type=int)
    repri_job.set_defaults(handler=cmd_reprioritize)
    repri_set = tree.leaf(
        "reprioritize", "job-set", "Set the priority of every unfinished job of a job set."
    )
    repri_set.add_argument("queue", metavar="QUEUE")
    repri_set.add_argument("job_set", metavar="JOBSET")
    repri_set.add_argument("priority", metavar="PRIORITY", type=int)
    repri_set.set_defaults(handler=cmd_reprioritize, job_id=None)
