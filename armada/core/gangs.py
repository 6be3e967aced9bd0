"""Gangs within a round: all members placed together or none, on nodes sharing one value
of the uniformity label. A mixin of the round's state (``scheduling._Round``); the rules are
in the ``scheduling`` module docstring.

Every trial is made on a scratch copy of the free space of the nodes it touches (by
position); the other nodes are looked up in the round's index as for a lone job: first fit
by the shape scans, fewest evictions by the searches.
"""

from __future__ import annotations

from collections.abc import Mapping

from armada.core.nodeindex import NodeGroup, NodeIndex, NodeView, ShapeScan
from armada.core.preemption import Allocation
from armada.core.snapshot import (
    REASON_ROUND_LIMIT,
    QueuedJob,
    RoundResult,
    RunningJob,
    _shape,
    reason_gang_incomplete,
    reason_gang_label_not_indexed,
    reason_gang_no_fit,
    reason_gang_no_uniform_fit,
    reason_gang_oversized,
    reason_urgency_preempted,
)
from armada.core.victims import Victims

Evictions = list[tuple[RunningJob, QueuedJob]]


class GangMixin:
    # Provided by the round (``scheduling._Round``), with ``place`` and ``evict``; and the
    # searches and plans by ``preemption.PreemptionMixin``.
    index: NodeIndex
    victims: Victims
    result: RoundResult
    max_leases: int

    # --- gangs ---------------------------------------------------------------------------

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
        groups = self.index.groups(label)
        why = reason_gang_no_uniform_fit(gang_id, label) if label else ""
        evictions: Evictions = []
        for group in groups:
            chosen, first_why = self.fit_gang(members, group)
            if chosen is not None:
                break
            why = why or first_why
        else:
            # No room as things stand: try urgency preemption for the gang as a whole.
            low = self.victims.min_preemptible_urgency
            if low is None or all(m.urgency <= low for m in members):
                return fail(why, for_room=True)
            for group in groups:
                found = self.fit_gang_evicting(members, group, True, None, {})
                if found is not None:
                    chosen, evictions = found
                    break
            else:
                return fail(why, for_room=True)
        self.evict_each(
            [(r, reason_urgency_preempted(m.id, m.urgency), m.id) for r, m in evictions]
        )
        for m, view in zip(members, chosen, strict=True):
            self.place(m, view)
        return False

    def fit_gang(
        self, members: list[QueuedJob], group: NodeGroup | None
    ) -> tuple[list[NodeView] | None, str]:
        """First fit of every member on a scratch copy of the free space."""
        index = self.index
        scratch: dict[int, dict[str, int]] = {}
        resume: dict[int, int] = {}
        chosen: list[NodeView] = []
        for m in members:
            scan = index.scan(m, _shape(m), group)
            view = index.scratch_fit(scan, scratch, resume)
            if view is None:
                return None, reason_gang_no_fit(m.gang_id, m.id, scan.reason())
            free = scratch.setdefault(view.position, dict(view.free))
            for r, v in scan.wanted:
                free[r] = free.get(r, 0) - v
            chosen.append(view)
        return chosen, ""

    def fit_gang_evicting(
        self,
        members: list[QueuedJob],
        group: NodeGroup | None,
        urgency_rule: bool,
        over: set[str] | None,
        sim: dict[str, Allocation],
    ) -> tuple[list[NodeView], Evictions] | None:
        """Like :meth:`fit_gang`, but a member that finds no room may evict running jobs, on
        the node needing fewest evictions (ties: node order), all on a scratch copy: by
        urgency (``urgency_rule``) or by fair share from the queues in ``over`` (``sim``
        holds their use and follows the evictions chosen). Returns the nodes and the
        (evicted job, member that needed it) pairs, or None if some member cannot be placed
        even so."""
        index = self.index
        views = index.views
        scratch: dict[int, dict[str, int]] = {}
        resume: dict[int, int] = {}
        excluded: set[str] = set()
        chosen: list[NodeView] = []
        evictions: Evictions = []
        low = self.victims.min_preemptible_urgency
        givers = frozenset() if urgency_rule else self.givers(over or ())
        for m in members:
            scan = index.scan(m, _shape(m), group)
            wanted = scan.wanted
            target = index.scratch_fit(scan, scratch, resume)
            if target is None:
                if urgency_rule and (low is None or m.urgency <= low):
                    return None  # nothing may be evicted for this member
                if not urgency_rule and not givers:
                    return None
                best = self._fewest_for_member(
                    m, scan, group, urgency_rule, givers, sim, scratch, excluded
                )
                if best is None:
                    return None
                position, victims, sim = best
                target = views[position]
                for r in victims:
                    excluded.add(r.id)
                    evictions.append((r, m))
                    rv = index.by_id.get(r.node_id)
                    if rv is not None:
                        free = scratch.setdefault(rv.position, dict(rv.free))
                        for k, v in r.requests.to_dict().items():
                            free[k] = free.get(k, 0) + v
            free = scratch.setdefault(target.position, dict(target.free))
            for r, v in wanted:
                free[r] = free.get(r, 0) - v
            chosen.append(target)
        return chosen, evictions

    def _fewest_for_member(
        self,
        m: QueuedJob,
        scan: ShapeScan,
        group: NodeGroup | None,
        urgency_rule: bool,
        givers: frozenset[str],
        sim: dict[str, Allocation],
        scratch: Mapping[int, dict[str, int]],
        excluded: set[str],
    ) -> tuple[int, list[RunningJob], dict[str, Allocation]] | None:
        """The node (position) needing the fewest evictions for member ``m`` and what goes
        there, with the use of the queues after it (fair share)."""
        index = self.index
        views = index.views
        wanted = scan.wanted

        def exact(
            view: NodeView, free: Mapping[str, int], limit: int | None
        ) -> tuple[list[RunningJob] | None, dict[str, Allocation]]:
            trial = dict(sim)
            if urgency_rule:
                found = self.urgency_plan(view, wanted, m.urgency, free, excluded, limit)
            else:
                found = self.fair_plan(view, wanted, givers, trial, limit, free, excluded)
            return found, trial

        # (count, position, victims, use after)
        best: tuple[int, int, list[RunningJob], dict[str, Allocation]] | None = None
        # Nodes the trial has touched: their scratch free space, exactly.
        for p in sorted(scratch):
            if group is not None and p not in group.index_of:
                continue
            view = views[p]
            if not scan.usable(view):
                continue
            found, trial = exact(view, scratch[p], None)
            if found is not None and (best is None or len(found) < best[0]):
                best = (len(found), p, found, trial)
        # The other nodes, as the round sees them.
        if urgency_rule or self.fair_rule_is_static(givers, sim):
            search = (
                self.urgency_search(scan, m.urgency)
                if urgency_rule
                else self.fair_search(scan, givers)
            )
            top = search.best(index, skip=scratch)
            if top is not None and (best is None or top < (best[0], best[1])):
                view = views[top[1]]
                found, trial = exact(view, view.free, None)
                if found is not None:  # always, the search having counted it
                    best = (top[0], top[1], found, trial)
        else:
            positions = range(len(views)) if group is None else group.positions
            for p in positions:
                if p in scratch:
                    continue
                if best is not None and best[0] <= 1 and p > best[1]:
                    break
                view = views[p]
                if not scan.usable(view):
                    continue
                limit = None if best is None else (best[0] if p < best[1] else best[0] - 1)
                found, trial = exact(view, view.free, limit)
                if found is not None:
                    best = (len(found), p, found, trial)
        if best is None:
            return None
        return best[1], best[2], best[3]
