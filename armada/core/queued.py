"""The queued jobs of a round: per queue, in the queue's order, pulled one at a time only
when the round needs that queue's next job.

A queue's jobs come from an iterator already in :meth:`QueuedJob.order_key` order; the round
holds one job ahead per queue (the queue's *head*), so that it knows which queues still have
work. A gang is taken whole when its first member comes up: its members come from the gang
mapping ((queue, gang id) -> every queued member), and the other members are skipped when
the iterator yields them later. A gang missing from the mapping is taken as the members seen
so far, that is the one that came up (so it is incomplete unless its cardinality is 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from armada.core.snapshot import (
    REASON_CORDONED,
    QueuedJob,
    QueueState,
    RoundResult,
    reason_gang_oversized,
)

GangKey = tuple[str, str]


class QueuedJobs:
    """Per-queue job sources of one round, with the gangs already taken; ``considered``
    counts the distinct jobs handed out (gang members included)."""

    def __init__(
        self,
        sources: Mapping[str, Iterator[QueuedJob]],
        gangs: Mapping[GangKey, Sequence[QueuedJob]],
        result: RoundResult,
    ) -> None:
        self.sources = sources
        self.gangs = gangs
        self.result = result
        self.heads: dict[str, QueuedJob] = {}
        self.taken: dict[GangKey, set[str]] = {}
        self.considered = 0

    def pull(self, name: str) -> bool:
        """Fetch the queue's next job as its head; False when the queue has no more."""
        source = self.sources[name]
        taken = self.taken
        for job in source:
            if job.queue != name:
                raise ValueError(f"job {job.id} of queue {job.queue} was given under queue {name}")
            if job.gang_id:
                members = taken.get((name, job.gang_id))
                if members is not None:
                    if job.id not in members:
                        self._late_member(job, members)
                    continue
            self.heads[name] = job
            return True
        return False

    def take(self, name: str) -> list[QueuedJob]:
        """The queue's head as a unit: the job alone, or its gang's members in order."""
        job = self.heads.pop(name)
        if not job.gang_id:
            self.considered += 1
            return [job]
        key = (name, job.gang_id)
        given = self.gangs.get(key)
        members = sorted(given, key=QueuedJob.order_key) if given else [job]
        for m in members:
            if m.queue != name or m.gang_id != job.gang_id:
                raise ValueError(
                    f"job {m.id} is not a member of gang {job.gang_id} of queue {name}"
                )
        ids = {m.id for m in members}
        if job.id not in ids:
            members = sorted([job, *members], key=QueuedJob.order_key)
            ids.add(job.id)
        self.taken[key] = ids
        self.considered += len(members)
        return members

    def _late_member(self, job: QueuedJob, members: set[str]) -> None:
        """A member of a gang already taken that the gang's member list did not hold: it
        gets the gang's reason, or is one member too many if the gang was leased."""
        members.add(job.id)
        self.considered += 1
        unschedulable = self.result.unschedulable
        reason = next((unschedulable[m] for m in members if m in unschedulable), None)
        if reason is None:
            reason = reason_gang_oversized(len(members), job.gang_cardinality)
        unschedulable[job.id] = reason


def from_jobs(
    jobs: Iterable[QueuedJob], queue_state: Mapping[str, QueueState], result: RoundResult
) -> QueuedJobs:
    """Sources from a flat list: grouped by queue and sorted; every job of a cordoned queue
    gets :data:`REASON_CORDONED` (and counts as considered)."""
    by_queue: dict[str, list[QueuedJob]] = {}
    for job in jobs:
        by_queue.setdefault(job.queue, []).append(job)
    sources: dict[str, Iterator[QueuedJob]] = {}
    gangs: dict[GangKey, list[QueuedJob]] = {}
    cordoned = 0
    for name, queue_jobs in by_queue.items():
        q = queue_state.get(name)
        if q is None:
            continue
        queue_jobs.sort(key=QueuedJob.order_key)
        if q.cordoned:
            for job in queue_jobs:
                result.unschedulable[job.id] = REASON_CORDONED
            cordoned += len(queue_jobs)
            continue
        for job in queue_jobs:
            if job.gang_id:
                gangs.setdefault((name, job.gang_id), []).append(job)
        sources[name] = iter(queue_jobs)
    found = QueuedJobs(sources, gangs, result)
    found.considered = cordoned
    return found


def from_queued(
    queued: Mapping[str, Iterable[QueuedJob]],
    gangs: Mapping[GangKey, Sequence[QueuedJob]] | None,
    queue_state: Mapping[str, QueueState],
    result: RoundResult,
) -> QueuedJobs:
    """Sources from per-queue iterables already in order; a cordoned queue (or one the round
    does not know) is not iterated at all."""
    sources = {
        name: iter(jobs)
        for name, jobs in queued.items()
        if name in queue_state and not queue_state[name].cordoned
    }
    return QueuedJobs(sources, gangs or {}, result)
