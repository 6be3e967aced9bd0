"""Gangs within a round: all members placed together or none, on nodes sharing one value
of the uniformity label. A mixin of the round's state (``scheduling._Round``); the rules are
in the ``scheduling`` module docstring."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from armada.core.snapshot import (
    REASON_NO_MATCH,
    REASON_NO_RESOURCES,
    REASON_ROUND_LIMIT,
    REASON_TOO_BIG,
    QueuedJob,
    RunningJob,
    _add_into,
    _fits,
    _NodeView,
    node_matches,
    reason_gang_incomplete,
    reason_gang_label_not_indexed,
    reason_gang_no_fit,
    reason_gang_no_uniform_fit,
    reason_gang_oversized,
    reason_urgency_preempted,
)


class GangMixin:
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
