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
- ``queued`` holds exactly the jobs in state ``queued`` (as :class:`QueuedJob`), each once, and
  ``by_queue[q]`` holds the same jobs of queue ``q`` in scheduling order
  (:meth:`QueuedJob.order_key`); ``gangs`` holds the queued members of each gang;
- ``runs`` holds exactly the active (leased, pending, running) runs, one per job.

Objects of the same shape (requests, node selector, tolerations) are shared between jobs, so
a million queued jobs cost a few hundred bytes each.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from django.db import connection
from django.db.models import Max
from sortedcontainers import SortedKeyList

from armada.core.config import PriorityClass
from armada.core.quantity import Resources
from armada.core.scheduling import QueuedJob, Toleration
from armada.core.states import JobState, RunState
from armada.models import Event, Job, Run
from armada.services.bulk import sql_in
from armada.services.snapshot import pod_tolerations

log = logging.getLogger(__name__)

ACTIVE_RUN_STATES = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
LIVE_JOB_STATES = [s.value for s in JobState if not s.terminal]
CHUNK = 5000


def _json_path(column: str, key: str) -> str:
    if connection.vendor == "postgresql":
        return f"{column}->'{key}'"
    return f"json_extract({column}, '$.{key}')"


def _job_query(where: str) -> str:
    """Live jobs as plain tuples; JSON comes back as text, parsed once per distinct value."""
    return (
        "SELECT id, queue, state, priority, priority_class, requests, "
        f"{_json_path('pod_spec', 'nodeSelector')}, {_json_path('pod_spec', 'tolerations')}, "
        f"{_json_path('mutations', 'avoidNodes')}, gang_id, gang_cardinality, "
        f"gang_uniformity_label FROM {Job._meta.db_table} WHERE {where}"
    )


def _run_query(where: str) -> str:
    return (
        "SELECT r.id, r.job_id, r.pool, r.executor, r.node, r.requests, "
        "r.stop_requested_at IS NOT NULL, j.queue, j.priority_class, j.gang_id "
        f"FROM {Run._meta.db_table} r JOIN {Job._meta.db_table} j ON j.id = r.job_id "
        f"WHERE {where}"
    )


def _rows(sql: str, params: list, *, server_side: bool = False) -> Iterator[tuple]:
    """The rows of a query, fetched in chunks (through a server-side cursor when asked, so
    that a million rows are never all in memory as tuples at once)."""
    cursor = connection.chunked_cursor() if server_side else connection.cursor()
    with cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK):
            yield from rows


def _text(value: Any) -> str | None:
    """A JSON value as the database returned it: text (bytes from some drivers), or already
    parsed where the driver does that."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode()
    return json.dumps(value, sort_keys=True)


@dataclass(slots=True)
class ActiveRun:
    """A leased, pending or running run, as the scheduler needs it."""

    id: str
    job_id: str
    queue: str
    pool: str
    executor: str
    node: str
    requests: Resources
    priority_class: str
    gang_id: str
    stopping: bool  # a stop (preemption or cancellation) was requested


@dataclass
class SyncReport:
    cold: bool = False
    events: int = 0
    jobs: int = 0


class _Interner:
    """One shared object per distinct JSON text (requests, selectors, tolerations, avoided
    nodes), parsed once."""

    def __init__(self) -> None:
        self.resources: dict[str, Resources] = {}
        self.selectors: dict[str, Mapping[str, str]] = {}
        self.tolerations: dict[str, tuple[Toleration, ...]] = {}
        self.avoid: dict[str, frozenset[str]] = {}

    def requests(self, raw: Any) -> Resources:
        text = _text(raw) or "{}"
        found = self.resources.get(text)
        if found is None:
            found = self.resources[text] = Resources(json.loads(text))
        return found

    def selector(self, raw: Any) -> Mapping[str, str]:
        text = _text(raw)
        if not text:
            return {}
        found = self.selectors.get(text)
        if found is None:
            value = json.loads(text)
            found = self.selectors[text] = (
                {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
            )
        return found

    def toleration_list(self, raw: Any) -> tuple[Toleration, ...]:
        text = _text(raw)
        if not text:
            return ()
        found = self.tolerations.get(text)
        if found is None:
            value = json.loads(text)
            found = self.tolerations[text] = (
                tuple(pod_tolerations({"tolerations": value})) if isinstance(value, list) else ()
            )
        return found

    def avoided(self, raw: Any) -> frozenset[str]:
        text = _text(raw)
        if not text:
            return frozenset()
        found = self.avoid.get(text)
        if found is None:
            value = json.loads(text)
            found = self.avoid[text] = (
                frozenset(str(a) for a in value) if isinstance(value, list) else frozenset()
            )
        return found


@dataclass
class JobDb:
    """See the module docstring. Not thread-safe: one scheduler process, one cycle at a time."""

    classes: Mapping[str, PriorityClass]
    cursor: int | None = None  # the newest event id applied; None before the first sync
    queued: dict[str, QueuedJob] = field(default_factory=dict)
    by_queue: dict[str, SortedKeyList] = field(default_factory=dict)
    gangs: dict[tuple[str, str], dict[str, QueuedJob]] = field(default_factory=dict)
    avoid: dict[str, frozenset[str]] = field(default_factory=dict)  # job id -> node ids
    runs: dict[str, ActiveRun] = field(default_factory=dict)  # job id -> its active run
    _intern: _Interner = field(default_factory=_Interner)

    # --- syncing -------------------------------------------------------------------------

    def sync(self, *, max_events: int = 1_000_000) -> SyncReport:
        """Apply what changed since the cursor (at most ``max_events`` events of it; the rest
        waits for the next sync). The first call loads every live job."""
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
            .values_list("id", "job_id")[:max_events]
        )
        upto = rows[-1][0] if len(rows) == max_events else newest
        job_ids = {job_id for _, job_id in rows}
        job_ids.discard("")
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
        where, params = sql_in("state", LIVE_JOB_STATES)
        count = self._apply_jobs(_rows(_job_query(where), params, server_side=True))
        where, params = sql_in("r.state", ACTIVE_RUN_STATES)
        self._apply_runs(_rows(_run_query(where), params, server_side=True))
        self.cursor = cursor
        log.info("job db loaded: %d live jobs, %d active runs", count, len(self.runs))
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
            self._apply_jobs(_rows(_job_query(f"{where} AND {live}"), params + live_params))
            where, params = sql_in("r.job_id", chunk)
            active, active_params = sql_in("r.state", ACTIVE_RUN_STATES)
            self._apply_runs(_rows(_run_query(f"{where} AND {active}"), params + active_params))

    def _forget(self, job_id: str) -> None:
        self.runs.pop(job_id, None)
        self.avoid.pop(job_id, None)
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
        queued = self.queued
        added: dict[str, list[QueuedJob]] = {}
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
        ) in rows:
            count += 1
            if state != JobState.QUEUED:
                continue
            pc = classes.get(priority_class)
            job = QueuedJob(
                id=job_id,
                queue=queue,
                requests=intern.requests(requests),
                priority=priority,
                urgency=pc.priority if pc else 0,
                node_selector=intern.selector(selector),
                tolerations=intern.toleration_list(tolerations),
                gang_id=gang_id,
                gang_cardinality=gang_cardinality,
                gang_uniformity_label=gang_label,
            )
            queued[job_id] = job
            batch = added.get(queue)
            if batch is None:
                batch = added[queue] = []
            batch.append(job)
            if gang_id:
                self.gangs.setdefault((queue, gang_id), {})[job_id] = job
            if avoid:
                avoided = intern.avoided(avoid)
                if avoided:
                    self.avoid[job_id] = avoided
        # In bulk: a big batch (a cold load) is sorted once, not inserted job by job.
        for queue, batch in added.items():
            ordered = self.by_queue.get(queue)
            if ordered is None:
                self.by_queue[queue] = SortedKeyList(batch, key=QueuedJob.order_key)
            else:
                ordered.update(batch)
        return count

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
        ) in rows:
            self.runs[job_id] = ActiveRun(
                id=run_id,
                job_id=job_id,
                queue=queue,
                pool=pool,
                executor=executor,
                node=node,
                requests=intern.requests(requests),
                priority_class=priority_class,
                gang_id=gang_id,
                stopping=bool(stopping),
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
        return len(self.queued)
