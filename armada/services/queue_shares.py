"""Queue shares for Lookout: what each queue uses now against what it is entitled to.

- **Current share**: the dominant resource share (``core.fairshare.dominant_share``) of the
  requests of the queue's active runs (leased, pending, running) over the capacity of the
  pool: the allocatable resources of its live nodes (schedulable nodes of executors that
  heart-beat within ``executorTimeout``). With no pool named, all pools count together.
- **Fair share**: the queue's weight (``1 / priority_factor``) over the summed weights of the
  active queues (those with jobs queued or running); an inactive queue's fair share is 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count

from armada.core.fairshare import dominant_share
from armada.core.states import JobState, RunState
from armada.models import Executor, Job, Node, Queue, Run
from armada.services.snapshot import armada_allocatable

ACTIVE_RUNS = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
ACTIVE_JOBS = [JobState.QUEUED, JobState.LEASED, JobState.PENDING, JobState.RUNNING]


@dataclass
class QueueShare:
    queue: Queue
    weight: float
    active: bool
    current_share: float
    fair_share: float
    allocated: dict[str, int] = field(default_factory=dict)
    jobs_by_state: dict[str, int] = field(default_factory=dict)


def pool_capacity(*, now: datetime, pool: str | None = None) -> dict[str, int]:
    """The summed allocatable (milli-units) of the live, schedulable nodes of ``pool``, less
    what pods Armada did not start use on them."""
    cutoff = now - timedelta(seconds=settings.ARMADA.executor_timeout)
    live = Executor.objects.filter(last_heartbeat__gte=cutoff, cordoned=False).values("id")
    nodes = Node.objects.filter(executor_id__in=live, unschedulable=False, cordoned=False)
    if pool:
        nodes = nodes.filter(pool=pool)
    capacity: dict[str, int] = defaultdict(int)
    for allocatable, others in nodes.values_list("allocatable", "non_armada_allocated"):
        for resource, amount in armada_allocatable(allocatable or {}, others).items():
            capacity[resource] += amount
    return dict(capacity)


def queue_allocations(*, pool: str | None = None) -> dict[str, dict[str, int]]:
    """Per queue, the summed requests of its active runs (in ``pool``, or all pools)."""
    runs = Run.objects.filter(state__in=ACTIVE_RUNS)
    if pool:
        runs = runs.filter(pool=pool)
    allocated: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for queue, requests in runs.values_list("job__queue", "requests"):
        for resource, amount in (requests or {}).items():
            allocated[queue][resource] += int(amount)
    return {q: dict(r) for q, r in allocated.items()}


def jobs_per_state(*, queues: Iterable[str] | None = None) -> dict[str, dict[str, int]]:
    """Per queue, its jobs per state (one grouped count)."""
    qs = Job.objects.all()
    if queues is not None:
        qs = qs.filter(queue_id__in=list(queues))
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for row in qs.values("queue", "state").annotate(n=Count("id")).order_by():
        counts[row["queue"]][row["state"]] = row["n"]
    return dict(counts)


def queue_shares(
    *, now: datetime, queues: list[Queue] | None = None, pool: str | None = None
) -> list[QueueShare]:
    """Current and fair shares of ``queues`` (every queue when None), in name order.

    The fair share is computed among every active queue, shown or not, so that a viewer who
    sees only some queues reads the same numbers as an administrator."""
    all_queues = list(Queue.objects.order_by("name"))
    shown = queues if queues is not None else all_queues
    capacity = pool_capacity(now=now, pool=pool)
    allocated = queue_allocations(pool=pool)
    states = jobs_per_state()
    active = {
        q.name
        for q in all_queues
        if q.name in allocated or any(states.get(q.name, {}).get(s, 0) for s in ACTIVE_JOBS)
    }
    weights = {q.name: 1.0 / max(q.priority_factor, 1e-9) for q in all_queues}
    total_weight = sum(weights[name] for name in active)
    result = []
    for queue in shown:
        is_active = queue.name in active
        result.append(
            QueueShare(
                queue=queue,
                weight=weights[queue.name],
                active=is_active,
                current_share=dominant_share(allocated.get(queue.name, {}), capacity),
                fair_share=weights[queue.name] / total_weight
                if is_active and total_weight
                else 0.0,
                allocated=allocated.get(queue.name, {}),
                jobs_by_state=states.get(queue.name, {}),
            )
        )
    return result
