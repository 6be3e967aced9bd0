"""Writing a cycle's leases behind the next round (``scheduling.writeBehind``).

A cycle spends most of its time in two parts: computing its rounds (this process's CPU) and
writing their leases (mostly the database's). With write-behind, a cycle hands its writes
(``services.cycle_writes``) to a writer thread and returns; the next cycle
syncs and computes its rounds while they are written, and waits for them only when its own
writes are due. At most one cycle's writes are ever in flight, and they are written in
cycle order.

Why nothing is lost or leased twice:
- the plan's leases are applied to the job database at once (``JobDb.note_leased``) and
  their jobs marked in flight: the next round does not offer them again, and a sync meanwhile
  defers those jobs instead of reading rows that may not show the lease yet;
- the write itself is as guarded as ever: under the scheduler lease's fence, claiming only
  jobs still queued; a job cancelled meanwhile is not leased;
- once the write is known, ``JobDb.settle`` re-reads every planned job that was not leased
  and every deferred one; if the write failed (the lease lost, the database gone), the job
  database is dropped and reloaded from the database by the next cycle;
- a process that dies with a write in flight loses only that uncommitted transaction: no
  lease was visible to anyone, and the next holder reads the jobs as queued.

The writer thread writes a cycle's decisions (``cycle_writes.write_decisions``: the leases
and the preempted runs' stops), which are all that the next cycle waits for. The round's
record and the cycle's metrics (``cycle_writes.write_record``) are written by a second
thread, the recorder, once those decisions are: meanwhile the writer can go on with the next
cycle's decisions. The recorder writes the records in cycle order, at most one cycle behind
(a cycle handing over its plan first waits for the record before it); a record that fails
is logged and changes nothing else, since the job database does not depend on it.

Each thread uses a database connection of its own, closed after each write. A stopping
worker waits for the write and the record in flight (``drain``). Only on PostgreSQL: SQLite
has a single writer, so overlapping gains nothing there.
"""

from __future__ import annotations

import atexit
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta

from django.db import connection

from armada.services.cycle_writes import CyclePlan, Written, write_decisions, write_record
from armada.services.jobdb import JobDb
from armada.services.leader import LeaseKeeper

log = logging.getLogger("armada.services.scheduler")


def _write_and_release(plan: CyclePlan, ttl_seconds: float) -> Written:
    try:
        keeper = LeaseKeeper(
            name=plan.lease_name,
            holder=plan.holder,
            now=plan.now,
            ttl=timedelta(seconds=ttl_seconds),
            every=ttl_seconds / 5,
        )
        with keeper:
            return write_decisions(plan)
    finally:
        connection.close()


def _record_after(plan: CyclePlan, decided: Future[Written]) -> None:
    """The recorder's part: ``plan``'s record and metrics, once its decisions are written
    (none when they failed: the settle that meets the failure logs it)."""
    try:
        written = decided.result()
    except Exception:  # noqa: BLE001 - reported by settle
        return
    try:
        write_record(plan, written)
    except Exception:  # noqa: BLE001 - a lost record changes nothing else
        log.warning("a scheduling cycle's record failed", exc_info=True)
    finally:
        connection.close()


def _wait(future: Future | None, what: str) -> None:
    """Wait for ``future``, whatever its outcome (logged)."""
    if future is None:
        return
    try:
        future.result()
    except Exception:  # noqa: BLE001 - logged here; settle reports a failed write
        log.warning("a scheduling cycle's %s failed", what, exc_info=True)


class LeasePipeline:
    """The writer and recorder threads, and the write and record in flight, if any."""

    def __init__(self, ttl_seconds: float) -> None:
        self.ttl_seconds = ttl_seconds
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lease-writer")
        self._recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cycle-recorder")
        self._pending: Future[Written] | None = None
        self._plan: CyclePlan | None = None
        self._recording: Future[None] | None = None
        self._lock = threading.Lock()

    def submit(self, plan: CyclePlan) -> None:
        """Start writing ``plan`` (after ``settle``: nothing may be in flight), and its record
        once its decisions are written; waits first for the previous cycle's record."""
        with self._lock:
            if self._pending is not None:
                raise RuntimeError("a cycle's writes are still in flight")
            recording = self._recording
        _wait(recording, "record")
        with self._lock:
            self._plan = plan
            self._pending = self._executor.submit(_write_and_release, plan, self.ttl_seconds)
            self._recording = self._recorder.submit(_record_after, plan, self._pending)

    def settle(self, db: JobDb) -> Written | None:
        """Wait for the write in flight and settle ``db`` with it (``JobDb.settle``); the
        write's outcome, an empty one when nothing was in flight, or None when it failed
        (``db`` must then be dropped: the caller's cycle writes nothing)."""
        with self._lock:
            pending, plan = self._pending, self._plan
            self._pending = self._plan = None
        if pending is None or plan is None:
            return Written()
        try:
            written = pending.result()
        except Exception:  # noqa: BLE001 - any failure: the job database is not trusted
            log.warning("a scheduling cycle's writes failed; reloading", exc_info=True)
            from armada.services.scheduler import scheduler_state_reset

            scheduler_state_reset()
            return None
        db.settle(written.unwritten(plan))
        log.info("scheduling cycle leased %d job(s) (written behind)", len(written.leased_ids))
        return written

    def drain(self) -> None:
        """Wait for the write and the record in flight, whatever their outcome (a stopping
        process)."""
        with self._lock:
            pending, recording = self._pending, self._recording
        _wait(pending, "writes")
        _wait(recording, "record")


_pipeline: LeasePipeline | None = None


def lease_pipeline(ttl_seconds: float) -> LeasePipeline:
    """This process's pipeline (one writer thread), made on first use."""
    global _pipeline
    if _pipeline is None:
        _pipeline = LeasePipeline(ttl_seconds)
        atexit.register(_pipeline.drain)
    _pipeline.ttl_seconds = ttl_seconds
    return _pipeline


def lease_pipeline_drain() -> None:
    """Wait for this process's write and record in flight, if any (tests, a stopping
    worker)."""
    if _pipeline is not None:
        _pipeline.drain()
