"""Running jobs a round may evict: per node, in the order each kind of preemption takes them,
and how many a job needs evicted on a node.

Urgency preemption takes a node's preemptible jobs lowest urgency first, then newest
(greatest id) first; fair-share preemption takes the preemptible jobs of queues with a share
newest first. Each order is kept per node (:class:`Order`, built when first needed) with
running totals per resource, so that when no running gang is involved the number of jobs to
evict is found by bisection instead of walking the jobs: the candidates of a rule are a
prefix of the order (urgency below the job's, or every job when all the node's queues may
give room). Jobs evicted from the front of an order are dropped in O(1); other evictions
rebuild the node's order when it is next used.

:func:`plan` is the walk itself (whole running gangs at a time, each only if the rule
accepts it); it decides which jobs go, and counts when the totals cannot.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import accumulate
from operator import attrgetter

from armada.core.nodeindex import Wanted
from armada.core.snapshot import RunningJob

Accept = Callable[[list[RunningJob]], bool]

_id_of = attrgetter("id")
_queue_of = attrgetter("queue")
_urgency_of = attrgetter("urgency")
_gang_of = attrgetter("gang_id")
_preemptible = attrgetter("preemptible")


class Order:
    """A node's candidates for one kind of preemption, in the order they are taken.

    ``jobs[lo:]`` holds the jobs not evicted yet when ``len(jobs) - lo == live``; otherwise
    some were evicted from the middle and the order is rebuilt when next asked for. ``keys``
    are the urgencies (urgency order only); ``totals[r][k]`` the sum of resource ``r`` over
    ``jobs[:k]``; ``queues`` the queues of the jobs; ``gangs`` whether a running gang has a
    member on the node (then evictions are counted by walking, as gangs go whole)."""

    __slots__ = ("jobs", "keys", "lo", "live", "totals", "_queues", "gangs")

    def __init__(self, jobs: list[RunningJob], keys: list[int] | None, gangs: bool) -> None:
        self.jobs = jobs
        self.keys = keys
        self.lo = 0
        self.live = len(jobs)
        self.totals: dict[str, list[int]] = {}
        self._queues: frozenset[str] | None = None
        self.gangs = gangs

    @property
    def queues(self) -> frozenset[str]:
        if self._queues is None:
            self._queues = frozenset(map(_queue_of, self.jobs))
        return self._queues

    def total(self, resource: str) -> list[int]:
        found = self.totals.get(resource)
        if found is None:
            found = [0]
            found.extend(accumulate(r.requests[resource] for r in self.jobs))
            self.totals[resource] = found
        return found

    def fewest(self, missing: Iterable[tuple[str, int]], eligible: int) -> int | None:
        """How many of the first ``eligible`` jobs (from ``lo``), taken in order, free
        ``missing``; None if all of them cannot. Only for an order without gangs."""
        lo = self.lo
        hi = lo + eligible + 1
        count = 0  # nothing missing: nothing to evict
        for r, need in missing:
            totals = self.total(r)
            k = bisect_left(totals, totals[lo] + need, lo, hi)
            if k >= hi:
                return None
            if k - lo > count:
                count = k - lo
        return count


class Victims:
    """Running jobs of a round by node, and what has been evicted; see the module docstring.

    Grouping the running jobs by node is done once, when a preemption first needs it."""

    def __init__(self, running: Sequence[RunningJob]) -> None:
        self.running = running
        self.evicted: set[str] = set()
        self._by_node: dict[str, list[RunningJob]] | None = None
        self._gangs: dict[tuple[str, str], list[RunningJob]] = {}
        self._gang_nodes: set[str] = set()
        self._urgencies: list[int] = []
        self._min_urgency: int | None = None
        self.urgency_orders: dict[str, Order] = {}
        self.fair_orders: dict[str, Order] = {}
        self.share: frozenset[str] = frozenset()

    def _group(self) -> dict[str, list[RunningJob]]:
        running = self.running
        by_node: defaultdict[str, list[RunningJob]] = defaultdict(list)
        for r in running:
            by_node[r.node_id].append(r)
        self._by_node = dict(by_node)
        gangs: dict[tuple[str, str], list[RunningJob]] = {}
        for r in filter(_gang_of, running):
            gangs.setdefault((r.queue, r.gang_id), []).append(r)
        for members in gangs.values():
            members.sort(key=_id_of, reverse=True)
        self._gangs = gangs
        self._gang_nodes = {r.node_id for members in gangs.values() for r in members}
        self._urgencies = sorted(set(map(_urgency_of, filter(_preemptible, running))))
        self._min_urgency = self._urgencies[0] if self._urgencies else None
        return self._by_node

    def canonical_urgency(self, urgency: int) -> int:
        """The least urgency that may evict exactly what ``urgency`` may: one above the
        greatest urgency of a preemptible running job below it (urgencies between give the
        same candidates, so they share one search)."""
        if self._by_node is None:
            self._group()
        urgencies = self._urgencies
        k = bisect_left(urgencies, urgency)
        return urgencies[k - 1] + 1 if k else urgency

    @property
    def by_node(self) -> dict[str, list[RunningJob]]:
        return self._by_node if self._by_node is not None else self._group()

    @property
    def min_preemptible_urgency(self) -> int | None:
        if self._by_node is None:
            self._group()
        return self._min_urgency

    def group(self, r: RunningJob) -> list[RunningJob]:
        """Evicting one member of a running gang evicts the whole gang."""
        if r.gang_id:
            evicted = self.evicted
            return [m for m in self.gangs()[(r.queue, r.gang_id)] if m.id not in evicted]
        return [r]

    def gangs(self) -> dict[tuple[str, str], list[RunningJob]]:
        """Running gangs: (queue, gang id) -> members, newest first."""
        if self._by_node is None:
            self._group()
        return self._gangs

    # --- the orders ----------------------------------------------------------------------

    def _current(self, orders: dict[str, Order], node_id: str) -> Order | None:
        order = orders.get(node_id)
        if order is None:
            return None
        jobs, evicted = order.jobs, self.evicted
        lo = order.lo
        while lo < len(jobs) and jobs[lo].id in evicted:
            lo += 1
        order.lo = lo
        if len(jobs) - lo != order.live:
            del orders[node_id]
            return None
        return order

    def urgency_order(self, node_id: str) -> Order:
        """Preemptible jobs on the node, lowest urgency first, then newest first."""
        order = self._current(self.urgency_orders, node_id)
        if order is None:
            evicted = self.evicted
            jobs = [
                r for r in self.by_node.get(node_id, ()) if r.preemptible and r.id not in evicted
            ]
            jobs.sort(key=_id_of, reverse=True)
            jobs.sort(key=_urgency_of)
            order = Order(jobs, list(map(_urgency_of, jobs)), node_id in self._gang_nodes)
            self.urgency_orders[node_id] = order
        return order

    def fair_order(self, node_id: str) -> Order:
        """Preemptible jobs on the node of queues with a share (:attr:`share`), newest
        first."""
        order = self._current(self.fair_orders, node_id)
        if order is None:
            evicted, share = self.evicted, self.share
            jobs = [
                r
                for r in self.by_node.get(node_id, ())
                if r.preemptible and r.queue in share and r.id not in evicted
            ]
            jobs.sort(key=_id_of, reverse=True)
            order = Order(jobs, None, node_id in self._gang_nodes)
            self.fair_orders[node_id] = order
        return order

    def remove(self, r: RunningJob) -> None:
        """``r`` was evicted (it is already in :attr:`evicted`)."""
        order = self.urgency_orders.get(r.node_id)
        if order is not None:
            order.live -= 1
        if r.queue in self.share:
            order = self.fair_orders.get(r.node_id)
            if order is not None:
                order.live -= 1

    # --- counting ------------------------------------------------------------------------

    def urgency_victims(
        self, node_id: str, wanted: Wanted, free: Mapping[str, int], urgency: int
    ) -> list[RunningJob] | None:
        """The jobs (less urgent than ``urgency``) to evict on the node so that ``wanted``
        fits; None if they cannot make room."""
        missing = missing_for(wanted, free)
        order = self.urgency_order(node_id)
        stop = bisect_left(order.keys, urgency, order.lo)
        if order.gangs:
            return self._walk_urgency(order, missing, node_id, stop, urgency)
        count = order.fewest(missing, stop - order.lo)
        return None if count is None else order.jobs[order.lo : order.lo + count]

    def urgency_first(self, node_id: str, count: int) -> list[RunningJob] | None:
        """The first ``count`` jobs of the node's urgency order, when that is what
        :meth:`urgency_victims` would give (no running gang on the node); else None."""
        order = self.urgency_order(node_id)
        if order.gangs:
            return None
        return order.jobs[order.lo : order.lo + count]

    def urgency_count(
        self, node_id: str, wanted: Wanted, free: Mapping[str, int], urgency: int
    ) -> int | None:
        """How many jobs :meth:`urgency_victims` would evict."""
        missing = missing_for(wanted, free)
        order = self.urgency_order(node_id)
        stop = bisect_left(order.keys, urgency, order.lo)
        if order.gangs:
            chosen = self._walk_urgency(order, missing, node_id, stop, urgency)
            return None if chosen is None else len(chosen)
        return order.fewest(missing, stop - order.lo)

    def _walk_urgency(
        self, order: Order, missing: list[tuple[str, int]], node_id: str, stop: int, urgency: int
    ) -> list[RunningJob] | None:
        candidates = order.jobs[order.lo : stop]
        return plan(missing, node_id, candidates, urgency_accept(urgency), self)

    def fair_victims(
        self, node_id: str, wanted: Wanted, free: Mapping[str, int], over: frozenset[str]
    ) -> list[RunningJob] | None:
        """The jobs of the queues in ``over`` to evict on the node so that ``wanted`` fits,
        newest first, when the fair-share rule accepts every group of those queues (see
        ``PreemptionMixin.fair_rule_is_static``); None if they cannot make room."""
        missing = missing_for(wanted, free)
        order = self.fair_order(node_id)
        if order.gangs or not order.queues <= over:
            return self._walk_fair(order, missing, node_id, over)
        count = order.fewest(missing, order.live)
        return None if count is None else order.jobs[order.lo : order.lo + count]

    def fair_count(
        self, node_id: str, wanted: Wanted, free: Mapping[str, int], over: frozenset[str]
    ) -> int | None:
        """How many jobs :meth:`fair_victims` would evict."""
        missing = missing_for(wanted, free)
        order = self.fair_order(node_id)
        if order.gangs or not order.queues <= over:
            chosen = self._walk_fair(order, missing, node_id, over)
            return None if chosen is None else len(chosen)
        return order.fewest(missing, order.live)

    def _walk_fair(
        self, order: Order, missing: list[tuple[str, int]], node_id: str, over: frozenset[str]
    ) -> list[RunningJob] | None:
        candidates = (r for r in order.jobs[order.lo :] if r.queue in over)
        return plan(missing, node_id, candidates, same_queue_preemptible, self)


def missing_for(wanted: Wanted, free: Mapping[str, int]) -> list[tuple[str, int]]:
    """What ``wanted`` lacks in ``free``, per resource."""
    out = []
    for r, v in wanted:
        have = free.get(r, 0)
        if v > have:
            out.append((r, v - have))
    return out


def urgency_accept(urgency: int) -> Accept:
    def accept(group: list[RunningJob]) -> bool:
        return all(m.preemptible and m.urgency < urgency for m in group)

    return accept


def same_queue_preemptible(group: list[RunningJob]) -> bool:
    queue = group[0].queue
    return all(m.preemptible and m.queue == queue for m in group)


def plan(
    missing: list[tuple[str, int]],
    node_id: str,
    candidates: Iterable[RunningJob],
    accept: Accept,
    victims: Victims,
    limit: int | None = None,
    excluded: Iterable[str] = (),
) -> list[RunningJob] | None:
    """The running jobs to evict (whole gangs at a time, in ``candidates`` order, each group
    only if ``accept`` allows it) to free ``missing`` on the node; None if they cannot, or
    if it would take more than ``limit`` evictions. ``excluded`` (jobs already chosen for
    eviction) lets a gang plan on a scratch copy."""
    if not missing:
        return []
    need = dict(missing)
    left = len(need)
    chosen: list[RunningJob] = []
    seen: set[str] = set(excluded)
    evicted = victims.evicted
    for r in candidates:
        if r.id in seen or r.id in evicted:
            continue
        group = victims.group(r) if r.gang_id else [r]
        if not accept(group):
            continue
        if limit is not None and len(chosen) + len(group) > limit:
            return None
        for m in group:
            seen.add(m.id)
            chosen.append(m)
            if m.node_id == node_id:
                for k, v in m.requests.to_dict().items():
                    if k in need and need[k] > 0:
                        need[k] -= v
                        if need[k] <= 0:
                            left -= 1
        if left <= 0:
            return chosen
    return None
