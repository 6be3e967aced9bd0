"""The scheduler's in-memory job database: every live job and every active run, kept between
cycles and synced incrementally from the event log.

Why the event log: every change to a job or run is committed together with at least one
event, and event ids become visible in commit order (``services.events``). So "the jobs named
by events after my cursor" is exactly the set of jobs that changed since the last sync, with
nothing missed even when writers commit out of order. A sync reads those job ids, re-reads
their rows (the rows, not the events, are the truth: reading a row twice is harmless) and
moves the cursor. The first sync (a cold start) notes the newest event id, then reads every
live job; whatever changes meanwhile is caught by the next sync from that id.

Invariants, after each sync:
- every job in state ``queued`` is in exactly one of ``queued`` and ``delayed``;
- ``delayed`` holds the queued jobs waiting for their retry delay (``Job.retry_not_before``,
  our ``backoff`` extension) at the ``now`` of the latest sync (the time they wait for, and
  the job); :meth:`JobDb.release_due` moves them to ``queued`` once that time has come, so
  no event is needed for a delay to end, and a delay survives a restart because the cold
  load reads the column. A delayed job is in no queue's order and no gang, so it takes none
  of its queue's lookback and never stands in front of its queue's other jobs;
- ``queued`` holds the other queued jobs (as :class:`QueuedJob`), each once, and
  ``by_queue[q]`` holds the same jobs of queue ``q`` in scheduling order
  (:meth:`QueuedJob.order_key`); ``gangs`` holds the queued members of each gang;
- ``runs`` holds exactly the active (leased, pending, running) runs, one per job.

The leases this process writes are applied here as soon as they commit
(:meth:`JobDb.note_leased`), as a re-read would apply them, and remembered in
``own_leases`` (job -> run) until the sync that reads their ``leased`` events: a job whose
only events since the cursor are such a lease is not read again (ten thousand rows a cycle
that would only say what is already here). A job with any other event is read as usual, so
a change made meanwhile by anyone else (a cancel, a report) is never missed.

Objects of the same shape (requests, node selector, tolerations) are shared between jobs, so
a million queued jobs cost a few hundred bytes each.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice

from django.db.models import Max
from sortedcontainers import SortedKeyList

from armada.core.config import PriorityClass
from armada.core.scheduling import QueuedJob
from armada.core.states import EventType, JobState, RunState
from armada.gctuning import tune_gc
from armada.models import Event
from armada.services.bulk import sql_in
from armada.services.jobdb_own import ActiveRun, OwnLeases
from armada.services.jobdb_rows import CHUNK, Interner, job_query, moment, read_rows, run_query

log = logging.getLogger(__name__)

# A cold load of at least this many live jobs tunes the process's garbage collector
# (``_load_all``); a small one leaves it alone.
GC_FREEZE_AT = 10_000
ACTIVE_RUN_STATES = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
LIVE_JOB_STATES = [s.value for s in JobState if not s.terminal]


@dataclass
class SyncReport:
    cold: bool = False
    events: int = 0
    jobs: int = 0


@dataclass
class JobDb(OwnLeases):
    """See the module docstring. Not thread-safe: one scheduler process, one cycle at a time."""

    classes: Mapping[str, PriorityClass]
    # The configured floating resources: jobs' requests of them are kept apart from what a
    # node must offer (``QueuedJob.floating``).
    floating: frozenset[str] = frozenset()
    cursor: int | None = None  # the newest event id applied; None before the first sync
    queued: dict[str, QueuedJob] = field(default_factory=dict)
    by_queue: dict[str, SortedKeyList] = field(default_factory=dict)
    gangs: dict[tuple[str, str], dict[str, QueuedJob]] = field(default_factory=dict)
    avoid: dict[str, frozenset[str]] = field(default_factory=dict)  # job id -> node ids
    runs: dict[str, ActiveRun] = field(default_factory=dict)  # job id -> its active run
    # job id -> (its retry_not_before, the job), for queued jobs still waiting for it
    delayed: dict[str, tuple[datetime, QueuedJob]] = field(default_factory=dict)
    # The latest ``now`` a sync was given; None before (every job with a time waits then).
    now: datetime | None = None
    # job id -> run id of leases written by this process and applied by ``note_leased``,
    # until a sync reads their ``leased`` events (see the module docstring).
    own_leases: dict[str, str] = field(default_factory=dict)
    # Jobs of leases planned and applied but perhaps not yet committed (a cycle's writes
    # behind the next round, ``services.lease_pipeline``), and those of them a sync met an
    # event of meanwhile: read again by ``settle`` once the write is known.
    in_flight: set[str] = field(default_factory=set)
    deferred: set[str] = field(default_factory=set)
    _intern: Interner = field(init=False)
    _due: list[tuple[datetime, str]] = field(default_factory=list)  # heap over ``delayed``

    def __post_init__(self) -> None:
        self._intern = Interner(self.floating)

    # --- syncing -------------------------------------------------------------------------

    def sync(self, *, max_events: int = 1_000_000, now: datetime | None = None) -> SyncReport:
        """Apply what changed since the cursor (at most ``max_events`` events of it; the rest
        waits for the next sync). The first call loads every live job. With ``now``, a
        queued job whose retry delay runs past ``now`` is kept in ``delayed`` and one whose
        delay has ended is released to its queue; without it, the ``now`` of the previous
        sync is used, and before any ``now`` every job with a time waits (until
        :meth:`release_due`)."""
        if now is not None:
            self.now = now
        report = self._sync(max_events)
        if self.now is not None:
            self.release_due(self.now)
        return report

    def release_due(self, now: datetime) -> int:
        """Move the delayed jobs whose time has come (``<= now``) to their queues; returns
        how many. Cheap when none is due (a look at the heap's top)."""
        due = self._due
        released: list[QueuedJob] = []
        while due and due[0][0] <= now:
            at, job_id = heapq.heappop(due)
            entry = self.delayed.get(job_id)
            if entry is None or entry[0] != at:
                continue  # forgotten, or reloaded with another time since
            del self.delayed[job_id]
            released.append(entry[1])
        if released:
            self._enqueue(released)
        return len(released)

    def _sync(self, max_events: int) -> SyncReport:
        if self.cursor is None:
            return self._load_all()
        newest = Event.objects.aggregate(m=Max("id"))["m"] or 0
        if newest < self.cursor:
            # The log is older than what we have seen (a restored database): start over.
            log.warning("event log went back from %d to %d: reloading", self.cursor, newest)
            return self._load_all()
        if newest == self.cursor:
            return SyncReport()
        rows = list(
            Event.objects.filter(id__gt=self.cursor, id__lte=newest)
            .order_by("id")
            .values_list("id", "job_id", "type", "run_id")[:max_events]
        )
        upto = rows[-1][0] if len(rows) == max_events else newest
        own = self.own_leases
        job_ids: set[str] = set()
        seen_own: list[str] = []
        succeeded: set[str] = set()
        for _, job_id, type_, run_id in rows:
            if own and type_ == EventType.LEASED and own.get(job_id) == run_id:
                seen_own.append(job_id)  # applied already (``note_leased``)
            else:
                job_ids.add(job_id)
                if type_ == EventType.SUCCEEDED:
                    succeeded.add(job_id)
        job_ids.discard("")
        if self.in_flight:
            # Their rows may not show the lease yet: read them once it is known (``settle``).
            held = job_ids & self.in_flight
            self.deferred |= held
            job_ids -= held
            succeeded -= held
        for job_id in seen_own:
            own.pop(job_id, None)
        for job_id in job_ids:
            own.pop(job_id, None)
        # A ``succeeded`` event leaves its job succeeded (or as terminal as it was) and its
        # run ended, and a terminal job never changes again nor gets another run: reading
        # it would find nothing live, so it is only forgotten.
        for job_id in succeeded:
            self._forget(job_id)
        job_ids -= succeeded
        self.reload(job_ids)
        self.cursor = upto
        return SyncReport(events=len(rows), jobs=len(job_ids))

    def _load_all(self) -> SyncReport:
        cursor = Event.objects.aggregate(m=Max("id"))["m"] or 0
        self.queued.clear()
        self.by_queue.clear()
        self.gangs.clear()
        self.avoid.clear()
        self.runs.clear()
        self.delayed.clear()
        self._due.clear()
        self.own_leases.clear()
        where, params = sql_in("state", LIVE_JOB_STATES)
        count = self._apply_jobs(read_rows(job_query(where), params, server_side=True))
        where, params = sql_in("r.state", ACTIVE_RUN_STATES)
        self._apply_runs(read_rows(run_query(where), params, server_side=True))
        self.cursor = cursor
        log.info("job db loaded: %d live jobs, %d active runs", count, len(self.runs))
        if count >= GC_FREEZE_AT:
            # These objects live until their jobs change: frozen, no collection walks them
            # again (a full one took 0.3 s a cycle at 100,000 jobs), and the first
            # generation's threshold is raised as in the web processes (``armada.gctuning``).
            tune_gc()
        return SyncReport(cold=True, jobs=count)

    def reload(self, job_ids: Iterable[str]) -> None:
        """Re-read these jobs and their active runs from the database."""
        ids = list(job_ids)
        for job_id in ids:
            self._forget(job_id)
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            where, params = sql_in("id", chunk)
            live, live_params = sql_in("state", LIVE_JOB_STATES)
            self._apply_jobs(read_rows(job_query(f"{where} AND {live}"), params + live_params))
            where, params = sql_in("r.job_id", chunk)
            active, active_params = sql_in("r.state", ACTIVE_RUN_STATES)
            self._apply_runs(read_rows(run_query(f"{where} AND {active}"), params + active_params))

    def _forget(self, job_id: str) -> None:
        self.runs.pop(job_id, None)
        self.avoid.pop(job_id, None)
        self.delayed.pop(job_id, None)  # its heap entry is skipped when it comes up
        job = self.queued.pop(job_id, None)
        if job is None:
            return
        self.by_queue[job.queue].discard(job)
        if job.gang_id:
            members = self.gangs.get((job.queue, job.gang_id))
            if members is not None:
                members.pop(job_id, None)
                if not members:
                    del self.gangs[(job.queue, job.gang_id)]

    def _apply_jobs(self, rows: Iterable[tuple]) -> int:
        intern = self._intern
        classes = self.classes
        now = self.now
        added: list[QueuedJob] = []
        count = 0
        for (
            job_id,
            queue,
            state,
            priority,
            priority_class,
            requests,
            selector,
            tolerations,
            avoid,
            gang_id,
            gang_cardinality,
            gang_label,
            not_before,
        ) in rows:
            count += 1
            if state != JobState.QUEUED:
                continue
            pc = classes.get(priority_class)
            on_node, floating = intern.node_and_floating(requests)
            job = QueuedJob(
                id=job_id,
                queue=queue,
                requests=on_node,
                priority=priority,
                urgency=pc.priority if pc else 0,
                node_selector=intern.selector(selector),
                tolerations=intern.toleration_list(tolerations),
                gang_id=gang_id,
                gang_cardinality=gang_cardinality,
                gang_uniformity_label=gang_label,
                priority_class=priority_class,
                floating=floating,
            )
            if avoid:
                avoided = intern.avoided(avoid)
                if avoided:
                    self.avoid[job_id] = avoided
            at = moment(not_before)
            if at is not None and (now is None or at > now):
                # Waiting for its retry delay. Before the first ``now`` every job with a time
                # waits; the ``release_due`` that ends each sync frees those already due.
                self.delayed[job_id] = (at, job)
                heapq.heappush(self._due, (at, job_id))
                continue
            added.append(job)
        self._enqueue(added)
        return count

    def _enqueue(self, jobs: list[QueuedJob]) -> None:
        """Put ``jobs`` in ``queued``, their queues' order and their gangs."""
        queued = self.queued
        by_queue: dict[str, list[QueuedJob]] = {}
        for job in jobs:
            queued[job.id] = job
            batch = by_queue.get(job.queue)
            if batch is None:
                batch = by_queue[job.queue] = []
            batch.append(job)
            if job.gang_id:
                self.gangs.setdefault((job.queue, job.gang_id), {})[job.id] = job
        # In bulk: a big batch (a cold load) is sorted once, not inserted job by job.
        for queue, batch in by_queue.items():
            ordered = self.by_queue.get(queue)
            if ordered is None:
                self.by_queue[queue] = SortedKeyList(batch, key=QueuedJob.order_key)
            else:
                ordered.update(batch)

    def _apply_runs(self, rows: Iterable[tuple]) -> None:
        intern = self._intern
        for (
            run_id,
            job_id,
            pool,
            executor,
            node,
            requests,
            stopping,
            queue,
            priority_class,
            gang_id,
            scheduled_priority,
        ) in rows:
            on_node, floating = intern.node_and_floating(requests)
            self.runs[job_id] = ActiveRun(
                id=run_id,
                job_id=job_id,
                queue=queue,
                pool=pool,
                executor=executor,
                node=node,
                requests=on_node,
                priority_class=priority_class,
                gang_id=gang_id,
                stopping=bool(stopping),
                floating=floating,
                scheduled_priority=scheduled_priority,
            )

    # --- reading -------------------------------------------------------------------------

    def queue_jobs(
        self, queue: str, *, lookback: int, exclude: set[str] | frozenset[str] = frozenset()
    ) -> Iterator[QueuedJob]:
        """The queue's first ``lookback`` queued jobs in scheduling order, lazily, leaving
        out ``exclude`` (jobs already leased this cycle)."""
        ordered = self.by_queue.get(queue)
        if not ordered:
            return iter(())
        jobs: Iterable[QueuedJob] = islice(ordered, lookback)
        if exclude:
            jobs = (j for j in jobs if j.id not in exclude)
        return iter(jobs)

    def gang_members(self) -> dict[tuple[str, str], list[QueuedJob]]:
        """The queued members of every gang, each list in scheduling order."""
        return {
            key: sorted(members.values(), key=QueuedJob.order_key)
            for key, members in self.gangs.items()
        }

    def runs_in_pool(self, pool: str) -> list[ActiveRun]:
        return [r for r in self.runs.values() if r.pool == pool]

    def queued_count(self) -> int:
        """Queued jobs, those waiting for a retry delay included."""
        return len(self.queued) + len(self.delayed)

    def delayed_until(self) -> dict[str, datetime]:
        """Each job waiting for its retry delay, with the time it waits for."""
        return {job_id: at for job_id, (at, _) in self.delayed.items()}
