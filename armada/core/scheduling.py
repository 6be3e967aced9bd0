"""One scheduling round over an in-memory snapshot: which queued jobs go on which nodes.

``schedule_round`` is a pure function: a snapshot of one pool (nodes with what is already
allocated on them, active queues with what they use, queued jobs) goes in, a
:class:`RoundResult` (leases and, for jobs not placed, why) comes out. The service around it
loads the snapshot and writes the result; nothing here touches a database or a clock.

Order: the queue with the lowest weighted dominant-resource cost goes next (ties by name);
within a queue, jobs go by priority-class urgency (higher first), then priority (lower
first), then submission order (the sortable job id). A job is placed on the feasible node
with the least free capacity that still fits it (bin packing keeps big holes for big jobs).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from armada.core.fairshare import weighted_cost
from armada.core.quantity import Resources

REASON_NO_RESOURCES = "no node has enough free resources"
REASON_TOO_BIG = "the job requests more than any node in the pool can offer"
REASON_NO_MATCH = "no node matches the job's node selector and tolerations"
REASON_CORDONED = "queue is cordoned"
REASON_ROUND_LIMIT = "the round's job limit was reached"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass
class NodeState:
    """A node and what is already allocated on it (mutable during a round)."""

    id: str
    executor: str
    name: str
    allocatable: Resources
    allocated: Resources = field(default_factory=Resources)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Taint] = ()
    unschedulable: bool = False

    @property
    def free(self) -> Resources:
        return self.allocatable - self.allocated


@dataclass(frozen=True)
class QueueState:
    name: str
    priority_factor: float = 1.0
    cordoned: bool = False
    allocated: Resources = field(default_factory=Resources)


@dataclass(frozen=True)
class QueuedJob:
    id: str
    queue: str
    requests: Resources
    priority: int = 0
    urgency: int = 0
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[Toleration] = ()
    avoid_nodes: frozenset[str] = frozenset()

    def order_key(self) -> tuple[int, int, str]:
        return (-self.urgency, self.priority, self.id)


@dataclass(frozen=True)
class Lease:
    job_id: str
    queue: str
    executor: str
    node: str
    node_id: str


@dataclass
class RoundResult:
    leases: list[Lease] = field(default_factory=list)
    unschedulable: dict[str, str] = field(default_factory=dict)


def node_matches(job: QueuedJob, node: NodeState) -> bool:
    """Selector, taints and the nodes a retry asked to avoid (resources aside)."""
    if node.unschedulable or node.name in job.avoid_nodes:
        return False
    for key, value in job.node_selector.items():
        if node.labels.get(key) != value:
            return False
    for taint in node.taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not any(t.tolerates(taint) for t in job.tolerations):
            return False
    return True


def _best_fit(job: QueuedJob, nodes: Iterable[NodeState]) -> tuple[NodeState | None, str]:
    matched = False
    big_enough = False
    best: NodeState | None = None
    best_slack = 0.0
    for node in nodes:
        if not node_matches(job, node):
            continue
        matched = True
        if not job.requests.fits_in(node.allocatable):
            continue
        big_enough = True
        free = node.free
        if not job.requests.fits_in(free):
            continue
        slack = sum(
            (free[r] - job.requests[r]) / node.allocatable[r]
            for r in node.allocatable
            if node.allocatable[r] > 0
        )
        if best is None or slack < best_slack or (slack == best_slack and node.id < best.id):
            best, best_slack = node, slack
    if best is not None:
        return best, ""
    if not matched:
        return None, REASON_NO_MATCH
    if not big_enough:
        return None, REASON_TOO_BIG
    return None, REASON_NO_RESOURCES


def schedule_round(
    *,
    nodes: Sequence[NodeState],
    queues: Sequence[QueueState],
    jobs: Iterable[QueuedJob],
    max_leases: int,
) -> RoundResult:
    """Place as many queued jobs as fit, fairly between queues. See the module docstring."""
    result = RoundResult()
    capacity = Resources()
    for node in nodes:
        if not node.unschedulable:
            capacity = capacity + node.allocatable
    by_queue: dict[str, list[QueuedJob]] = {}
    for job in jobs:
        by_queue.setdefault(job.queue, []).append(job)
    queue_state = {q.name: q for q in queues}
    allocated: dict[str, Resources] = {}
    heap: list[tuple[float, str]] = []
    pending: dict[str, list[QueuedJob]] = {}
    for name, queue_jobs in by_queue.items():
        q = queue_state.get(name)
        if q is None:
            continue
        queue_jobs.sort(key=QueuedJob.order_key)
        if q.cordoned:
            for job in queue_jobs:
                result.unschedulable[job.id] = REASON_CORDONED
            continue
        allocated[name] = q.allocated
        pending[name] = list(reversed(queue_jobs))  # pop() from the end takes the first job
        heapq.heappush(heap, (weighted_cost(q.allocated, capacity, q.priority_factor), name))

    while heap:
        if len(result.leases) >= max_leases:
            for rest in pending.values():
                for job in rest:
                    result.unschedulable.setdefault(job.id, REASON_ROUND_LIMIT)
            break
        _, name = heapq.heappop(heap)
        job = pending[name].pop()
        node, reason = _best_fit(job, nodes)
        if node is None:
            result.unschedulable[job.id] = reason
        else:
            node.allocated = node.allocated + job.requests
            allocated[name] = allocated[name] + job.requests
            result.leases.append(
                Lease(
                    job_id=job.id,
                    queue=name,
                    executor=node.executor,
                    node=node.name,
                    node_id=node.id,
                )
            )
        if pending[name]:
            cost = weighted_cost(allocated[name], capacity, queue_state[name].priority_factor)
            heapq.heappush(heap, (cost, name))
    return result
