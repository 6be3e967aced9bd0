"""Applying what executors report about runs: state changes, outcomes and their events.

``runs_apply_reports`` takes a batch (one executor tick) and commits every change, every
event, the failure-category counts and the logs in one transaction. Reports are
idempotent: a report that would not move a run forward (a repeat, or one for a run that has
already ended) is skipped, so an executor may resend a batch after a crash without harm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction

from armada.core.reports import RunReport
from armada.core.states import JOB_STATE_FOR_RUN, EventType, JobState, RunState, run_can_move
from armada.models import Event, Job, Run, RunLog
from armada.services import latest_run, retry_cost
from armada.services.bulk import bulk_update_fields
from armada.services.counters import counters_add, tally
from armada.services.events import NewEvent, events_append
from armada.services.failures import lease_return_verdict
from armada.services.locking import lock_runs_with_jobs

FAILURE_CATEGORY_COUNTER = "armada_executor_job_failure_category_total"
LOG_LIMIT = 64 * 1024

_EVENT_FOR_STATE = {
    RunState.PENDING: EventType.PENDING,
    RunState.RUNNING: EventType.RUNNING,
    RunState.SUCCEEDED: EventType.SUCCEEDED,
}
RUN_FIELDS = [
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
    "exit_codes",
    "decided_at",
    "pod_kept_until",
]
JOB_FIELDS = [
    "state",
    "last_transition_at",
    "terminal_reason",
    "terminal_message",
    "failure_category",
    "failure_subcategory",
    "failure_count",
    "retry_count",
    "lease_return_count",
    "pod_spec",
    "requests",
    "mutations",
    "retry_not_before",
    *latest_run.FIELDS,
]


@dataclass
class Changes:
    """What one transaction writes: rows, events, counts."""

    runs: dict[str, Run] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    events: list[NewEvent] = field(default_factory=list)
    counters: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    # Each run and its job as first touched, so that ``write`` can tell what ended, was
    # decided or succeeded in this transaction (``services.retry_cost``).
    seen: dict[str, retry_cost.Seen] = field(default_factory=dict)

    def counts(self, name: str, labels: list[dict[str, str]]) -> None:
        """Count one occurrence per label set in counter ``name``."""
        self.counters.setdefault(name, []).extend(labels)

    def event(self, type_: EventType, run: Run, job: Job, at: datetime, **payload) -> None:
        self.events.append(
            NewEvent(
                type_,
                queue=job.queue_id,
                job_set=job.job_set,
                job_id=job.id,
                run_id=run.id,
                created=at,
                payload=payload,
            )
        )

    def failed_event(
        self,
        run: Run,
        job: Job,
        at: datetime,
        *,
        retryable: bool,
        category: str,
        subcategory: str,
        **extra,
    ) -> None:
        """The ``failed`` event: where it ran, whether it will be retried, and why it failed.
        It always names the run's exit codes (empty when no container ended), so that a reader
        never has to look the run up for them."""
        extra.setdefault("exitCodes", run.exit_codes or {})
        self.event(
            EventType.FAILED,
            run,
            job,
            at,
            clusterId=run.executor,
            nodeName=run.node,
            podName=run.pod_name,
            podNamespace=job.namespace,
            retryable=retryable,
            failureCategory=category,
            failureSubcategory=subcategory,
            **extra,
        )

    def touch(self, run: Run, job: Job) -> None:
        self.seen.setdefault(run.id, retry_cost.seen(run, job))
        self.runs[run.id] = run
        self.jobs[job.id] = job

    def write_events(self) -> None:
        events_append(events=self.events)

    def write(self) -> None:
        """Rows first (already locked, jobs before runs), then the events, which take the
        event-log lock, then the counters, which are written only under that lock (see
        ``services.locking``). Each run is copied onto its job (``services.latest_run``)."""
        for run in self.runs.values():
            if (job := self.jobs.get(run.job_id)) is not None:
                latest_run.copy_to_job(run, job)
        bulk_update_fields(list(self.runs.values()), RUN_FIELDS)
        bulk_update_fields(list(self.jobs.values()), JOB_FIELDS)
        events_append(events=self.events)
        for name, labels in sorted(self.counters.items()):
            if labels:
                counters_add(name=name, increments=tally(*labels))
        retry_cost.record(self)  # what failed runs and retried attempts cost, and the yield


def runs_apply_reports(*, executor_id: str, reports: Sequence[RunReport], now: datetime) -> int:
    """Apply ``reports`` (in order) for runs of ``executor_id``; returns how many took effect."""
    if not reports:
        return 0
    run_ids = list(dict.fromkeys(r.run_id for r in reports))
    applied = 0
    max_retries = settings.ARMADA.scheduling.max_retries
    with transaction.atomic():
        runs = {
            r.id: r
            for r in lock_runs_with_jobs(Run.objects.filter(id__any=run_ids, executor=executor_id))
        }
        changes = Changes()
        logs: dict[str, RunReport] = {}
        requestors = _stop_requestors(runs, reports)
        for report in reports:
            run = runs.get(report.run_id)
            if report.log is not None and run is not None:
                logs[run.id] = report
            if run is None or not run_can_move(RunState(run.state), report.state):
                continue
            applied += 1
            job = run.job
            changes.touch(run, job)
            if report.state == RunState.LEASE_RETURNED:
                _lease_returned(run, job, report, changes, max_retries)
            elif report.state == RunState.PREEMPTED:
                _preempted(run, job, report, changes, requestors.get(run.id, ""))
            elif report.state == RunState.CANCELLED:
                _cancelled(run, job, report, changes, requestors.get(run.id, ""))
            elif report.state == RunState.FAILED:
                _finish(run, report)
                record_failure(run=run, changes=changes)
            else:
                _advance(run, job, report, changes)
        _save_logs(logs, now)
        changes.write()
    return applied


def _stop_requestors(runs: dict[str, Run], reports: Sequence[RunReport]) -> dict[str, str]:
    """Who asked for each stop that these reports complete: the ``requestor`` of the run's
    ``cancelling`` or ``preempting`` event (empty when the scheduler asked). One read for the
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
    return {run_id: (payload or {}).get("requestor", "") for run_id, payload in rows}


def _advance(run: Run, job: Job, report: RunReport, changes: Changes) -> None:
    run.state = report.state
    if report.state == RunState.PENDING:
        run.pending_at = report.at
    elif report.state == RunState.RUNNING:
        run.running_at = report.at
    else:
        _finish(run, report)
    if not JobState(job.state).terminal:
        job.state = JOB_STATE_FOR_RUN[report.state]
        job.last_transition_at = report.at
    payload = {
        "clusterId": run.executor,
        "nodeName": run.node,
        "podName": run.pod_name,
        "podNamespace": job.namespace,
        "pool": run.pool,
    }
    if report.state == RunState.SUCCEEDED:
        payload["exitCodes"] = report.exit_codes
    changes.event(_EVENT_FOR_STATE[report.state], run, job, report.at, **payload)


def _finish(run: Run, report: RunReport) -> None:
    run.finished_at = report.at
    run.exit_code = report.exit_code
    run.reason = report.reason
    run.message = report.message
    run.failure_category = report.failure_category
    run.failure_subcategory = report.failure_subcategory
    run.hint = report.hint
    run.exit_codes = report.exit_codes
    run.pod_kept_until = report.pod_kept_until


def record_failure(*, run: Run, changes: Changes) -> None:
    """A genuine failure (the run's outcome fields already set): the run is failed and
    counted by category; the scheduler decides later what it means for the job
    (``services.decisions``), and emits the ``failed`` event then."""
    run.state = RunState.FAILED
    run.decided_at = None
    changes.counts(
        FAILURE_CATEGORY_COUNTER,
        [
            {
                "failure_category": run.failure_category,
                "failure_subcategory": run.failure_subcategory,
            }
        ],
    )


def _preempted(run: Run, job: Job, report: RunReport, changes: Changes, requestor: str) -> None:
    """The run was stopped for other work: the job ends preempted and is not retried."""
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
        requestor=requestor,
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


def _cancelled(run: Run, job: Job, report: RunReport, changes: Changes, requestor: str) -> None:
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


def _lease_returned(
    run: Run, job: Job, report: RunReport, changes: Changes, max_retries: int
) -> None:
    """The run never started; the job goes back to the queue unless the legacy limit is hit."""
    run.state = RunState.LEASE_RETURNED
    run.finished_at = report.at
    run.reason = report.reason
    run.message = report.message
    job.lease_return_count = (job.lease_return_count or 0) + 1
    job.last_transition_at = report.at
    changes.event(
        EventType.LEASE_RETURNED,
        run,
        job,
        report.at,
        clusterId=run.executor,
        nodeName=run.node,
        reason=report.reason,
        message=report.message,
    )
    verdict = lease_return_verdict(job=job, max_retries=max_retries)
    if verdict.requeue:
        job.state = JobState.QUEUED
        changes.event(EventType.QUEUED, run, job, report.at)
        return
    job.state = JobState.FAILED
    job.terminal_reason = verdict.reason
    job.terminal_message = verdict.message
    job.failure_category = verdict.category
    job.failure_subcategory = verdict.subcategory
    changes.counts(
        FAILURE_CATEGORY_COUNTER,
        [{"failure_category": verdict.category, "failure_subcategory": verdict.subcategory}],
    )
    changes.failed_event(
        run,
        job,
        report.at,
        retryable=False,
        category=verdict.category,
        subcategory=verdict.subcategory,
        reason=verdict.reason,
        message=verdict.message,
    )


def _save_logs(reports: dict[str, RunReport], now: datetime) -> None:
    """Insert or replace the logs of a batch in one statement (an upsert on the run)."""
    rows = [
        RunLog(
            run_id=run_id,
            text=(report.log or "")[-LOG_LIMIT:],
            truncated=len(report.log or "") > LOG_LIMIT,
            updated_at=now,
        )
        for run_id, report in reports.items()
        if report.log  # an empty log is not worth a row
    ]
    RunLog.objects.bulk_create(
        rows,
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["run"],
        update_fields=["text", "truncated", "updated_at"],
    )
