"""Scheduling reports, as Armada's armadactl prints its scheduler's: ``get queue-report
QUEUE``, ``get job-report JOB_ID`` and ``get scheduling-report``.

They read what our scheduler stores (see ``armada.services.scheduling_reports``): the latest
rounds, the reason each queued job waits, the queue shares. ``-v`` (repeatable, as
Armada's) shows more: job ids per reason and more rounds. ``-o yaml|json`` prints the
server's report as it is, for programs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from armada.cli.commands import EXIT_OK, make_client, out
from armada.cli.output import ROUND_HEADERS as ROUND_HEADERS  # the table's columns
from armada.cli.output import (
    cell,
    render_data,
    render_rounds_table,
    render_table,
    timestamp_cell,
)

SHARE_HEADERS = ("QUEUE", "PRIORITY FACTOR", "FAIR SHARE", "CURRENT SHARE", "QUEUED", "RUNNING")
SHARE_HEADERS += ("CORDONED",)


def _share(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else cell(value)


def _round_line(round_: Mapping[str, Any]) -> str:
    return (
        f"Latest round: {round_.get('id')} at {timestamp_cell(round_.get('startedAt'))}, "
        f"{round_.get('durationMs')} ms: considered {round_.get('considered')}, "
        f"leased {round_.get('leased')}, unschedulable {round_.get('unschedulable')}"
    )


def render_rounds(rounds: Sequence[Mapping[str, Any]], verbosity: int) -> list[str]:
    """The latest round on one line; from ``-v`` a table of the latest rounds."""
    if not rounds:
        return ["No scheduling round has run yet."]
    if not verbosity:
        return [_round_line(rounds[0])]
    return ["Latest rounds:", render_rounds_table(rounds)]


def render_reasons(reasons: Sequence[Mapping[str, Any]], without: int = 0) -> list[str]:
    """Why queued jobs wait: one row per reason (most jobs first), then the job ids of each
    reason when the server sent them (``-v``)."""
    lines: list[str] = []
    if reasons:
        rows = [
            [cell(r.get("jobs")), timestamp_cell(r.get("since")), cell(r.get("reason"))]
            for r in reasons
        ]
        lines += ["Queued jobs wait because:", render_table(("JOBS", "SINCE", "REASON"), rows)]
        for r in reasons:
            if r.get("jobIds"):
                lines.append(f"  {r.get('reason')}: {', '.join(r['jobIds'])}")
    if without:
        lines.append(
            f"{without} queued job(s) have no recorded reason yet (no round has considered them)."
        )
    if not lines:
        lines.append("No queued job is waiting.")
    return lines


def render_queue_report(report: Mapping[str, Any], verbosity: int) -> str:
    jobs = report.get("jobsByState") or {}
    lines = [
        f"Queue {report.get('queue')} (pool: {report.get('pool') or 'all pools'})",
        f"  Priority factor {cell(report.get('priorityFactor'))}, "
        f"cordoned: {cell(report.get('cordoned'))}, active: {cell(report.get('active'))}",
        f"  Fair share {_share(report.get('fairShare'))}, "
        f"current share {_share(report.get('currentShare'))}",
        f"  Allocated: {cell(report.get('allocated'))}",
        "  Jobs: " + (", ".join(f"{state} {n}" for state, n in jobs.items()) or "none"),
        "",
        *render_reasons(report.get("pendingReasons") or [], report.get("queuedWithoutReason") or 0),
        "",
        *render_rounds(report.get("latestRounds") or [], verbosity),
    ]
    return "\n".join(lines)


def render_scheduling_report(report: Mapping[str, Any], verbosity: int) -> str:
    lines = [
        f"Scheduling report (pool: {report.get('pool') or 'all pools'})",
        *render_rounds(report.get("latestRounds") or [], verbosity),
        "",
    ]
    queues = report.get("queues") or []
    if queues:
        rows = [
            [
                cell(q.get("queue")),
                cell(q.get("priorityFactor")),
                _share(q.get("fairShare")),
                _share(q.get("currentShare")),
                str((q.get("jobsByState") or {}).get("queued", 0)),
                str((q.get("jobsByState") or {}).get("running", 0)),
                cell(q.get("cordoned")),
            ]
            for q in queues
        ]
        lines += [render_table(SHARE_HEADERS, rows), ""]
    else:
        lines += ["No active queue you may watch.", ""]
    lines += render_reasons(report.get("pendingReasons") or [])
    return "\n".join(lines)


def render_job_report(record: Mapping[str, Any], job: Mapping[str, Any]) -> str:
    """A job's state and why it waits (its scheduling record), then where its latest run
    went."""
    reason = record.get("pendingReason")
    lines = [
        f"Job {record.get('jobId')} (queue {record.get('queue')}, "
        f"job set {record.get('jobSetId')}): {record.get('state')}"
    ]
    if isinstance(reason, Mapping):
        lines.append(
            f"Unschedulable: {reason.get('reason')} "
            f"(round {reason.get('roundId')}, {timestamp_cell(reason.get('at'))})"
        )
    elif record.get("state") == "queued":
        lines.append("Pending: no scheduling round has considered this job yet.")
    runs = job.get("runs") or []
    if runs:
        run = runs[-1]
        lines.append(
            f"Latest run {run.get('id')}: {run.get('state')} on node {cell(run.get('node'))} "
            f"of executor {cell(run.get('executor'))} (pool {cell(run.get('pool'))}), "
            f"leased {timestamp_cell(run.get('leasedAt'))}"
        )
        if len(runs) > 1:
            lines.append(f"Runs so far: {len(runs)}")
    elif record.get("state") != "queued":
        lines.append("No run.")
    rounds = record.get("latestRounds") or []
    if rounds:
        lines += ["", _round_line(rounds[0])]
    return "\n".join(lines)


# -- commands ---------------------------------------------------------------------------


def cmd_queue_report(args: argparse.Namespace) -> int:
    report = make_client(args).queue_report(
        args.queue.strip(), pool=args.pool, verbosity=args.verbose
    )
    if args.output != "table":
        out(render_data(report, args.output))
    else:
        out(render_queue_report(report, args.verbose))
    return EXIT_OK


def cmd_job_report(args: argparse.Namespace) -> int:
    client = make_client(args)
    job_id = args.job_id.strip()
    record = client.get_job_scheduling(job_id)
    job = client.get_job(job_id)
    if args.output != "table":
        out(render_data({"scheduling": record, "runs": job.get("runs") or []}, args.output))
    else:
        out(render_job_report(record, job))
    return EXIT_OK


DEPRECATED = (
    "This flag is deprecated and will be removed in a future release. "
    "Please use `{command}` instead."
)


def cmd_scheduling_report(args: argparse.Namespace) -> int:
    """The overall report; Armada's older ``--queue`` and ``--job-id`` still work and say
    which command replaces them."""
    if (args.queue or "").strip():
        print(DEPRECATED.format(command="queue-report"), file=sys.stderr)
        return cmd_queue_report(args)
    if (args.job_id or "").strip():
        print(DEPRECATED.format(command="job-report"), file=sys.stderr)
        return cmd_job_report(args)
    report = make_client(args).scheduling_report(pool=args.pool, verbosity=args.verbose)
    if args.output != "table":
        out(render_data(report, args.output))
    else:
        out(render_scheduling_report(report, args.verbose))
    return EXIT_OK
