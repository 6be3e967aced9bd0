"""Preemption within a round: urgent jobs evicting less urgent preemptible ones, and
queues over their fair share giving room to waiting queues. A mixin of the round's state
(``scheduling._Round``); the rules are in the ``scheduling`` module docstring."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from armada.core.fairshare import dominant_share
from armada.core.quantity import Resources
from armada.core.snapshot import (
    _EPS,
    QueuedJob,
    RunningJob,
    _NodeView,
    _shape,
    reason_fair_share_preempted,
    reason_urgency_preempted,
)


class PreemptionMixin:
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


def _victims_on(state: PreemptionMixin, node_id: str, over: set[str]) -> Iterable[RunningJob]:
    return (r for r in state.fair_victims.get(node_id, ()) if r.queue in over)
