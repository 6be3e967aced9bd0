"""Recording what running pods used: the ``utilisation`` events.

An executor sends, with a report batch, at most one utilisation per run per its
``utilisationPeriod`` (``executor.utilisation``). Each is recorded as one ``utilisation``
event (Armada's ``JobUtilisationEvent``), bounded so that a misbehaving or replaying executor
cannot flood the event log: a run gets at most one event per period, the period being the
executor's own and never less than ``MIN_PERIOD``. The run keeps when its latest event was
measured (``Run.utilisation_at``), under its row lock, so two batches applied at once
cannot both record one for the same period.

Outcomes, one per utilisation:

- **applied**: recorded (the event and ``utilisation_at`` commit in one transaction);
- **duplicate**: the run has one measured less than a period before (the same batch sent
  again, or a report too soon): nothing changed;
- **refused**, with the reason: the run is not this executor's, has not run, or ended
  before the measurement. Nothing changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.db import transaction

from armada.core.quantity import format_quantity
from armada.core.reports import RunUtilisation
from armada.core.states import EventType
from armada.models import Run
from armada.services.bulk import bulk_update_fields
from armada.services.events import NewEvent, events_append
from armada.services.locking import lock_runs_with_jobs
from armada.services.report_outcomes import Outcome, ReportOutcome
from armada.services.run_reports import JOB_COLUMNS_NOT_READ
from armada.services.usage_metrics import usage_record

#: The shortest period the server accepts between two utilisation events of a run.
MIN_PERIOD = 1.0
_RUN_COLUMNS_NOT_READ = ("requests", "decision", "message", "hint", "exit_codes", "containers")


def _texts(values: dict[str, int]) -> dict[str, str]:
    return {name: format_quantity(value, name) for name, value in sorted(values.items())}


def _outcome(
    run: Run | None, usage: RunUtilisation, executor_id: str, period: timedelta
) -> ReportOutcome:
    if run is None:
        return ReportOutcome(
            Outcome.REFUSED, f"run {usage.run_id} is not a run of executor {executor_id}"
        )
    if run.running_at is None:
        return ReportOutcome(Outcome.REFUSED, f"the run is {run.state}: it has not run")
    if run.finished_at is not None and usage.at > run.finished_at:
        return ReportOutcome(
            Outcome.REFUSED, f"the run ended ({run.state}) before this was measured"
        )
    if run.utilisation_at is not None and usage.at < run.utilisation_at + period:
        return ReportOutcome(
            Outcome.DUPLICATE,
            f"the run's utilisation was recorded at {run.utilisation_at.isoformat()}, less "
            f"than a period ({period.total_seconds():g}s) before",
        )
    return ReportOutcome(Outcome.APPLIED)


def runs_record_utilisation(
    *, executor_id: str, reports: Sequence[RunUtilisation], period_seconds: float
) -> list[ReportOutcome]:
    """Record ``reports`` of ``executor_id`` in one transaction; one outcome per report, in
    the order given (see the module docstring)."""
    if not reports:
        return []
    period = timedelta(seconds=max(period_seconds, MIN_PERIOD))
    outcomes: list[ReportOutcome] = []
    with transaction.atomic():
        runs = {
            r.id: r
            for r in lock_runs_with_jobs(
                Run.objects.filter(
                    id__any=list(dict.fromkeys(u.run_id for u in reports)), executor=executor_id
                ),
                defer_job=JOB_COLUMNS_NOT_READ,
                defer_run=_RUN_COLUMNS_NOT_READ,
            )
        }
        changed: dict[str, Run] = {}
        latest: dict[str, dict[str, int]] = {}  # run -> its latest average use
        events: list[NewEvent] = []
        for usage in sorted(reports, key=lambda u: u.at):
            run = runs.get(usage.run_id)
            outcome = _outcome(run, usage, executor_id, period)
            outcomes.append(outcome)
            if outcome.outcome != Outcome.APPLIED:
                continue
            run.utilisation_at = usage.at
            changed[run.id] = run
            latest[run.id] = usage.avg_usage
            job = run.job
            events.append(
                NewEvent(
                    EventType.UTILISATION,
                    queue=job.queue_id,
                    job_set=job.job_set,
                    job_id=job.id,
                    run_id=run.id,
                    created=usage.at,
                    payload={
                        "clusterId": run.executor,
                        "kubernetesId": run.kubernetes_id or usage.kubernetes_id[:64],
                        "nodeName": run.node,
                        "podName": run.pod_name,
                        "podNamespace": job.namespace,
                        "podNumber": 0,
                        "maxResourcesForPeriod": _texts(usage.max_usage),
                        "avgResourcesForPeriod": _texts(usage.avg_usage),
                        "totalCumulativeUsage": _texts(usage.cumulative),
                    },
                )
            )
        bulk_update_fields(list(changed.values()), ["utilisation_at"])
        events_append(events=events)
        usage_record(latest)
    # Back in the order given (they were applied oldest measurement first).
    order = sorted(range(len(reports)), key=lambda i: reports[i].at)
    out: list[ReportOutcome | None] = [None] * len(reports)
    for place, outcome in zip(order, outcomes, strict=True):
        out[place] = outcome
    return [o for o in out if o is not None]
