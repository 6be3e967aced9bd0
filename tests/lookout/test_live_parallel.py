"""Live grid streams against PostgreSQL with real parallel clients: several streams while
writers commit events at the same time each get every change of their queues once, in the
order of the log; and many waiting streams hold none of the pool's connections."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection
from django.test import AsyncClient, Client

from armada.models import Event
from armada.services.queues import queue_create
from lookout import live_views
from tests.conftest import T0
from tests.lookout.live_sse import SSE, append

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
        reason="parallel writers and the connection pool need PostgreSQL",
    ),
]
ACCEPT = {"Accept": "text/event-stream"}


@pytest.fixture(autouse=True)
def _close_stream_thread_connections():
    from django.db import connections

    yield
    asyncio.run(sync_to_async(connections.close_all)())


def session_of(user) -> str:
    """A session made here, in the test's thread (logging in from the loop would leave a
    connection open in asgiref's thread)."""
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def open_stream(session: str) -> SSE:
    client = AsyncClient()
    client.cookies[settings.SESSION_COOKIE_NAME] = session
    response = await client.get("/live", headers=ACCEPT)
    assert response.status_code == 200
    stream = SSE(response)
    assert (await stream.next()).event == "ready"
    return stream


def test_parallel_writers_and_streams_every_change_once_in_order(
    queue, owner, admin_user, monkeypatch
):
    queue_create(actor=admin_user, data={"name": "other"}, now=T0)
    monkeypatch.setattr(live_views, "MAX_JOBS", 7)  # messages split within reads too
    writers, commits, per_commit = 4, 25, 4
    errors: list[BaseException] = []
    start = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0

    def writer(w: int) -> None:
        try:
            for c in range(commits):
                append(
                    *[
                        ("other" if i == 0 else "demo", f"w{w}-c{c}-e{i}", "queued")
                        for i in range(per_commit)
                    ]
                )
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    visible = writers * commits * (per_commit - 1)
    every = writers * commits * per_commit

    async def follow(stream: SSE, count: int) -> tuple[list[str], list[int]]:
        jobs: list[str] = []
        cursors: list[int] = []
        try:
            while len(jobs) < count:
                message = (await stream.next_event(timeout=30.0)).json
                cursors.append(message["cursor"])
                jobs.extend(message["jobs"])
        finally:
            await stream.stop()
        return jobs, cursors

    olive, root = session_of(owner), session_of(admin_user)

    async def scenario() -> list[tuple[list[str], list[int]]]:
        # Every stream is open (its ready message read) before the first commit.
        streams = [await open_stream(olive) for _ in range(5)] + [await open_stream(root)]
        tasks = [asyncio.create_task(follow(s, visible)) for s in streams[:-1]]
        tasks.append(asyncio.create_task(follow(streams[-1], every)))
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        results = await asyncio.gather(*tasks)
        for t in threads:
            await asyncio.get_running_loop().run_in_executor(None, t.join)
        return results

    results = asyncio.run(scenario())
    assert not errors
    stored = list(Event.objects.filter(id__gt=start).order_by("id").values_list("queue", "job_id"))
    assert len(stored) == every
    in_demo = [job for q, job in stored if q == "demo"]
    for jobs, cursors in results[:-1]:
        assert jobs == in_demo  # every change of olive's queue, once, in order
        assert cursors == sorted(set(cursors))  # each message moves the cursor on
    jobs, _ = results[-1]
    assert jobs == [job for _, job in stored]  # the admin watches every queue


def test_forty_waiting_streams_hold_no_pooled_connection(queue, owner, monkeypatch):
    """Forty streams follow the log on a pool of a few connections: whenever no read is
    running, every connection is back in the pool (holding one each while it waits, the
    ninth stream would not even get to read)."""
    monkeypatch.setattr(live_views, "POLL_SECONDS", 0.2)
    monkeypatch.setattr(live_views, "POLL_SECONDS_WITHOUT_WAKEUPS", 0.2)
    lock = threading.Lock()
    started = finished = 0
    original = live_views.read_events

    def read_events(*args, **kwargs):
        nonlocal started, finished
        with lock:
            started += 1
        try:
            return original(*args, **kwargs)
        finally:
            with lock:
                finished += 1

    monkeypatch.setattr(live_views, "read_events", read_events)
    append(("demo", "j", "queued"))
    olive = session_of(owner)
    connection.close()  # the test's own connection goes back to the pool too
    pool = connection.pool

    def quiet_stats() -> dict[str, int] | None:
        """The pool's numbers taken while no read ran from start to end, else None."""
        with lock:
            before = (started, finished)
        if before[0] != before[1]:
            return None
        stats = pool.get_stats()
        with lock:
            return stats if (started, finished) == before else None

    async def scenario() -> list[dict[str, int]]:
        streams = [await open_stream(olive) for _ in range(40)]
        deadline = time.monotonic() + 30.0
        while finished < 120 and time.monotonic() < deadline:  # each has read a few times
            await asyncio.sleep(0.01)
        assert finished >= 120
        snapshots: list[dict[str, int]] = []
        while len(snapshots) < 5 and time.monotonic() < deadline:
            stats = quiet_stats()
            if stats is not None:
                snapshots.append(stats)
            await asyncio.sleep(0.005)
        for stream in streams:
            await stream.stop()
        return snapshots

    snapshots = asyncio.run(scenario())
    assert len(snapshots) == 5
    for stats in snapshots:
        assert stats["pool_size"] <= pool.max_size < 40
        assert stats["pool_available"] == stats["pool_size"]  # none is checked out
