"""One scheduling round over an in-memory snapshot: which queued jobs go on which nodes.

``schedule_round`` is a pure function: a snapshot of one pool (nodes with what is already
allocated on them, active queues with what they use, queued and running jobs) goes in, a
:class:`RoundResult` (leases, evictions and, for jobs not placed, why) comes out. The
service around it loads the snapshot and writes the result; nothing here touches a database
or a clock. The nodes' ``allocated`` is updated with what the round placed and evicted.

Input: queued jobs come in one of two forms. ``jobs``: any iterable, in any order; the round
groups them by queue, sorts each queue, and finds gang members among them; every job of a
cordoned queue gets "queue is cordoned". ``queued``: per queue name, an iterable already in
the queue's order (:meth:`QueuedJob.order_key`), pulled lazily: the round takes a queue's
next job only when that queue's turn comes (holding one job ahead per queue), so a queue of a
million jobs costs what is pulled. With it, ``gangs`` maps (queue, gang id) to every queued
member of the gang (see ``queued``). A cordoned queue's iterable is not touched at all. The
two forms decide alike; giving both is an error.

Limit: the round stops taking jobs once ``max_leases`` leases are made. Jobs it never reached
get no reason; ``RoundResult.limit_reached`` says some were left. A gang refused because it
would not fit under the limit as a whole gets "the round's job limit was reached". ``considered``
counts the distinct queued jobs the round examined (in the ``jobs`` form, with the jobs of
cordoned queues).

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

Speed: the rules above are applied without scanning every node for every job. Each job
shape keeps a cursor over the nodes (free space only grows where something is evicted); the
node needing the fewest evictions comes from a heap per shape and rule, kept current
lazily; a node's candidates for eviction are kept in order with running totals, so that
counting them is a bisection. See ``nodeindex`` and ``victims``. A round so costs about
(nodes x shapes + jobs pulled + evictions), not nodes x jobs.

Modules: ``snapshot`` (the objects and reasons), ``queued`` (the queued jobs, per queue),
``nodeindex`` (the nodes, first fit and fewest-evictions searches), ``victims`` (running
jobs that may be evicted), ``gangs`` and ``preemption`` (parts of the round's state),
``synthetic`` (a busy pool for timing a round).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from heapq import heappop, heappush

from armada.core.away import AwayMixin, AwayPlanner
from armada.core.fairshare import weighted_cost
from armada.core.gangs import GangMixin
from armada.core.limits import (
    SCOPE_QUEUE,
    SCOPE_ROUND,
    SCOPE_UNIT,
    LimitState,
    RoundLimits,
    usage_by_class,
)
from armada.core.nodeindex import NodeIndex, NodeView
from armada.core.preemption import Allocation, PreemptionMixin
from armada.core.queued import GangKey, from_jobs, from_queued
from armada.core.round_stats import node_preemptibility
from armada.core.snapshot import (
    REASON_CORDONED,
    REASON_NO_MATCH,
    REASON_NO_NODES,
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
    _shape,
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
from armada.core.victims import Victims

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
    "REASON_NO_NODES",
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


class _Round(GangMixin, PreemptionMixin, AwayMixin):
    """The mutable state of one round: the nodes and their free space (``index``), the
    running jobs and what has been evicted (``victims``), what each queue uses, and what
    has been leased so far."""

    def __init__(
        self,
        nodes: Iterable[NodeState],
        queue_state: Mapping[str, QueueState],
        capacity: Mapping[str, int],
        running: Sequence[RunningJob],
        result: RoundResult,
        max_leases: int,
        limits: LimitState,
        away: AwayPlanner,
    ) -> None:
        self.result = result
        self.limits = limits
        self.away = away
        self.capacity = capacity
        self.queue_state = queue_state
        self.max_leases = max_leases
        self.index = NodeIndex(nodes)
        self.victims = Victims(running)
        self.allocated: dict[str, Allocation] = {
            q.name: q.allocated.to_dict() for q in queue_state.values()
        }
        self.costs: dict[str, float] = {}
        self.changes = 0
        self.share: Mapping[str, float] = {}
        self.protected_fraction = 0.0
        self._fair_bound: dict[str, Allocation] | None = None

    # --- leasing and evicting ------------------------------------------------------------

    def place(self, job: QueuedJob, view: NodeView) -> None:
        node = view.node
        requests = job.requests.to_dict()
        self.index.take(view, requests)
        self.allocated[job.queue] = use = dict(self.allocated[job.queue])
        for r, v in requests.items():
            use[r] = use.get(r, 0) + v
        self.costs.pop(job.queue, None)
        self.changes += 1
        self.limits.placed(job)
        self.result.unschedulable.pop(job.id, None)
        self.result.leases.append(
            Lease(
                job_id=job.id,
                queue=job.queue,
                executor=node.executor,
                node=node.name,
                node_id=node.id,
                priority_class=job.priority_class,
            )
        )

    def evict(self, group: Iterable[RunningJob], reason: str, for_job: str = "") -> None:
        """Take ``group`` off their nodes, preempted with ``reason`` to make room for the
        queued job ``for_job``."""
        victims, index = self.victims, self.index
        group = list(group)
        self.limits.evicted(group)
        evicted, preempted = victims.evicted, self.result.preempted
        preempted_for = self.result.preempted_for
        remove = victims.remove
        self.changes += 1
        # What the jobs held, per queue and per node (usually one of each).
        by_queue: dict[str, Allocation] = {}
        by_node: dict[str, Allocation] = {}
        stats = self.result.stats
        for r in group:
            evicted.add(r.id)
            remove(r)
            preempted[r.id] = reason
            if for_job:
                preempted_for[r.id] = for_job
            requests = r.requests.to_dict()
            stats.queue(r.queue).note_evicted(requests)
            _add(by_queue, r.queue, requests)
            _add(by_node, r.node_id, requests)
        allocated, costs = self.allocated, self.costs
        for queue, amounts in by_queue.items():
            use = allocated.get(queue)
            if use is not None:
                allocated[queue] = use = dict(use)
                for k, v in amounts.items():
                    use[k] = use.get(k, 0) - v
                costs.pop(queue, None)
        for node_id, amounts in by_node.items():
            view = index.by_id.get(node_id)
            if view is not None:
                index.give(view, amounts)

    def evict_each(self, evictions: Sequence[tuple[RunningJob, str, str]]) -> None:
        """Evict each job with its reason and the job it makes room for (jobs in a row with
        one reason together)."""
        k = 0
        while k < len(evictions):
            _, reason, for_job = evictions[k]
            end = k + 1
            while end < len(evictions) and evictions[end][1:] == (reason, for_job):
                end += 1
            self.evict([r for r, _, _ in evictions[k:end]], reason, for_job)
            k = end

    def held(self, unit: list[QueuedJob]) -> str:
        """What holds ``unit`` back under the round's limits, or a pool without a
        schedulable node (every member gets the reason), as ``core.limits.SCOPE_*``; ""
        when nothing does."""
        if not self.capacity:
            found: tuple[str, str] | None = (REASON_NO_NODES, SCOPE_UNIT)
        else:
            found = self.limits.hold(unit)
        if found is None:
            return ""
        reason, scope = found
        for job in unit:
            self.result.unschedulable[job.id] = reason
        if scope == SCOPE_ROUND:
            self.result.stopped_by = reason
        return scope

    def schedule_job(self, job: QueuedJob) -> bool:
        """Place one job (evicting less urgent jobs if it must); False when it found no room
        (it then has its reason)."""
        index = self.index
        scan = index.scan(job, _shape(job))
        view = index.first_fit(scan)
        if view is not None:
            self.place(job, view)
            return True
        reason = scan.reason()
        if reason == REASON_NO_RESOURCES and self.try_urgency(job, scan):
            return True
        if self.away and self.try_away(job):
            return True
        self.result.unschedulable[job.id] = reason
        return False


def _add(totals: dict[str, Allocation], key: str, amounts: Allocation) -> None:
    found = totals.get(key)
    if found is None:
        totals[key] = dict(amounts)
    else:
        for k, v in amounts.items():
            found[k] = found.get(k, 0) + v


def schedule_round(
    *,
    nodes: Sequence[NodeState],
    queues: Sequence[QueueState],
    jobs: Iterable[QueuedJob] = (),
    queued: Mapping[str, Iterable[QueuedJob]] | None = None,
    gangs: Mapping[GangKey, Sequence[QueuedJob]] | None = None,
    max_leases: int,
    indexed_node_labels: frozenset[str] = frozenset(),
    running: Sequence[RunningJob] = (),
    fair_share_preemption: bool = True,
    protected_fraction: float = 0.5,
    clock: Callable[[], float] | None = None,
    limits: RoundLimits | None = None,
    away: AwayPlanner | None = None,
) -> RoundResult:
    """Place as many queued jobs as fit, fairly between queues. See the module docstring;
    ``limits`` (per queue and priority class, per round, per queue rate, floating resources)
    are ``core.limits``'s; ``away``, where a class's jobs may run away from home
    (``core.away``; lone jobs only, gangs stay home).

    Queued jobs come either as ``jobs`` (any order) or as ``queued`` (per queue, in order,
    pulled lazily) with ``gangs``; giving both raises ValueError. ``clock`` (seconds), if
    given, times each queue's turns for ``result.stats`` (``core.round_stats``)."""
    result = RoundResult()
    stats = result.stats
    stats.nodes = node_preemptibility(nodes, running)
    queue_state = {q.name: q for q in queues}
    if queued is None:
        pending = from_jobs(jobs, queue_state, result)
    else:
        if next(iter(jobs), None) is not None:
            raise ValueError("give queued jobs either as jobs or as queued, not both")
        pending = from_queued(queued, gangs, queue_state, result)
    total: dict[str, int] = {}
    for node in nodes:
        if not node.unschedulable:
            for r, v in node.allocatable.to_dict().items():
                total[r] = total.get(r, 0) + v
    capacity = total  # of the schedulable nodes
    limit_state = LimitState(limits or RoundLimits(), total, usage_by_class(running, queues))
    state = _Round(
        nodes,
        queue_state,
        capacity,
        running,
        result,
        max_leases,
        limit_state,
        away or AwayPlanner({}, {}),
    )
    allocated = state.allocated
    heap: list[tuple[float, str]] = []
    with_jobs: list[str] = []
    for name in pending.sources:
        if pending.pull(name):
            with_jobs.append(name)
            cost = weighted_cost(allocated[name], capacity, queue_state[name].priority_factor)
            heappush(heap, (cost, name))

    waiting: dict[str, list[list[QueuedJob]]] = {}
    while heap:
        if len(result.leases) >= max_leases:
            result.limit_reached = True
            break
        _, name = heappop(heap)
        unit = pending.take(name)
        began = clock() if clock is not None else 0.0
        leased_before = len(result.leases)
        scope = state.held(unit)
        if scope == SCOPE_ROUND:
            break
        if scope:
            pass  # held by a limit: it waits, and fair-share preemption does not help
        elif unit[0].gang_id:
            if state.place_gang(unit, indexed_node_labels):
                waiting.setdefault(name, []).append(unit)
        elif (
            not state.schedule_job(unit[0])
            and result.unschedulable[unit[0].id] == REASON_NO_RESOURCES
        ):
            waiting.setdefault(name, []).append(unit)
        spent = clock() - began if clock is not None else 0.0
        stats.queue(name).note_unit(
            position=stats.loops,
            size=len(unit),
            scheduled=len(result.leases) - leased_before == len(unit),
            seconds=spent,
        )
        limit_state.spent(name, spent)
        stats.loops += 1
        if scope != SCOPE_QUEUE and pending.pull(name):
            cost = weighted_cost(allocated[name], capacity, queue_state[name].priority_factor)
            heappush(heap, (cost, name))

    if fair_share_preemption and waiting and running:
        active = set(with_jobs)
        active.update(q for q in {r.queue for r in running} if q in queue_state)
        state.fair_share_pass(waiting, active, protected_fraction)
    state.index.write_back()
    result.considered = pending.considered
    return result
