"""One scheduling round over an in-memory snapshot: which queued jobs go on which nodes.

``schedule_round`` is a pure function: a snapshot of one pool (nodes with what is already
allocated on them, active queues with what they use, queued jobs) goes in, a
:class:`RoundResult` (leases and, for jobs not placed, why) comes out. The service around it
loads the snapshot and writes the result; nothing here touches a database or a clock.

Order: the queue with the lowest weighted dominant-resource cost goes next (ties by name);
within a queue, jobs go by priority-class urgency (higher first), then priority (lower
first), then submission order (the sortable job id). A job goes on the first node that can
take it, with nodes ordered fullest first at the start of the round: jobs pack onto busy
nodes and whole nodes stay free for big jobs.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from armada.core.fairshare import dominant_share, weighted_cost
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


class _NodeView:
    """A node's free resources as a plain dict, kept current during the round (hot loop)."""

    __slots__ = ("node", "free")

    def __init__(self, node: NodeState) -> None:
        self.node = node
        self.free = dict(node.free)

    def take(self, requests: Resources) -> None:
        self.node.allocated = self.node.allocated + requests
        for r, v in requests.items():
            self.free[r] = self.free.get(r, 0) - v


def _shape(job: QueuedJob) -> tuple:
    """Jobs of one shape can use the same nodes."""
    return (
        tuple(sorted(job.requests.items())),
        tuple(sorted(job.node_selector.items())),
        tuple(job.tolerations),
        job.avoid_nodes,
    )


@dataclass
class _ShapeScan:
    """How far the search for one job shape has got in this round.

    Within a round free space only shrinks, so a node that cannot take a shape now never
    can later in the round: the next job of the same shape resumes at ``cursor`` instead of
    starting over. That makes a round cost about (nodes x shapes + jobs), not nodes x jobs.
    """

    cursor: int = 0
    matched: bool = False
    big_enough: bool = False


def _first_fit(
    job: QueuedJob, views: Sequence[_NodeView], scan: _ShapeScan
) -> tuple[_NodeView | None, str]:
    wanted = list(job.requests.items())
    while scan.cursor < len(views):
        view = views[scan.cursor]
        node = view.node
        if node_matches(job, node):
            scan.matched = True
            allocatable = node.allocatable
            if all(v <= allocatable[r] for r, v in wanted):
                scan.big_enough = True
                free = view.free
                if all(v <= free.get(r, 0) for r, v in wanted):
                    return view, ""
        scan.cursor += 1
    if not scan.matched:
        return None, REASON_NO_MATCH
    if not scan.big_enough:
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

    # Fullest nodes first (by dominant share of the node already allocated), so that jobs
    # pack onto busy nodes and leave whole nodes free for big jobs.
    views = sorted(
        (_NodeView(n) for n in nodes),
        key=lambda v: (-dominant_share(v.node.allocated, v.node.allocatable), v.node.id),
    )
    scans: dict[tuple, _ShapeScan] = {}
    while heap:
        if len(result.leases) >= max_leases:
            for rest in pending.values():
                for job in rest:
                    result.unschedulable.setdefault(job.id, REASON_ROUND_LIMIT)
            break
        _, name = heapq.heappop(heap)
        job = pending[name].pop()
        scan = scans.setdefault(_shape(job), _ShapeScan())
        view, reason = _first_fit(job, views, scan)
        if view is None:
            result.unschedulable[job.id] = reason
        else:
            node = view.node
            view.take(job.requests)
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


def static_fit(job: QueuedJob, nodes: Sequence[NodeState]) -> bool:
    """Whether any node could ever take ``job``: it matches the node (:func:`node_matches`)
    and the job's requests fit the node's allocatable. What is already allocated on the
    nodes, and fair share, are ignored: this is the probe for "could never schedule"."""
    return any(node_matches(job, n) and job.requests.fits_in(n.allocatable) for n in nodes)
