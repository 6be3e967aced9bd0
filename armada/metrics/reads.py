"""What one scrape reads from the database: a fixed handful of grouped queries, whatever the
number of jobs or queues (``docs/metrics.md`` says what each costs).

- queues: one row per queue;
- live jobs grouped by queue, state, priority class and requests (rows: distinct job shapes
  per queue and state, not jobs);
- active runs grouped by queue, priority class, executor, node, pool, state and requests;
- nodes (one row per node) and executors (one row per cluster).
Resources are in milli-units as stored (``core.quantity``); the families serve them in units.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count

from armada.core.states import JobState
from armada.services.queue_shares import ACTIVE_RUNS
from armada.services.snapshot import armada_allocatable


def _requests(value: object) -> dict[str, int]:
    if isinstance(value, str):
        value = json.loads(value)
    return {k: int(v) for k, v in (value or {}).items()}


@dataclass(frozen=True)
class QueueRow:
    name: str
    priority_factor: float
    labels: dict
    cordoned: bool


@dataclass(frozen=True)
class JobGroup:
    queue: str
    state: str
    priority_class: str
    requests: dict[str, int]
    n: int


@dataclass(frozen=True)
class RunGroup:
    queue: str
    priority_class: str
    executor: str
    node: str
    pool: str
    state: str
    requests: dict[str, int]
    n: int


@dataclass(frozen=True)
class NodeRow:
    executor: str
    name: str
    pool: str
    allocatable: dict[str, int]
    farm: dict[str, int]  # allocatable less what non-Armada pods use
    schedulable: bool  # not unschedulable, its executor live and not cordoned


@dataclass(frozen=True)
class ExecutorRow:
    id: str
    cordoned: bool
    cordon_reason: str


@dataclass
class ScrapeData:
    now: datetime
    queues: list[QueueRow]
    jobs: list[JobGroup]
    runs: list[RunGroup]
    nodes: list[NodeRow]
    executors: list[ExecutorRow]

    @property
    def pools(self) -> list[str]:
        return [p.name for p in settings.ARMADA.scheduling.pools]

    def queued(self) -> list[JobGroup]:
        return [g for g in self.jobs if g.state == JobState.QUEUED]

    def capacity(self, pool: str) -> dict[str, int]:
        """The pool's schedulable capacity (milli-units), as the scheduler sees it."""
        out: dict[str, int] = {}
        for node in self.nodes:
            if node.pool == pool and node.schedulable:
                for r, v in node.farm.items():
                    out[r] = out.get(r, 0) + v
        return out


def scrape_read(*, now: datetime) -> ScrapeData:
    from armada.models import Executor, Job, Node, Queue, Run

    queues = [
        QueueRow(name, factor, labels or {}, cordoned)
        for name, factor, labels, cordoned in Queue.objects.order_by("name").values_list(
            "name", "priority_factor", "labels", "cordoned"
        )
    ]
    live = [s.value for s in JobState if not s.terminal]
    jobs = [
        JobGroup(r["queue"], r["state"], r["priority_class"], _requests(r["requests"]), r["n"])
        for r in Job.objects.filter(state__in=live)
        .values("queue", "state", "priority_class", "requests")
        .annotate(n=Count("id"))
        .order_by()
    ]
    fields = ("job__queue", "job__priority_class", "executor", "node", "pool", "state")
    runs = [
        RunGroup(*(r[f] for f in fields), _requests(r["requests"]), r["n"])
        for r in Run.objects.filter(state__in=ACTIVE_RUNS)
        .values(*fields, "requests")
        .annotate(n=Count("id"))
        .order_by()
    ]
    cutoff = now - timedelta(seconds=settings.ARMADA.executor_timeout)
    executors, usable = [], set()
    for id_, cordoned, reason, heartbeat in Executor.objects.order_by("id").values_list(
        "id", "cordoned", "cordon_reason", "last_heartbeat"
    ):
        executors.append(ExecutorRow(id_, cordoned, reason))
        if not cordoned and heartbeat >= cutoff:
            usable.add(id_)
    nodes = []
    for executor, name, pool, allocatable, unschedulable, others in Node.objects.order_by(
        "executor_id", "name"
    ).values_list(
        "executor_id", "name", "pool", "allocatable", "unschedulable", "non_armada_allocated"
    ):
        total = _requests(allocatable)
        nodes.append(
            NodeRow(
                executor,
                name,
                pool,
                total,
                armada_allocatable(total, others),
                not unschedulable and executor in usable,
            )
        )
    return ScrapeData(now, queues, jobs, runs, nodes, executors)
