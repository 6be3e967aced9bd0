"""Applying what executors report about runs: state changes, outcomes and their events.

``runs_apply_reports`` takes a batch (one executor tick) and commits every change and every
event in one transaction. Reports are idempotent: a report that would not move a run forward
(a repeat, or one for a run that has already ended) is skipped, so an executor may resend a
batch after a crash without harm.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction

from armada.core.reports import RunReport
from armada.core.states import JOB_STATE_FOR_RUN, EventType, JobState, RunState, run_can_move
from armada.models import Job, Run
from armada.services.bulk import bulk_update_fields
from armada.services.events import NewEvent, events_append
from armada.services.failures import failure_verdict

_EVENT_FOR_STATE = {
    RunState.PENDING: EventType.PENDING,
    RunState.RUNNING: EventType.RUNNING,
    RunState.SUCCEEDED: EventType.SUCCEEDED,
    RunState.FAILED: EventType.FAILED,
}


def runs_apply_reports(*, executor_id: str, reports: Sequence[RunReport], now: datetime) -> int:
    """Apply ``reports`` (in order) for runs of ``executor_id``; returns how many took effect."""
    if not reports:
        return 0
    run_ids = list(dict.fromkeys(r.run_id for r in reports))
    applied = 0
    with transaction.atomic():
        runs = {
            r.id: r
            for r in Run.objects.select_for_update()
            .select_related("job")
            .filter(id__in=run_ids, executor=executor_id)
        }
        events: list[NewEvent] = []
        changed_runs: dict[str, Run] = {}
        changed_jobs: dict[str, Job] = {}
        for report in reports:
            run = runs.get(report.run_id)
            if run is None or not run_can_move(RunState(run.state), report.state):
                continue
            job = run.job
            applied += 1
            _apply(run, report)
            changed_runs[run.id] = run
            event_payload = {"cluster": run.executor, "node": run.node, "podName": run.pod_name}
            if report.state == RunState.FAILED:
                event_payload.update(_failure_payload(run, job, report))
            elif job.state not in {s.value for s in JobState if s.terminal}:
                job.state = JOB_STATE_FOR_RUN[report.state]
                job.last_transition_at = report.at
            changed_jobs[job.id] = job
            events.append(
                NewEvent(
                    _EVENT_FOR_STATE[report.state],
                    queue=job.queue_id,
                    job_set=job.job_set,
                    job_id=job.id,
                    run_id=run.id,
                    created=report.at,
                    payload=event_payload,
                )
            )
        bulk_update_fields(
            list(changed_runs.values()),
            [
                "state",
                "pending_at",
                "running_at",
                "finished_at",
                "exit_code",
                "reason",
                "message",
                "failure_category",
                "failure_subcategory",
                "hint",
                "retryable",
                "decision",
            ],
        )
        bulk_update_fields(
            list(changed_jobs.values()),
            [
                "state",
                "last_transition_at",
                "terminal_reason",
                "terminal_message",
                "failure_category",
                "failure_subcategory",
                "failure_count",
            ],
        )
        events_append(events=events)
    return applied


def _apply(run: Run, report: RunReport) -> None:
    run.state = report.state
    if report.state == RunState.PENDING:
        run.pending_at = report.at
    elif report.state == RunState.RUNNING:
        run.running_at = report.at
    else:
        run.finished_at = report.at
        run.exit_code = report.exit_code
        run.reason = report.reason
        run.message = report.message
        run.failure_category = report.failure_category
        run.failure_subcategory = report.failure_subcategory
        run.hint = report.hint


def _failure_payload(run: Run, job: Job, report: RunReport) -> dict:
    """Record the failure on the job, ask for a verdict, and describe it for the event."""
    job.failure_count = (job.failure_count or 0) + 1
    verdict = failure_verdict(job=job, report=report)
    run.retryable = verdict.retry
    run.decision = verdict.decision
    if verdict.retry:
        job.state = JobState.QUEUED
    else:
        job.state = JobState.FAILED
        job.terminal_reason = report.reason
        job.terminal_message = report.message
        job.failure_category = report.failure_category
        job.failure_subcategory = report.failure_subcategory
    job.last_transition_at = report.at
    return {
        "retryable": verdict.retry,
        "failure_category": report.failure_category,
        "failure_subcategory": report.failure_subcategory,
        "reason": report.reason,
        "message": report.message,
        "exitCodes": report.exit_codes,
        "exitCode": report.exit_code,
    }
