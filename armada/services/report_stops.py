"""Reports that complete a stop: a run preempted or cancelled once its pod is gone
(``services.run_reports`` applies them, in its transaction)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from armada.core.reports import RunReport
from armada.core.states import EventType, JobState, RunState
from armada.models import Event, Job, Run
from armada.services.runs import Changes


def stop_requests(runs: dict[str, Run], reports: Sequence[RunReport]) -> dict[str, dict[str, Any]]:
    """The stops that these reports complete, by run: the payload of the run's
    ``cancelling`` or ``preempting`` event (who asked, empty when the scheduler did; and for
    a preemption that made room for another job, that job and its run). One read for the
    batch, and only when it holds a stop."""
    stopped = [
        runs[r.run_id]
        for r in reports
        if r.state in (RunState.CANCELLED, RunState.PREEMPTED) and r.run_id in runs
    ]
    if not stopped:
        return {}
    rows = Event.objects.filter(
        job_id__in={run.job_id for run in stopped},
        run_id__in={run.id for run in stopped},
        type__in=[EventType.CANCELLING, EventType.PREEMPTING],
    ).values_list("run_id", "payload")
    return {run_id: payload or {} for run_id, payload in rows}


def record_preempted(
    run: Run, job: Job, report: RunReport, changes: Changes, stop: dict[str, Any]
) -> None:
    """The run was stopped for other work: the job ends preempted and is not retried. The
    ``preempted`` event names who asked, and the job (and its run) the room was made for
    when the scheduler preempted it for one."""
    by = {k: stop[k] for k in ("preemptingJobId", "preemptiveRunId") if stop.get(k)}
    run.state = RunState.PREEMPTED
    run.finished_at = report.at
    run.reason = "Preempted"
    run.message = run.stop_reason or report.message
    run.retryable = False
    job.state = JobState.PREEMPTED
    job.last_transition_at = report.at
    job.terminal_reason = "Preempted"
    job.terminal_message = run.message
    changes.event(
        EventType.PREEMPTED,
        run,
        job,
        report.at,
        clusterId=run.executor,
        nodeName=run.node,
        reason=run.message,
        requestor=str(stop.get("requestor") or ""),
        **by,
    )
    changes.failed_event(
        run,
        job,
        report.at,
        retryable=False,
        category="",
        subcategory="",
        reason="Preempted",
        message=run.message,
    )


def record_cancelled(
    run: Run, job: Job, report: RunReport, changes: Changes, requestor: str
) -> None:
    """The run was stopped because its job was cancelled."""
    run.state = RunState.CANCELLED
    run.finished_at = report.at
    run.reason = "Cancelled"
    run.message = run.stop_reason
    job.state = JobState.CANCELLED
    job.last_transition_at = report.at
    job.terminal_reason = "Cancelled"
    job.terminal_message = run.stop_reason
    changes.event(
        EventType.CANCELLED, run, job, report.at, reason=run.stop_reason, requestor=requestor
    )
