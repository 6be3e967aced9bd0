"""Preemption within a round: urgent jobs evicting less urgent preemptible ones, and
queues over their fair share giving room to waiting queues. A mixin of the round's state
(``scheduling._Round``); the rules are in the ``scheduling`` module docstring.

The node needing the fewest evictions is found with the searches of ``nodeindex`` when the
rule deciding which running jobs may go does not change during the search: always for
urgency preemption; for fair-share preemption when every queue that may give room stays
above its share (and above its protected fraction) whatever one node gives
(:meth:`PreemptionMixin.fair_rule_is_static`). Otherwise the nodes are walked one by one as
the rule demands.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping

from armada.core.fairshare import dominant_share
from armada.core.limits import SCOPE_ROUND
from armada.core.nodeindex import FewestSearch, NodeIndex, NodeView, ShapeScan, Wanted
from armada.core.quantity import Resources
from armada.core.snapshot import (
    _EPS,
    QueuedJob,
    QueueState,
    RoundResult,
    RunningJob,
    _shape,
    reason_fair_share_preempted,
    reason_urgency_preempted,
)
from armada.core.victims import Accept, Victims, missing_for, plan, urgency_accept

Allocation = dict[str, int]


def minus(allocated: Mapping[str, int], requests: Resources) -> Allocation:
    out = dict(allocated)
    for r, v in requests.to_dict().items():
        out[r] = out.get(r, 0) - v
    return out


class PreemptionMixin:
    # Provided by the round (``scheduling._Round``), with ``place``, ``evict`` and ``held``
    # (the round's limits, ``core.limits``); and
    # ``fit_gang_evicting`` by ``gangs.GangMixin``.
    index: NodeIndex
    victims: Victims
    result: RoundResult
    capacity: Mapping[str, int]
    queue_state: Mapping[str, QueueState]
    allocated: dict[str, Allocation]
    costs: dict[str, float]
    changes: int  # grows with every placement and eviction
    max_leases: int
    share: Mapping[str, float]
    protected_fraction: float
    _fair_bound: dict[str, Allocation] | None
    # --- urgency preemption --------------------------------------------------------------

    def urgency_search(self, scan: ShapeScan, urgency: int) -> FewestSearch:
        urgency = self.victims.canonical_urgency(urgency)
        key = (scan, "urgency", urgency)
        found = self.index.searches.get(key)
        if found is not None:
            return found
        victims, wanted = self.victims, scan.wanted

        def count(view: NodeView) -> int | None:
            return victims.urgency_count(view.node.id, wanted, view.free, urgency)

        found = self.index.searches[key] = FewestSearch(scan, count)
        return found

    def urgency_plan(
        self,
        view: NodeView,
        wanted: Wanted,
        urgency: int,
        free: Mapping[str, int] | None = None,
        excluded: Iterable[str] = (),
        limit: int | None = None,
    ) -> list[RunningJob] | None:
        """Which jobs go, less urgent than ``urgency``, so that ``wanted`` fits on the node
        (``free`` and ``excluded``: a gang's scratch copy)."""
        node_id = view.node.id
        order = self.victims.urgency_order(node_id)
        candidates = order.jobs[order.lo : bisect_left(order.keys, urgency, order.lo)]
        missing = missing_for(wanted, view.free if free is None else free)
        accept = urgency_accept(urgency)
        return plan(missing, node_id, candidates, accept, self.victims, limit, excluded)

    def try_urgency(self, job: QueuedJob, scan: ShapeScan) -> bool:
        """Evict preemptible running jobs of lower urgency on one node to make room."""
        low = self.victims.min_preemptible_urgency
        if low is None or job.urgency <= low:
            return False
        found = self.urgency_search(scan, job.urgency).best(self.index)
        if found is None:
            return False
        view = self.index.views[found[1]]
        node_id = view.node.id
        chosen = self.victims.urgency_first(node_id, found[0])
        if chosen is None:
            chosen = self.victims.urgency_victims(node_id, scan.wanted, view.free, job.urgency)
            if chosen is None:  # never: the search counted them
                return False
        self.evict(chosen, reason_urgency_preempted(job.id, job.urgency), job.id)
        self.place(job, view)
        return True

    # --- fair-share preemption -----------------------------------------------------------

    def cost(self, queue: str, allocated: Mapping[str, int] | None = None) -> float:
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
        self.share = share
        self.protected_fraction = protected_fraction
        self.victims.share = frozenset(share)
        self.victims.fair_orders.clear()
        cursor = {q: 0 for q, js in waiting.items() if js and q in share}
        failures: set[tuple] = set()
        seen = -1  # the round's ``changes`` when ``over`` and ``name`` were last worked out
        over: set[str] = set()
        name = ""
        while cursor and len(self.result.leases) < self.max_leases:
            if seen != self.changes or name not in cursor:
                # Shares only move when something is placed or evicted.
                if seen != self.changes:
                    over = {q for q in share if self.cost(q) > share[q] + _EPS}
                    if not over and not self.victims.evicted:
                        return  # nothing to take, and no room was freed in this round
                    seen = self.changes
                factors = self.queue_state
                name = min(cursor, key=lambda q: (self.cost(q) * factors[q].priority_factor, q))
            unit = waiting[name][cursor[name]]  # one job, or a gang's members
            cursor[name] += 1
            if cursor[name] >= len(waiting[name]):
                del cursor[name]
            if len(self.result.leases) + len(unit) > self.max_leases:
                continue
            scope = self.held(unit)
            if scope == SCOPE_ROUND:
                return
            if scope:
                continue  # a limit holds it now (the round placed others meanwhile)
            wanted = self.allocated[name]
            for job in unit:
                wanted = _plus(wanted, job.requests)
            if self.cost(name, wanted) > share[name] + _EPS:
                continue  # the job would take its queue above its own share
            key = (name, tuple(_shape(job) for job in unit))
            if key in failures:
                continue
            if unit[0].gang_id:
                done = self.try_fair_share_gang(unit, over - {name})
            else:
                done = self.try_fair_share(unit[0], key[1][0], over - {name})
            if done:
                failures.clear()
            else:
                failures.add(key)

    def fair_accept(self, simulated: dict[str, Allocation]) -> Accept:
        """The fair-share rule for evicting a group: same queue, all preemptible, the queue
        above its share before and not below ``protected_fraction`` of it after. Accepted
        groups are taken off the queue's use in ``simulated``."""
        share, protected_fraction = self.share, self.protected_fraction

        def accept(group: list[RunningJob]) -> bool:
            queue = group[0].queue
            if queue not in simulated or not all(m.preemptible and m.queue == queue for m in group):
                return False
            if self.cost(queue, simulated[queue]) <= share[queue] + _EPS:
                return False
            after = simulated[queue]
            for m in group:
                after = minus(after, m.requests)
            if self.cost(queue, after) < protected_fraction * share[queue] - _EPS:
                return False
            simulated[queue] = after
            return True

        return accept

    def fair_bound(self) -> dict[str, Allocation]:
        """Per queue, the most (per resource) that evicting on any one node can take from it:
        its preemptible jobs on that node, with whole running gangs for any member there."""
        if self._fair_bound is None:
            share = self.share
            gangs = self.victims.gangs()
            gang_totals: dict[tuple[str, str], Allocation] = {}
            for key, members in gangs.items():
                total: Allocation = {}
                for m in members:
                    for r, v in m.requests.to_dict().items():
                        total[r] = total.get(r, 0) + v
                gang_totals[key] = total
            per_node: dict[tuple[str, str], Allocation] = {}
            for r in self.victims.running:
                if not r.preemptible or r.queue not in share:
                    continue
                amounts = gang_totals[(r.queue, r.gang_id)] if r.gang_id else r.requests.to_dict()
                acc = per_node.setdefault((r.node_id, r.queue), {})
                for k, v in amounts.items():
                    acc[k] = acc.get(k, 0) + v
            bound: dict[str, Allocation] = {}
            for (_, queue), acc in per_node.items():
                most = bound.setdefault(queue, {})
                for k, v in acc.items():
                    if v > most.get(k, 0):
                        most[k] = v
            self._fair_bound = bound
        return self._fair_bound

    def fair_rule_is_static(self, over: Iterable[str], sim: Mapping[str, Allocation]) -> bool:
        """Whether, starting from ``sim``, the fair-share rule accepts every group of the
        queues in ``over`` whatever is evicted on one node: each such queue stays above its
        share and its protected fraction after losing the most one node can give. Then the
        number of evictions a node needs depends on that node only."""
        bound = self.fair_bound()
        share, protected = self.share, self.protected_fraction
        for q in over:
            most = bound.get(q)
            if not most:
                continue
            low = {r: v - most.get(r, 0) for r, v in sim[q].items()}
            c = dominant_share(low, self.capacity)
            if not (c > share[q] + _EPS and c >= protected * share[q] - _EPS):
                return False
        return True

    def fair_search(self, scan: ShapeScan, over: frozenset[str]) -> FewestSearch:
        key = (scan, "fair", over)
        found = self.index.searches.get(key)
        if found is not None:
            return found
        victims, wanted = self.victims, scan.wanted

        def count(view: NodeView) -> int | None:
            return victims.fair_count(view.node.id, wanted, view.free, over)

        found = self.index.searches[key] = FewestSearch(scan, count)
        return found

    def fair_plan(
        self,
        view: NodeView,
        wanted: Wanted,
        over: set[str] | frozenset[str],
        sim: dict[str, Allocation],
        limit: int | None = None,
        free: Mapping[str, int] | None = None,
        excluded: Iterable[str] = (),
    ) -> list[RunningJob] | None:
        """Which jobs of the queues in ``over`` go so that ``wanted`` fits on the node,
        newest first, by the fair-share rule (``sim`` is updated with what they take)."""
        node_id = view.node.id
        order = self.victims.fair_order(node_id)
        candidates = (r for r in order.jobs[order.lo :] if r.queue in over)
        missing = missing_for(wanted, view.free if free is None else free)
        return plan(
            missing, node_id, candidates, self.fair_accept(sim), self.victims, limit, excluded
        )

    def givers(self, over: Iterable[str]) -> frozenset[str]:
        """The queues of ``over`` that have preemptible jobs running somewhere."""
        bound = self.fair_bound()
        return frozenset(q for q in over if bound.get(q))

    def try_fair_share_gang(self, members: list[QueuedJob], over: set[str]) -> bool:
        for group in self.index.groups(members[0].gang_uniformity_label):
            sim = {q: self.allocated[q] for q in over}
            found = self.fit_gang_evicting(members, group, False, over, sim)
            if found is not None:
                chosen, evictions = found
                self.evict_each(
                    [
                        (r, reason_fair_share_preempted(r.queue, m.id, m.queue), m.id)
                        for r, m in evictions
                    ]
                )
                for m, view in zip(members, chosen, strict=True):
                    self.place(m, view)
                return True
        return False

    def try_fair_share(self, job: QueuedJob, shape: tuple, over: set[str]) -> bool:
        index = self.index
        scan = index.scan(job, shape)
        view = index.first_fit(scan)  # room freed earlier in the round: no eviction needed
        chosen: list[RunningJob] | None = []
        if view is None:
            givers = self.givers(over)
            if not givers:
                return False
            if self.fair_rule_is_static(givers, self.allocated):
                found = self.fair_search(scan, givers).best(index)
                if found is None:
                    return False
                view = index.views[found[1]]
                chosen = self.victims.fair_victims(view.node.id, scan.wanted, view.free, givers)
                if chosen is None:  # never: the search counted them
                    return False
            else:
                best = self.walk_fair(scan, givers)
                if best is None:
                    return False
                view, chosen = best
        self.evict_each(
            [(r, reason_fair_share_preempted(r.queue, job.id, job.queue), job.id) for r in chosen]
        )
        self.place(job, view)
        return True

    def walk_fair(
        self, scan: ShapeScan, over: frozenset[str]
    ) -> tuple[NodeView, list[RunningJob]] | None:
        """Every usable node in order, the rule applied as it goes (each node from the
        queues' current use): the node needing the fewest evictions."""
        best: tuple[NodeView, list[RunningJob]] | None = None
        for view in self.index.views:
            if not scan.usable(view):
                continue
            sim = {q: self.allocated[q] for q in over}
            limit = None if best is None else len(best[1]) - 1
            chosen = self.fair_plan(view, scan.wanted, over, sim, limit)
            if chosen is not None:
                best = (view, chosen)
                if not chosen:
                    break
        return best


def _plus(allocated: Mapping[str, int], requests: Resources) -> Allocation:
    out = dict(allocated)
    for r, v in requests.to_dict().items():
        out[r] = out.get(r, 0) + v
    return out
