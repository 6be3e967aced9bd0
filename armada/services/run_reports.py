"""Applying what executors report about runs: state changes, outcomes and their events.

``runs_apply_report_batch`` takes one batch (an executor's ``ReportEvents`` call) and commits
every change, every event, the failure-category counts and the final logs (``run_logs``) in
one transaction, and says for each report what became of it:

- **applied**: the report moved its run on;
- **duplicate**: the run is at that phase already, or past it (a report sent again, or a
  late ``pending`` after ``running``): nothing changed;
- **refused**, with the reason: the run is not this executor's, or it ended otherwise
  already (a late success of a run whose lease expired meanwhile), or the move is not one a
  run can make (a running run cannot be returned). Nothing changed.

A run's *ingress info* (a ``running`` report with ingress addresses) has outcomes of its own
(``services.run_ingress``); it is applied after the run's ``running`` report of the same
batch, and only a batch that holds one reads or writes the run's ``ingress_addresses``.

So the reports are idempotent: a batch applied twice changes nothing the second time, and a
failure or a retry is never counted twice. Within a batch a run's reports are applied in run
order (pending, running, then its end), whatever order they came in; a report older than
what the run has reached is a duplicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.db import transaction

from armada.core.reports import RunReport, failure_cause
from armada.core.states import JOB_STATE_FOR_RUN, EventType, JobState, RunState, run_can_move
from armada.models import Job, Run
from armada.services import latest_run
from armada.services.failures import lease_return_verdict
from armada.services.locking import lock_runs_with_jobs
from armada.services.report_outcomes import Outcome, ReportOutcome
from armada.services.report_stops import record_cancelled, record_preempted, stop_requests
from armada.services.run_ingress import FIELD as INGRESS_FIELD
from armada.services.run_ingress import ingress_outcome, record_ingress
from armada.services.run_logs import run_logs_finish
from armada.services.runs import FAILURE_CATEGORY_COUNTER, RUN_FIELDS, Changes, record_failure
from armada.services.usage_metrics import pod_phases_count

_EVENT_FOR_STATE = {
    RunState.PENDING: EventType.PENDING,
    RunState.RUNNING: EventType.RUNNING,
    RunState.SUCCEEDED: EventType.SUCCEEDED,
}
_RANK = {RunState.LEASED: 0, RunState.PENDING: 1, RunState.RUNNING: 2}
# What applying reports may change of a job (its pod spec, requests and mutations are the
# retry engine's, so they are neither read nor written here).
REPORT_JOB_FIELDS = [
    "state",
    "last_transition_at",
    "terminal_reason",
    "terminal_message",
    "failure_category",
    "failure_subcategory",
    "lease_return_count",
    *latest_run.FIELDS,
]
JOB_COLUMNS_NOT_READ = ("pod_spec", "requests", "mutations", "annotations", "services", "ingress")
# A batch of nothing but pending and running reports changes only these (the job's copy of
# its latest run, ``latest_*``, says what the lease said until the run ends or is decided).
PROGRESS_RUN_FIELDS = ("state", "pending_at", "running_at", "kubernetes_id")
PROGRESS_JOB_FIELDS = ("state", "last_transition_at")
PROGRESS = frozenset({RunState.PENDING, RunState.RUNNING})
# ...and read none of these of a run.
RUN_COLUMNS_NOT_READ_IN_PROGRESS = (
    "requests",
    "decision",
    "exit_codes",
    "message",
    "hint",
    "containers",
)
# A batch of progress, successes and failures (no stop, no lease returned) changes only
# these: a run's outcome, and of its job the state, and the latest run's copy (exit code).
FINISH = frozenset({*PROGRESS, RunState.SUCCEEDED, RunState.FAILED})
FINISH_RUN_FIELDS = (
    *PROGRESS_RUN_FIELDS,
    "finished_at",
    "exit_code",
    "reason",
    "message",
    "failure_category",
    "failure_subcategory",
    "hint",
    "exit_codes",
    "pod_kept_until",
    "decided_at",
    "containers",
    "cause",
)
FINISH_JOB_FIELDS = (*PROGRESS_JOB_FIELDS, *latest_run.FIELDS)


def runs_apply_reports(*, executor_id: str, reports: Sequence[RunReport], now: datetime) -> int:
    """Apply ``reports`` for runs of ``executor_id``; returns how many took effect."""
    outcomes = runs_apply_report_batch(executor_id=executor_id, reports=reports, now=now)
    return sum(1 for o in outcomes if o.outcome == Outcome.APPLIED)


def runs_apply_report_batch(
    *, executor_id: str, reports: Sequence[RunReport], now: datetime
) -> list[ReportOutcome]:
    """Apply one batch of ``executor_id``'s reports in one transaction; one outcome per
    report, in the order given (see the module's docstring for what each means)."""
    if not reports:
        return []
    run_ids = list(dict.fromkeys(r.run_id for r in reports))
    outcomes: dict[int, ReportOutcome] = {}
    max_retries = settings.ARMADA.scheduling.max_retries
    with transaction.atomic():
        progress_only = all(r.state in PROGRESS for r in reports)
        ingress = any(r.ingress_addresses for r in reports)
        not_read = RUN_COLUMNS_NOT_READ_IN_PROGRESS if progress_only else ()
        runs = {
            r.id: r
            for r in lock_runs_with_jobs(
                Run.objects.filter(id__any=run_ids, executor=executor_id),
                defer_job=JOB_COLUMNS_NOT_READ,
                defer_run=not_read if ingress else (*not_read, INGRESS_FIELD),
            )
        }
        if progress_only:
            changes = Changes(job_fields=PROGRESS_JOB_FIELDS, run_fields=PROGRESS_RUN_FIELDS)
        elif all(r.state in FINISH for r in reports):
            changes = Changes(job_fields=FINISH_JOB_FIELDS, run_fields=FINISH_RUN_FIELDS)
        else:
            changes = Changes(job_fields=REPORT_JOB_FIELDS, run_fields=RUN_FIELDS)
        if ingress:
            changes.run_fields = (*changes.run_fields, INGRESS_FIELD)
        logs: dict[str, str] = {}  # run id -> the final tail of its log
        phases: list[tuple[str, str]] = []  # (queue, state) of each report applied
        stops = stop_requests(runs, reports)
        for i in in_run_order(reports):
            report = reports[i]
            run = runs.get(report.run_id)
            if report.is_ingress_info:
                outcomes[i] = outcome = ingress_outcome(run, report, executor_id)
                if outcome.outcome == Outcome.APPLIED:
                    changes.touch(run, run.job)
                    record_ingress(run, run.job, report, changes)
                continue
            outcomes[i] = outcome = _outcome(run, report, executor_id)
            if outcome.outcome != Outcome.APPLIED:
                continue  # changes nothing, its log included
            phases.append((run.job.queue_id, report.state))
            if report.log is not None:
                logs[run.id] = report.log
            job = run.job
            changes.touch(run, job)
            if report.kubernetes_id and not run.kubernetes_id:
                run.kubernetes_id = report.kubernetes_id[:64]
            if report.state == RunState.LEASE_RETURNED:
                _lease_returned(run, job, report, changes, max_retries)
            elif report.state == RunState.PREEMPTED:
                record_preempted(run, job, report, changes, stops.get(run.id, {}))
            elif report.state == RunState.CANCELLED:
                record_cancelled(
                    run, job, report, changes, stops.get(run.id, {}).get("requestor", "")
                )
            elif report.state == RunState.FAILED:
                _finish(run, report)
                record_failure(run=run, changes=changes)
            else:
                _advance(run, job, report, changes)
        run_logs_finish(logs=logs, now=now)  # the log rows after the runs (services.locking)
        pod_phases_count(changes, phases)
        changes.write()
    return [outcomes[i] for i in range(len(reports))]


def _rank(state: RunState) -> int:
    return _RANK.get(state, len(_RANK))


def in_run_order(reports: Sequence[RunReport]) -> list[int]:
    """The indexes of ``reports`` in the order to apply them: each run's reports sorted by
    phase (pending, running, its ingress info, then how it ended), in the places its reports
    held, so that the batch's interleaving of runs is kept."""
    places: dict[str, list[int]] = {}
    for i, report in enumerate(reports):
        places.setdefault(report.run_id, []).append(i)
    order = list(range(len(reports)))
    for indexes in places.values():
        if len(indexes) > 1:
            ranked = sorted(
                indexes, key=lambda i: (_rank(reports[i].state), reports[i].is_ingress_info)
            )
            for place, i in zip(indexes, ranked, strict=True):
                order[place] = i
    return order


def _outcome(run: Run | None, report: RunReport, executor_id: str) -> ReportOutcome:
    if run is None:
        return ReportOutcome(
            Outcome.REFUSED, f"run {report.run_id} is not a run of executor {executor_id}"
        )
    if report.ingress_addresses:
        return ReportOutcome(
            Outcome.REFUSED, f"ingress addresses come on a running report, not on {report.state}"
        )
    current = RunState(run.state)
    if run_can_move(current, report.state):
        return ReportOutcome(Outcome.APPLIED)
    if current == report.state:
        return ReportOutcome(Outcome.DUPLICATE, f"the run is {current} already")
    # An earlier phase than the run's (a late pending, or a batch sent again after the run
    # ended) is "past it" whether or not the run has ended; ends are all of one rank.
    if _rank(report.state) < _rank(current):
        return ReportOutcome(
            Outcome.DUPLICATE, f"the run is {current} already, past {report.state}"
        )
    if current.terminal:
        return ReportOutcome(
            Outcome.REFUSED,
            f"the run ended as {current} already; a report of {report.state} changes nothing",
        )
    return ReportOutcome(Outcome.REFUSED, f"a {current} run cannot become {report.state}")


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
        "kubernetesId": run.kubernetes_id,
        "podNumber": 0,
    }
    if report.state == RunState.SUCCEEDED:
        payload["exitCodes"] = report.exit_codes
        payload["containers"] = run.containers
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
    run.containers = [
        {"name": c.name, "exitCode": c.exit_code, "reason": c.reason, "message": c.message}
        for c in report.containers
    ]
    run.cause = (
        failure_cause(report.conditions, report.containers)
        if report.state == RunState.FAILED
        else ""
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
        kubernetesId=run.kubernetes_id,
        podNumber=0,
        runAttempted=False,
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
