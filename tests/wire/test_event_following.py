"""Armada's Watch and GetJobSetEvents following new events, called as the transports call
them: events written after the client connected, no connection held while waiting, and many
watchers beside parallel writers each getting every event once, in order."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
from armada_client.armada import event_pb2
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from armada.api import event_follow, wakeups
from armada.services.submit import job_submit
from tests.conftest import T0, job, job_file
from tests.wire.event_streams import (
    GET,
    WATCH,
    events_of,
    request,
    stored_ids,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_close_stream_thread_connections"),
]


def follow_new_events(owner, name: str, req) -> list[str]:
    """Connect, then submit twice; the watcher sees both submissions' events."""

    async def scenario() -> list[str]:
        stream = events_of(owner, req, name)
        first = await collect_some(stream, 2)
        for _ in range(2):
            await sync_to_async(job_submit)(actor=owner, data=job_file(), now=T0)
        rest = await collect_some(stream, 4)
        await stream.aclose()
        return [m.id for m in first + rest]

    return asyncio.run(scenario())


async def collect_some(stream: AsyncIterator, count: int) -> list:
    return [await asyncio.wait_for(anext(stream), 10.0) for _ in range(count)]


@pytest.mark.parametrize("redis", [True, False], ids=["redis", "polling"])
def test_watch_follows_events_written_after_the_client_connected(
    queue, owner, redis, settings, monkeypatch
):
    if redis and not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set")
    if redis:  # only a wake-up can deliver within the test's timeout
        monkeypatch.setattr(wakeups, "POLL_SECONDS", 60.0)
        monkeypatch.setattr(wakeups, "POLL_SECONDS_WITH_WAKEUPS", 60.0)
    else:
        settings.REDIS_URL = None
    job_submit(actor=owner, data=job_file(), now=T0)
    seen = follow_new_events(owner, GET, request(watch=True))
    assert seen == stored_ids() and len(seen) == 6
    last = seen[-1]
    job_submit(actor=owner, data=job_file(), now=T0)
    watched = follow_new_events(
        owner, WATCH, event_pb2.WatchRequest(queue="demo", job_set_id="set-1", from_id=last)
    )
    assert watched == stored_ids()[6:]


def test_no_connection_is_held_between_reads(queue, owner, monkeypatch, settings):
    """Each read closes its thread's connection before the stream waits; so does each of
    the process's sweeps of the log, which wake the stream (no Redis here)."""
    settings.REDIS_URL = None
    monkeypatch.setattr(wakeups, "POLL_SECONDS", 0.05)
    held: list[bool] = []
    swept: list[bool] = []

    def recording(module, name: str, into: list[bool]) -> None:
        original = getattr(module, name)

        def wrapped(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            finally:
                into.append(connection.connection is not None)

        monkeypatch.setattr(module, name, wrapped)

    recording(event_follow, "read_batch", held)
    recording(wakeups, "_sweep_read", swept)
    job_submit(actor=owner, data=job_file(), now=T0)

    async def scenario() -> None:
        stream = events_of(owner, request(watch=True))
        await collect_some(stream, 2)
        for _ in range(3):  # each submit: a sweep finds it, the stream reads it
            await sync_to_async(job_submit)(actor=owner, data=job_file(), now=T0)
            await collect_some(stream, 2)
        await stream.aclose()

    asyncio.run(scenario())
    assert len(held) >= 4 and not any(held)
    assert len(swept) >= 3 and not any(swept)


@pytest.mark.skipif(
    not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
    reason="the connection pool is PostgreSQL's",
)
def test_fifty_waiting_watchers_hold_no_pooled_connection(queue, owner, monkeypatch):
    """Fifty watchers wait on a pool of a few connections: every connection is back in the
    pool while they wait (holding one each, the ninth would not even get to read), after
    their first reads and after the reads a commit woke them for."""
    reads = 0
    original = event_follow.read_batch

    def read_batch(*args, **kwargs):
        nonlocal reads
        try:
            return original(*args, **kwargs)
        finally:
            reads += 1

    monkeypatch.setattr(event_follow, "read_batch", read_batch)
    job_submit(actor=owner, data=job_file(), now=T0)
    connection.close()  # the test's own connection goes back to the pool too
    pool = connection.pool

    def submit_and_release() -> None:
        try:
            job_submit(actor=owner, data=job_file(), now=T0)
        finally:
            connection.close()

    async def scenario() -> dict[str, int]:
        streams_ = [events_of(owner, request(watch=True)) for _ in range(50)]
        for s in streams_:
            await collect_some(s, 2)
        await sync_to_async(submit_and_release)()
        for s in streams_:  # woken, each reads the new events
            await collect_some(s, 2)
        # Each asks for its next event: none comes, so it waits.
        waiting = [asyncio.create_task(anext(s)) for s in streams_]
        await asyncio.sleep(0.5)
        assert reads >= 100 and not any(task.done() for task in waiting)
        stats = pool.get_stats()
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        for s in streams_:
            await s.aclose()
        return stats

    stats = asyncio.run(scenario())
    assert stats["pool_size"] <= pool.max_size < 50
    assert stats["pool_available"] == stats["pool_size"]  # none is checked out


@pytest.mark.skipif(
    not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
    reason="parallel writers need PostgreSQL",
)
def test_parallel_writers_and_many_watchers_each_get_every_event_once_in_order(queue, owner):
    writers, submits, per_submit, watchers = 4, 15, 3, 6
    total = writers * submits * per_submit * 2  # submitted + queued per job
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for _ in range(submits):
                job_submit(
                    actor=owner, data=job_file(jobs=[job() for _ in range(per_submit)]), now=T0
                )
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    async def watcher(start_after: str) -> list[str]:
        stream = events_of(owner, request(watch=True, from_message_id=start_after))
        seen: list[str] = []
        try:
            while len(seen) < total:
                message = await asyncio.wait_for(anext(stream), 30.0)
                seen.append(message.id)
        finally:
            await stream.aclose()
        return seen

    async def scenario() -> list[list[str]]:
        tasks = [asyncio.create_task(watcher("")) for _ in range(watchers)]
        await asyncio.sleep(0)  # the watchers connect while the writers start
        threads = [threading.Thread(target=writer) for _ in range(writers)]
        for t in threads:
            t.start()
        results = await asyncio.gather(*tasks)
        for t in threads:
            await asyncio.get_running_loop().run_in_executor(None, t.join)
        return results

    results = asyncio.run(scenario())
    assert not errors
    stored = stored_ids()
    assert len(stored) == total
    for seen in results:
        assert seen == stored  # every event, once, in order
