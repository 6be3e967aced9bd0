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

:func:`synthetic_snapshot` builds a busy pool for timing a round without any test harness.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from armada.core.fairshare import dominant_share, weighted_cost
from armada.core.quantity import Resources

REASON_NO_RESOURCES = "no node has enough free resources"
REASON_TOO_BIG = "the job requests more than any node in the pool can offer"
REASON_NO_MATCH = "no node matches the job's node selector and tolerations"
REASON_CORDONED = "queue is cordoned"
REASON_ROUND_LIMIT = "the round's job limit was reached"


def reason_gang_incomplete(queued: int, cardinality: int) -> str:
    return f"gang incomplete: {queued} of {cardinality} members queued"


def reason_gang_oversized(queued: int, cardinality: int) -> str:
    return f"gang has {queued} members queued but its cardinality is {cardinality}"


def reason_gang_label_not_indexed(label: str) -> str:
    return f"gang uniformity label {label!r} is not indexed by the scheduler; the gang cannot start"


def reason_gang_no_fit(gang_id: str, member: str, why: str) -> str:
    return f"gang {gang_id} cannot be placed as a whole (member {member}: {why})"


def reason_gang_no_uniform_fit(gang_id: str, label: str) -> str:
    return f"gang {gang_id}: no single value of node label {label!r} has room for every member"


def reason_urgency_preempted(job_id: str, urgency: int) -> str:
    return f"preempted to make room for job {job_id} of higher urgency {urgency}"


def reason_fair_share_preempted(queue: str, job_id: str, for_queue: str) -> str:
    return (
        f"queue {queue} is over its fair share; preempted to make room for job {job_id}"
        f" of queue {for_queue}"
    )


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
    gang_id: str = ""
    gang_cardinality: int = 1
    gang_uniformity_label: str = ""

    def order_key(self) -> tuple[int, int, str]:
        return (-self.urgency, self.priority, self.id)


@dataclass(frozen=True)
class Lease:
    job_id: str
    queue: str
    executor: str
    node: str
    node_id: str


@dataclass(frozen=True)
class RunningJob:
    """A job already on a node; its requests are already in that node's ``allocated`` (and
    in its queue's ``QueueState.allocated``)."""

    id: str
    queue: str
    node_id: str
    requests: Resources
    urgency: int = 0
    preemptible: bool = False
    gang_id: str = ""


@dataclass
class RoundResult:
    leases: list[Lease] = field(default_factory=list)
    unschedulable: dict[str, str] = field(default_factory=dict)
    preempted: dict[str, str] = field(default_factory=dict)


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


_EPS = 1e-9


def _fits(wanted: Iterable[tuple[str, int]], free: Mapping[str, int]) -> bool:
    return all(v <= free.get(r, 0) for r, v in wanted)


def _add_into(free: dict[str, int], requests: Resources) -> None:
    for r, v in requests.items():
        free[r] = free.get(r, 0) + v


class _Round:
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

    # --- urgency preemption --------------------------------------------------------------

    def try_urgency(self, job: QueuedJob) -> bool:
        """Evict preemptible running jobs of lower urgency on one node to make room."""
        low = self.min_preemptible_urgency
        if low is None or job.urgency <= low:
            return False
        key = (_shape(job), job.urgency)
        if key in self.urgency_failures:
            return False

        def accept(group: list[RunningJob]) -> bool:
            return all(m.preemptible and m.urgency < job.urgency for m in group)

        best: tuple[_NodeView, list[RunningJob]] | None = None
        for view in self.candidate_views(job):
            candidates = (
                r
                for r in self.running_by_node.get(view.node.id, ())
                if r.preemptible and r.urgency < job.urgency
            )
            limit = None if best is None else len(best[1]) - 1
            chosen = self.plan(job, view, candidates, accept, limit)
            if chosen is not None:
                best = (view, chosen)
                if len(chosen) <= 1:
                    break
        if best is None:
            self.urgency_failures.add(key)
            return False
        view, chosen = best
        self.evict(chosen, reason_urgency_preempted(job.id, job.urgency))
        self.place(job, view)
        return True

    # --- gangs ---------------------------------------------------------------------------

    def view_groups(self, label: str) -> list[list[_NodeView]]:
        """The nodes a gang may use together: all, or per value of its uniformity label."""
        if not label:
            return [self.views]
        groups: dict[str, list[_NodeView]] = {}
        for view in self.views:
            value = view.node.labels.get(label)
            if value is not None:
                groups.setdefault(value, []).append(view)
        return [groups[value] for value in sorted(groups)]

    def place_gang(self, members: list[QueuedJob], indexed_node_labels: frozenset[str]) -> bool:
        """All members in this round or none; every member gets the reason if none. True
        when the gang was refused for want of room (fair-share preemption may then help)."""
        first = members[0]
        gang_id, cardinality = first.gang_id, first.gang_cardinality
        label = first.gang_uniformity_label

        def fail(reason: str, for_room: bool = False) -> bool:
            for m in members:
                self.result.unschedulable[m.id] = reason
            return for_room

        if len(members) < cardinality:
            return fail(reason_gang_incomplete(len(members), cardinality))
        if len(members) > cardinality:
            return fail(reason_gang_oversized(len(members), cardinality))
        if label and label not in indexed_node_labels:
            return fail(reason_gang_label_not_indexed(label))
        if len(self.result.leases) + len(members) > self.max_leases:
            return fail(REASON_ROUND_LIMIT)
        candidates = self.view_groups(label)
        why = reason_gang_no_uniform_fit(gang_id, label) if label else ""
        evictions: list[tuple[RunningJob, QueuedJob]] = []
        for views in candidates:
            chosen, first_why = self.fit_gang(members, views)
            if chosen is not None:
                break
            why = why or first_why
        else:
            # No room as things stand: try urgency preemption for the gang as a whole.
            for views in candidates:
                found = self.fit_gang_urgency(members, views)
                if found is not None:
                    chosen, evictions = found
                    break
            else:
                return fail(why, for_room=True)
        for r, m in evictions:
            self.evict([r], reason_urgency_preempted(m.id, m.urgency))
        for m, view in zip(members, chosen, strict=True):
            self.place(m, view)
        return False

    def fit_gang_urgency(
        self, members: list[QueuedJob], views: Sequence[_NodeView]
    ) -> tuple[list[_NodeView], list[tuple[RunningJob, QueuedJob]]] | None:
        """Urgency preemption for a gang: members that find no room may evict less urgent
        preemptible running jobs, as :meth:`try_urgency` does for a lone job."""
        low = self.min_preemptible_urgency
        if low is None or all(m.urgency <= low for m in members):
            return None

        def victims_for(m: QueuedJob, view: _NodeView) -> Iterable[RunningJob]:
            return (
                r
                for r in self.running_by_node.get(view.node.id, ())
                if r.preemptible and r.urgency < m.urgency
            )

        def accept_for(m: QueuedJob, sim: dict) -> Callable[[list[RunningJob]], bool]:
            return lambda group: all(x.preemptible and x.urgency < m.urgency for x in group)

        return self.fit_gang_evicting(members, views, victims_for, accept_for, {})

    def fit_gang_evicting(
        self,
        members: list[QueuedJob],
        views: Sequence[_NodeView],
        victims_for: Callable[[QueuedJob, _NodeView], Iterable[RunningJob]],
        accept_for: Callable[[QueuedJob, dict], Callable[[list[RunningJob]], bool]],
        sim: dict,
    ) -> tuple[list[_NodeView], list[tuple[RunningJob, QueuedJob]]] | None:
        """Like :meth:`fit_gang`, but a member that finds no room may evict running jobs
        (``victims_for`` gives them in order, ``accept_for`` the rule, which may keep its
        bookkeeping in a copy of ``sim``), on the node needing fewest evictions; all on a
        scratch copy. Returns the nodes and the (evicted job, member that needed it) pairs,
        or None if some member cannot be placed even so."""
        scratch: dict[str, dict[str, int]] = {}
        excluded: set[str] = set()
        chosen: list[_NodeView] = []
        evictions: list[tuple[RunningJob, QueuedJob]] = []
        for m in members:
            wanted = list(m.requests.items())
            usable = [
                v
                for v in views
                if node_matches(m, v.node) and m.requests.fits_in(v.node.allocatable)
            ]
            target = next(
                (v for v in usable if _fits(wanted, scratch.get(v.node.id, v.free))), None
            )
            if target is None:
                best: tuple[_NodeView, list[RunningJob], dict] | None = None
                for view in usable:
                    trial = dict(sim)
                    limit = None if best is None else len(best[1]) - 1
                    found = self.plan(
                        m,
                        view,
                        victims_for(m, view),
                        accept_for(m, trial),
                        limit,
                        free=scratch.get(view.node.id, view.free),
                        excluded=excluded,
                    )
                    if found is not None:
                        best = (view, found, trial)
                        if len(found) <= 1:
                            break
                if best is None:
                    return None
                target, victims, sim = best
                for r in victims:
                    excluded.add(r.id)
                    evictions.append((r, m))
                    i = self.view_index.get(r.node_id)
                    if i is not None:
                        _add_into(
                            scratch.setdefault(r.node_id, dict(self.views[i].free)), r.requests
                        )
            free = scratch.setdefault(target.node.id, dict(target.free))
            for r, v in wanted:
                free[r] = free.get(r, 0) - v
            chosen.append(target)
        return chosen, evictions

    @staticmethod
    def fit_gang(
        members: list[QueuedJob], views: Sequence[_NodeView]
    ) -> tuple[list[_NodeView] | None, str]:
        """First fit of every member on a scratch copy of the free space."""
        scratch: dict[str, dict[str, int]] = {}
        chosen: list[_NodeView] = []
        for m in members:
            wanted = list(m.requests.items())
            matched = big_enough = False
            for view in views:
                node = view.node
                if not node_matches(m, node):
                    continue
                matched = True
                if not m.requests.fits_in(node.allocatable):
                    continue
                big_enough = True
                if _fits(wanted, scratch.get(node.id, view.free)):
                    free = scratch.setdefault(node.id, dict(view.free))
                    for r, v in wanted:
                        free[r] = free.get(r, 0) - v
                    chosen.append(view)
                    break
            else:
                why = (
                    REASON_NO_MATCH
                    if not matched
                    else REASON_TOO_BIG
                    if not big_enough
                    else REASON_NO_RESOURCES
                )
                return None, reason_gang_no_fit(m.gang_id, m.id, why)
        return chosen, ""

    # --- fair-share preemption -----------------------------------------------------------

    def cost(self, queue: str, allocated: Resources | None = None) -> float:
        """A queue's dominant share now (cached), or that of ``allocated`` if given."""
        if allocated is not None:
            return dominant_share(allocated, self.capacity)
        cost = self.costs.get(queue)
        if cost is None:
            cost = self.costs[queue] = dominant_share(self.allocated[queue], self.capacity)
        return cost

    def fair_share_pass(
        self,
        waiting: Mapping[str, list[list[QueuedJob]]],
        active: Iterable[str],
        protected_fraction: float,
    ) -> None:
        """Take room from queues over their fair share for jobs of queues below theirs that
        could not be placed; only what such a job needs, and only if it is then placed."""
        weights = {q: 1.0 / max(self.queue_state[q].priority_factor, _EPS) for q in active}
        total = sum(weights.values())
        if not total:
            return
        share = {q: w / total for q, w in weights.items()}
        # Fair-share victims per node: preemptible, newest (greatest id) first.
        victims: dict[str, list[RunningJob]] = {}
        self.fair_victims = victims
        for node_id, rs in self.running_by_node.items():
            victims[node_id] = sorted(
                (r for r in rs if r.preemptible and r.queue in share),
                key=lambda r: r.id,
                reverse=True,
            )
        cursor = {q: 0 for q, js in waiting.items() if js and q in share}
        failures: set[tuple] = set()
        while cursor and len(self.result.leases) < self.max_leases:
            over = {q for q in share if self.cost(q) > share[q] + _EPS}
            if not over and not self.evicted:
                return  # nothing to take, and no room was freed in this round
            name = min(
                cursor, key=lambda q: (self.cost(q) * self.queue_state[q].priority_factor, q)
            )
            unit = waiting[name][cursor[name]]  # one job, or a gang's members
            cursor[name] += 1
            if cursor[name] >= len(waiting[name]):
                del cursor[name]
            if len(self.result.leases) + len(unit) > self.max_leases:
                continue
            wanted = self.allocated[name]
            for job in unit:
                wanted = wanted + job.requests
            if self.cost(name, wanted) > share[name] + _EPS:
                continue  # the job would take its queue above its own share
            key = (name, tuple(_shape(job) for job in unit))
            if key in failures:
                continue
            if unit[0].gang_id:
                done = self.try_fair_share_gang(unit, over - {name}, share, protected_fraction)
            else:
                done = self.try_fair_share(unit[0], over - {name}, share, protected_fraction)
            if done:
                failures.clear()
            else:
                failures.add(key)

    def fair_accept(
        self, simulated: dict, share: Mapping[str, float], protected_fraction: float
    ) -> Callable[[list[RunningJob]], bool]:
        """The fair-share rule for evicting a group: same queue, all preemptible, the queue
        above its share before and not below ``protected_fraction`` of it after. Accepted
        groups are taken off the queue's use in ``simulated``."""

        def accept(group: list[RunningJob]) -> bool:
            queue = group[0].queue
            if queue not in simulated or not all(m.preemptible and m.queue == queue for m in group):
                return False
            if self.cost(queue, simulated[queue]) <= share[queue] + _EPS:
                return False
            after = simulated[queue]
            for m in group:
                after = after - m.requests
            if self.cost(queue, after) < protected_fraction * share[queue] - _EPS:
                return False
            simulated[queue] = after
            return True

        return accept

    def try_fair_share_gang(
        self,
        members: list[QueuedJob],
        over: set[str],
        share: Mapping[str, float],
        protected_fraction: float,
    ) -> bool:
        def victims_for(m: QueuedJob, view: _NodeView) -> Iterable[RunningJob]:
            return (r for r in self.fair_victims.get(view.node.id, ()) if r.queue in over)

        def accept_for(m: QueuedJob, sim: dict) -> Callable[[list[RunningJob]], bool]:
            return self.fair_accept(sim, share, protected_fraction)

        for views in self.view_groups(members[0].gang_uniformity_label):
            sim = {q: self.allocated[q] for q in over}
            found = self.fit_gang_evicting(members, views, victims_for, accept_for, sim)
            if found is not None:
                chosen, evictions = found
                for r, m in evictions:
                    self.evict([r], reason_fair_share_preempted(r.queue, m.id, m.queue))
                for m, view in zip(members, chosen, strict=True):
                    self.place(m, view)
                return True
        return False

    def try_fair_share(
        self,
        job: QueuedJob,
        over: set[str],
        share: Mapping[str, float],
        protected_fraction: float,
    ) -> bool:
        best: tuple[_NodeView, list[RunningJob]] | None = None
        for view in self.candidate_views(job):
            accept = self.fair_accept(
                {q: self.allocated[q] for q in over}, share, protected_fraction
            )
            candidates = (
                r for r in _victims_on(self, view.node.id, over) if r.id not in self.evicted
            )
            limit = None if best is None else len(best[1]) - 1
            chosen = self.plan(job, view, candidates, accept, limit)
            if chosen is not None:
                best = (view, chosen)
                if not chosen:
                    break
        if best is None:
            return False
        view, chosen = best
        for r in chosen:
            self.evict([r], reason_fair_share_preempted(r.queue, job.id, job.queue))
        self.place(job, view)
        return True


def _victims_on(state: _Round, node_id: str, over: set[str]) -> Iterable[RunningJob]:
    return (r for r in state.fair_victims.get(node_id, ()) if r.queue in over)


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


def static_fit(job: QueuedJob, nodes: Sequence[NodeState]) -> bool:
    """Whether any node could ever take ``job``: it matches the node (:func:`node_matches`)
    and the job's requests fit the node's allocatable. What is already allocated on the
    nodes, and fair share, are ignored: this is the probe for "could never schedule"."""
    return any(node_matches(job, n) and job.requests.fits_in(n.allocatable) for n in nodes)


def synthetic_snapshot(
    node_count: int = 10,
    queue_count: int = 10,
    job_count: int = 3200,
    running_per_node: int = 64,
) -> dict:
    """Keyword arguments for a deterministic, busy :func:`schedule_round`, for timing it
    (the caller holds the clock): ``schedule_round(**synthetic_snapshot())``.

    Queue ``q0`` fills every 64-cpu node with 1-cpu preemptible running jobs of urgency 0-2;
    ``job_count`` queued jobs of 1-3 cpu and urgency 0-4 are spread over the queues, so the
    round places jobs and does both urgency and fair-share preemption.
    """
    one = Resources.parse({"cpu": "1", "memory": "2Gi"})
    node_list = [
        NodeState(
            id=f"ex/node-{i}",
            executor="ex",
            name=f"node-{i}",
            allocatable=Resources.parse({"cpu": "64", "memory": "256Gi"}),
        )
        for i in range(node_count)
    ]
    running = []
    for n, node in enumerate(node_list):
        for k in range(running_per_node):
            running.append(
                RunningJob(
                    id=f"run-{n:04d}-{k:04d}",
                    queue="q0",
                    node_id=node.id,
                    requests=one,
                    urgency=k % 3,
                    preemptible=True,
                )
            )
        node.allocated = Resources({r: v * running_per_node for r, v in one.items()})
    used = Resources({r: v * running_per_node * node_count for r, v in one.items()})
    queue_list = [
        QueueState(f"q{q}", allocated=used if q == 0 else Resources()) for q in range(queue_count)
    ]
    sizes = [Resources.parse({"cpu": str(c), "memory": "2Gi"}) for c in (1, 2, 3)]
    job_list = [
        QueuedJob(
            id=f"job-{j:06d}",
            queue=f"q{j % queue_count}",
            requests=sizes[j % 3],
            urgency=(j // queue_count) % 5,
        )
        for j in range(job_count)
    ]
    return {
        "nodes": node_list,
        "queues": queue_list,
        "jobs": job_list,
        "running": running,
        "max_leases": job_count,
    }
