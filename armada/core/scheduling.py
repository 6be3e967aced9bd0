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

Gangs: jobs of one queue with the same ``gang_id`` are one unit, taken when the first of
them comes up in the queue's order. Every member is tried on a scratch copy of the free
space; either all are leased or none is, and then all carry the same reason. A gang waits
while fewer members than ``gang_cardinality`` are queued (more than that is refused too). A
uniformity label restricts the gang to nodes sharing one value of that label (values tried
in sorted order; nodes without the label are never used); the label must be in
``indexed_node_labels`` or the gang cannot start. The whole gang is charged to its queue in
one turn, and it must fit under the round's lease limit as a whole.

Urgency preemption: a job that found no free room (not one that matches no node or is too
big) may evict ``running`` jobs that are preemptible and strictly less urgent, all on one
node: for each node the victims are taken lowest urgency first, then newest (greatest id)
first, until the job fits; the node needing the fewest evictions wins (ties: node order).
Evicting a member of a running gang evicts the whole gang (all members count, and the gang
is spared if any member may not be evicted). A queued gang that finds no room is retried the
same way member by member on a scratch copy, and evicts nothing unless every member fits.

Fair-share preemption (after placement, unless switched off): shares are split among active
queues (queued or running jobs; a cordoned queue only if it has running jobs) by weight
``1 / priority_factor``. Jobs left with "no node has enough free resources" are retried,
lowest weighted cost queue first, if their queue stays within its share with them; room is
taken from preemptible jobs (newest first) of queues above their share, never taking a queue
below ``protected_fraction`` of its share and never evicting from a queue already at or
below its share; a job is only evicted when the waiting job is then placed on that node.
A gang refused for want of room is retried the same way, as a whole.

Modules: ``snapshot`` (the objects and reasons), ``gangs`` and ``preemption`` (parts of the
round's state), ``synthetic`` (a busy pool for timing a round).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence

from armada.core.fairshare import dominant_share, weighted_cost
from armada.core.gangs import GangMixin
from armada.core.preemption import PreemptionMixin
from armada.core.quantity import Resources
from armada.core.snapshot import (
    REASON_CORDONED,
    REASON_NO_MATCH,
    REASON_NO_RESOURCES,
    REASON_ROUND_LIMIT,
    REASON_TOO_BIG,
    Lease,
    NodeState,
    QueuedJob,
    QueueState,
    RoundResult,
    RunningJob,
    Taint,
    Toleration,
    _add_into,
    _first_fit,
    _NodeView,
    _shape,
    _ShapeScan,
    node_matches,
    reason_fair_share_preempted,
    reason_gang_incomplete,
    reason_gang_label_not_indexed,
    reason_gang_no_fit,
    reason_gang_no_uniform_fit,
    reason_gang_oversized,
    reason_urgency_preempted,
    static_fit,
)
from armada.core.synthetic import synthetic_snapshot

# The round and the objects it works on, importable from here.
__all__ = [
    "Lease",
    "node_matches",
    "NodeState",
    "QueuedJob",
    "QueueState",
    "REASON_CORDONED",
    "reason_fair_share_preempted",
    "reason_gang_incomplete",
    "reason_gang_label_not_indexed",
    "reason_gang_no_fit",
    "reason_gang_no_uniform_fit",
    "reason_gang_oversized",
    "REASON_NO_MATCH",
    "REASON_NO_RESOURCES",
    "REASON_ROUND_LIMIT",
    "REASON_TOO_BIG",
    "reason_urgency_preempted",
    "RoundResult",
    "RunningJob",
    "schedule_round",
    "static_fit",
    "synthetic_snapshot",
    "Taint",
    "Toleration",
]


class _Round(GangMixin, PreemptionMixin):
    """The mutable state of one round: free space per node, what each queue uses, what has
    been leased and evicted so far."""

    def __init__(
        self,
        nodes: Sequence[NodeState],
        queue_state: Mapping[str, QueueState],
        capacity: Resources,
        running: Sequence[RunningJob],
        result: RoundResult,
        max_leases: int,
    ) -> None:
        self.result = result
        self.capacity = capacity
        self.queue_state = queue_state
        self.max_leases = max_leases
        # Fullest nodes first (by dominant share of the node already allocated), so that jobs
        # pack onto busy nodes and leave whole nodes free for big jobs.
        self.views = sorted(
            (_NodeView(n) for n in nodes),
            key=lambda v: (-dominant_share(v.node.allocated, v.node.allocatable), v.node.id),
        )
        self.view_index = {v.node.id: i for i, v in enumerate(self.views)}
        self.scans: dict[tuple, _ShapeScan] = {}
        self.allocated: dict[str, Resources] = {q.name: q.allocated for q in queue_state.values()}
        # Running jobs per node, in urgency-preemption order: lowest urgency first, then the
        # most recently started (greatest id) first.
        by_node: dict[str, list[RunningJob]] = {}
        self.running_gangs: dict[tuple[str, str], list[RunningJob]] = {}
        for r in sorted(running, key=lambda r: r.id, reverse=True):
            by_node.setdefault(r.node_id, []).append(r)
            if r.gang_id:
                self.running_gangs.setdefault((r.queue, r.gang_id), []).append(r)
        for rs in by_node.values():
            rs.sort(key=lambda r: r.urgency)
        self.running_by_node = by_node
        self.min_preemptible_urgency = min(
            (r.urgency for r in running if r.preemptible), default=None
        )
        self.evicted: set[str] = set()
        self.urgency_failures: set[tuple] = set()
        self.fair_victims: dict[str, list[RunningJob]] = {}
        self.costs: dict[str, float] = {}

    # --- leasing and evicting ------------------------------------------------------------

    def place(self, job: QueuedJob, view: _NodeView) -> None:
        node = view.node
        view.take(job.requests)
        self.allocated[job.queue] = self.allocated[job.queue] + job.requests
        self.costs.pop(job.queue, None)
        self.result.unschedulable.pop(job.id, None)
        self.result.leases.append(
            Lease(
                job_id=job.id,
                queue=job.queue,
                executor=node.executor,
                node=node.name,
                node_id=node.id,
            )
        )

    def eviction_group(self, r: RunningJob) -> list[RunningJob]:
        """Evicting one member of a running gang evicts the whole gang."""
        if r.gang_id:
            return [m for m in self.running_gangs[(r.queue, r.gang_id)] if m.id not in self.evicted]
        return [r]

    def evict(self, group: Iterable[RunningJob], reason: str) -> None:
        touched: set[str] = set()
        for r in group:
            touched.add(r.node_id)
            self.evicted.add(r.id)
            self.result.preempted[r.id] = reason
            if r.queue in self.allocated:
                self.allocated[r.queue] = self.allocated[r.queue] - r.requests
                self.costs.pop(r.queue, None)
            i = self.view_index.get(r.node_id)
            if i is None:
                continue
            view = self.views[i]
            view.node.allocated = view.node.allocated - r.requests
            _add_into(view.free, r.requests)
            # Free space grew on this node: shape scans that went past it must look again.
            for scan in self.scans.values():
                if scan.cursor > i:
                    scan.cursor = i
        # Drop the evicted from the per-node candidate lists, so later searches skip them.
        evicted = self.evicted
        for node_id in touched:
            for lists in (self.running_by_node, self.fair_victims):
                if node_id in lists:
                    lists[node_id] = [r for r in lists[node_id] if r.id not in evicted]
        self.urgency_failures.clear()

    def plan(
        self,
        job: QueuedJob,
        view: _NodeView,
        candidates: Iterable[RunningJob],
        accept: Callable[[list[RunningJob]], bool],
        limit: int | None = None,
        free: Mapping[str, int] | None = None,
        excluded: Iterable[str] = (),
    ) -> list[RunningJob] | None:
        """The running jobs to evict (whole gangs at a time, in ``candidates`` order, each
        group only if ``accept`` allows it) so that ``job`` fits on ``view``; None if none,
        or if it would take more than ``limit`` evictions. ``free`` and ``excluded`` (jobs
        already chosen for eviction) let a gang plan on a scratch copy."""
        if free is None:
            free = view.free
        missing = {r: v - free.get(r, 0) for r, v in job.requests.items() if v > free.get(r, 0)}
        if not missing:
            return []
        node_id = view.node.id
        chosen: list[RunningJob] = []
        seen: set[str] = set(excluded)
        evicted = self.evicted
        for r in candidates:
            if r.id in seen or r.id in evicted:
                continue
            group = self.eviction_group(r)
            if not accept(group):
                continue
            if limit is not None and len(chosen) + len(group) > limit:
                return None
            for m in group:
                seen.add(m.id)
                chosen.append(m)
                if m.node_id == node_id:
                    for k, v in m.requests.items():
                        if k in missing:
                            missing[k] -= v
            if all(v <= 0 for v in missing.values()):
                return chosen
        return None

    def candidate_views(self, job: QueuedJob) -> Iterable[_NodeView]:
        for view in self.views:
            node = view.node
            if node_matches(job, node) and job.requests.fits_in(node.allocatable):
                yield view


def schedule_round(
    *,
    nodes: Sequence[NodeState],
    queues: Sequence[QueueState],
    jobs: Iterable[QueuedJob],
    max_leases: int,
    indexed_node_labels: frozenset[str] = frozenset(),
    running: Sequence[RunningJob] = (),
    fair_share_preemption: bool = True,
    protected_fraction: float = 0.5,
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
    state = _Round(nodes, queue_state, capacity, running, result, max_leases)
    allocated = state.allocated
    heap: list[tuple[float, str]] = []
    pending: dict[str, list[QueuedJob]] = {}
    gangs: dict[str, dict[str, list[QueuedJob]]] = {}
    active: set[str] = {r.queue for r in running if r.queue in queue_state}
    for name, queue_jobs in by_queue.items():
        q = queue_state.get(name)
        if q is None:
            continue
        queue_jobs.sort(key=QueuedJob.order_key)
        if q.cordoned:
            for job in queue_jobs:
                result.unschedulable[job.id] = REASON_CORDONED
            continue
        active.add(name)
        for job in queue_jobs:
            if job.gang_id:
                gangs.setdefault(name, {}).setdefault(job.gang_id, []).append(job)
        pending[name] = list(reversed(queue_jobs))  # pop() from the end takes the first job
        heapq.heappush(heap, (weighted_cost(allocated[name], capacity, q.priority_factor), name))

    waiting: dict[str, list[list[QueuedJob]]] = {}
    scans = state.scans
    views = state.views
    while heap:
        if len(result.leases) >= max_leases:
            for rest in pending.values():
                for job in rest:
                    result.unschedulable.setdefault(job.id, REASON_ROUND_LIMIT)
            break
        _, name = heapq.heappop(heap)
        job = pending[name].pop()
        if job.gang_id:
            gang_id = job.gang_id
            pending[name] = [j for j in pending[name] if j.gang_id != gang_id]
            members = gangs[name][gang_id]
            if state.place_gang(members, indexed_node_labels):
                waiting.setdefault(name, []).append(members)
        else:
            scan = scans.setdefault(_shape(job), _ShapeScan())
            view, reason = _first_fit(job, views, scan)
            if view is not None:
                state.place(job, view)
            elif reason != REASON_NO_RESOURCES or not state.try_urgency(job):
                result.unschedulable[job.id] = reason
                if reason == REASON_NO_RESOURCES:
                    waiting.setdefault(name, []).append([job])
        if pending[name]:
            cost = weighted_cost(allocated[name], capacity, queue_state[name].priority_factor)
            heapq.heappush(heap, (cost, name))

    if fair_share_preemption and waiting and running:
        state.fair_share_pass(waiting, active, protected_fraction)
    return result
