"""What running pods use, as their latest ``utilisation`` events said, and what executors'
reports move pods through: the data of Armada's ``armada_queue_resource_used``,
``armada_executor_job_pod_resource_usage`` and ``armada_executor_job_pod_total``.

- :func:`usage_record` keeps, per run and resource, the average use over the period of the
  run's latest recorded utilisation (``models.RunUsage``, milli-units). It is called by
  ``services.run_utilisation`` in the transaction that records the event, with the run's
  row lock held, so the kept usage and the event log never disagree. A run's rows outlive it
  (until the run is deleted); the scrape sums those of active runs only
  (:func:`usage_read`, one grouped query).
- :func:`pod_phases_count` counts ``armada_executor_job_pod_total{queue,phase}``, Armada's
  executor counter of pod phase changes, from the run reports an executor sends:
  ``Pending``, ``Running``, ``Succeeded`` and ``Failed`` reports applied (a report sent
  again is a duplicate and not applied, so it is not counted twice). It is called by
  ``services.run_reports`` and counted in the batch's transaction (``runs.Changes``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db.models import Sum

from armada.core.states import RunState

POD_TOTAL = "armada_executor_job_pod_total"
POD_TOTAL_LABELS = ("queue", "phase")
_POD_PHASE = {
    RunState.PENDING: "Pending",
    RunState.RUNNING: "Running",
    RunState.SUCCEEDED: "Succeeded",
    RunState.FAILED: "Failed",
}


def usage_record(usage: Mapping[str, Mapping[str, int]]) -> None:
    """Keep ``usage`` (run id -> resource -> milli-units) as each run's latest use."""
    from armada.models import RunUsage

    if not usage:
        return
    RunUsage.objects.filter(run_id__in=list(usage)).delete()
    RunUsage.objects.bulk_create(
        [
            RunUsage(run_id=run_id, resource=resource, value=int(value))
            for run_id, amounts in sorted(usage.items())
            for resource, value in sorted(amounts.items())
        ]
    )


def pod_phases_count(changes, applied: Sequence[tuple[str, str]]) -> None:
    """Count each applied ``(queue, run state)`` report that moves a pod to a phase."""
    labels = [
        {"queue": queue, "phase": _POD_PHASE[RunState(state)]}
        for queue, state in applied
        if RunState(state) in _POD_PHASE
    ]
    if labels:
        changes.counts(POD_TOTAL, labels)


@dataclass(frozen=True)
class UsageGroup:
    cluster: str
    pool: str
    queue: str
    state: str
    resource: str
    value: int  # milli-units


def usage_read() -> list[UsageGroup]:
    """Kept usage of active runs, summed per cluster, pool, queue, run state and resource."""
    from armada.models import RunUsage
    from armada.services.queue_shares import ACTIVE_RUNS

    fields = ("run__executor", "run__pool", "run__job__queue", "run__state", "resource")
    return [
        UsageGroup(*(r[f] for f in fields), int(r["v"] or 0))
        for r in RunUsage.objects.filter(run__state__in=ACTIVE_RUNS)
        .values(*fields)
        .annotate(v=Sum("value"))
        .order_by(*fields)
    ]
