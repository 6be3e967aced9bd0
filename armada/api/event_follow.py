"""Following a job set's event log, for every stream that serves it: our REST stream
(``api.streams``) and Armada's ``GetJobSetEvents`` / ``Watch`` (``wire.event_ops``).

A follower reads the events after its cursor a batch at a time, converting each batch while
it still has the connection (``read_batch``), and gives the connection back before it waits:
a thousand followers cost the pool no more than the reads that run at the same moment. The
reads run on the event loop's shared executor (``thread_sensitive=False``), not on a thread
kept for each open stream. A read that finds its connection dead (the database restarted,
say) is tried once more on a fresh one.

While watching, a follower waits for the wake-up of its job set (``api.wakeups``: one Redis
subscription and one log sweep per process, shared by every follower of either kind), then
reads again from its cursor. It reads nothing while it waits: an idle stream costs the
database nothing. Ids become visible in order (``services.events``), so reading by cursor
neither skips nor repeats an event, however early, late, repeated or lost a wake-up is.
Every ``tick`` seconds without a wake-up it yields an empty batch without reading, so that
its transport can send a keep-alive.

With an ``AccessGuard`` (``api.stream_guard``), a follower joins the process's access sweep
and asks the guard before each read and after each wait whether the sweep refused it: it
raises then, once the credential or the permission has gone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from asgiref.sync import sync_to_async
from django.db import connection

from armada.api import wakeups
from armada.api.stream_guard import AccessGuard
from armada.models import Event
from armada.services.dbfaults import read_again_if_lost
from armada.services.events import events_for_job_set

T = TypeVar("T")
BATCH = 500


@dataclass(frozen=True)
class Batch(Generic[T]):
    """One read: the converted events, the cursor after them (the id of the last event read,
    or the cursor it started from), and whether the read came back short, so that the
    follower now holds every event committed so far."""

    items: list[T]
    cursor: int
    caught_up: bool


def read_batch(
    queue: str,
    job_set: str,
    after: int,
    convert: Callable[[Sequence[Event]], list[T]],
    limit: int = BATCH,
) -> Batch[T]:
    """The next events after ``after`` (at most ``limit``), converted by ``convert`` on the
    same connection, which is closed before returning (see the module docstring)."""

    def read() -> Batch[T]:
        events = events_for_job_set(queue=queue, job_set=job_set, after=after, limit=limit)
        cursor = events[-1].id if events else after
        return Batch(convert(events), cursor, len(events) < limit)

    try:
        return read_again_if_lost(read, "an event stream's read")
    finally:
        connection.close()


async def follow(
    queue: str,
    job_set: str,
    *,
    after: int,
    watch: bool,
    convert: Callable[[Sequence[Event]], list[T]],
    tick: float,
    limit: int = BATCH,
    guard: AccessGuard | None = None,
) -> AsyncIterator[Batch[T]]:
    """Every batch after ``after``, in order. Without ``watch`` it ends after the first short
    batch; with it, it waits for a wake-up after each short batch and reads again, until
    closed, yielding an empty batch (no read) after each ``tick`` seconds without one.
    ``guard`` raises before a read or after a wait once the caller may no longer watch.
    Close it with ``contextlib.aclosing`` so that its wake-up and access registrations end
    with it."""
    load = sync_to_async(read_batch, thread_sensitive=False)
    waiter = await wakeups.register(queue, job_set) if watch else None
    if guard is not None:
        guard.open(waiter)
    cursor = after
    try:
        while True:
            if guard is not None:
                guard.raise_if_refused()
            if waiter is not None:
                waiter.clear()  # a wake-up during the read below is kept for the wait
            batch = await load(queue, job_set, cursor, convert, limit)
            cursor = batch.cursor
            yield batch
            if not batch.caught_up:
                continue
            if waiter is None:
                return
            while not await waiter.wait(tick):
                if guard is not None:
                    guard.raise_if_refused()
                yield Batch([], cursor, True)
    finally:
        if waiter is not None:
            waiter.close()
        if guard is not None:
            guard.close()
