"""The live grid's stream (``GET /live``): where it starts, cursors (``after``,
``Last-Event-ID``), coalescing, refused input, keep-alives, its end, the answer under WSGI,
wake-ups and no database connection while waiting. Who sees what: test_live_viewer; how
streams end: test_live_ending; parallel writers and the pool: test_live_parallel."""

from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from armada.models import Event
from lookout import live_views
from lookout.live_views import Viewer, coalesce
from tests.lookout.live_sse import (
    ACCEPT,
    append,
    client_of,
    last_id,
    open_stream,
    parse,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_stream_thread_connections"),
]
needs_redis = pytest.mark.skipif(not settings.REDIS_URL, reason="REDIS_URL is not set")


def test_without_after_the_stream_starts_at_the_last_event(queue, owner):
    append(("demo", "before", "queued"))

    async def scenario() -> tuple[int, list]:
        stream, cursor = await open_stream(await client_of(owner))
        await sync_to_async(append)(("demo", "after", "queued"))
        seen = await stream.jobs_until(1)
        await stream.stop()
        return cursor, seen

    cursor, seen = asyncio.run(scenario())
    assert cursor == Event.objects.get(job_id="before").id
    assert [job for _, job, _ in seen] == ["after"]


def test_after_and_last_event_id_resume_from_a_cursor(queue, owner):
    for job in ("a", "b", "c"):
        append(("demo", job, "queued"))
    a, b, c = Event.objects.order_by("id").values_list("id", flat=True)

    async def first_message(path: str, **headers) -> tuple[int, dict]:
        stream, cursor = await open_stream(await client_of(owner), path, **headers)
        message = await stream.next_event()
        await stream.stop()
        return cursor, message.json

    assert asyncio.run(first_message(f"/live?after={a}")) == (
        a,
        {"cursor": c, "jobs": {"b": "queued", "c": "queued"}},
    )
    # A reconnecting EventSource sends the URL it was made with and the id it saw last.
    assert asyncio.run(first_message(f"/live?after={a}", **{"Last-Event-ID": str(b)})) == (
        b,
        {"cursor": c, "jobs": {"c": "queued"}},
    )
    assert asyncio.run(first_message("/live?after=0"))[1]["jobs"] == {
        "a": "queued",
        "b": "queued",
        "c": "queued",
    }


def test_a_cursor_beyond_the_log_starts_at_its_end(queue, owner):
    append(("demo", "a", "queued"))
    beyond = last_id() + 1000

    async def scenario() -> tuple[int, list]:
        stream, cursor = await open_stream(await client_of(owner), f"/live?after={beyond}")
        await sync_to_async(append)(("demo", "b", "queued"))
        seen = await stream.jobs_until(1)
        await stream.stop()
        return cursor, seen

    cursor, seen = asyncio.run(scenario())
    assert cursor == Event.objects.get(job_id="a").id
    assert [job for _, job, _ in seen] == ["b"]


def test_a_read_is_coalesced_one_entry_per_job_with_its_last_event(queue, owner):
    start = last_id()
    append(("demo", "j", "queued"), ("demo", "k", "queued"), ("demo", "j", "leased"))
    append(("demo", "j", "running"))

    async def scenario() -> dict:
        stream, _ = await open_stream(await client_of(owner), f"/live?after={start}")
        message = await stream.next_event()
        await stream.stop()
        return message.json

    assert asyncio.run(scenario()) == {"cursor": last_id(), "jobs": {"j": "running", "k": "queued"}}


def test_a_message_names_at_most_max_jobs_and_the_rest_follow(queue, other, owner, monkeypatch):
    monkeypatch.setattr(live_views, "MAX_JOBS", 2)
    start = last_id()
    append(
        ("demo", "a", "queued"),
        ("demo", "b", "queued"),
        ("demo", "a", "leased"),  # a job already in the message still fits
        ("demo", "c", "queued"),
        ("demo", "d", "queued"),
        ("demo", "e", "queued"),
        ("other", "x", "queued"),
    )
    ids = list(Event.objects.filter(id__gt=start).order_by("id").values_list("id", flat=True))

    async def scenario() -> list[dict]:
        stream, _ = await open_stream(await client_of(owner), f"/live?after={start}")
        messages = [(await stream.next_event()).json for _ in range(3)]
        await stream.stop()
        return messages

    assert asyncio.run(scenario()) == [
        {"cursor": ids[2], "jobs": {"a": "leased", "b": "queued"}},
        {"cursor": ids[4], "jobs": {"c": "queued", "d": "queued"}},
        {"cursor": ids[6], "jobs": {"e": "queued"}},  # the read's end, past the other queue
    ]


def test_coalesce_skips_unseen_queues_and_ends_at_the_reads_cursor():
    rows = [(1, "a", "j1", "queued"), (2, "b", "k1", "queued"), (3, "a", "j1", "running")]
    viewer = Viewer(frozenset({"a"}))
    assert [(m.cursor, m.jobs) for m in coalesce(rows + [(4, "b", "k2", "queued")], 4, viewer)] == [
        (4, {"j1": "running"})
    ]
    assert coalesce([(5, "b", "k3", "queued")], 5, viewer) == []
    assert [m.jobs for m in coalesce(rows, 3, Viewer(None))] == [{"j1": "running", "k1": "queued"}]


@pytest.mark.parametrize(
    ("query", "headers", "field"),
    [
        ("?after=abc", {}, "after"),
        ("?after=-1", {}, "after"),
        ("?after=1.5", {}, "after"),
        ("?after=%201", {}, "after"),
        ("?after=1e3", {}, "after"),
        ("?after=%C2%B2", {}, "after"),  # a superscript two: a digit to str.isdigit only
        ("?after=" + "9" * 40, {}, "after"),  # beyond any event id the database holds
        ("", {"Last-Event-ID": "x"}, "Last-Event-ID"),
        ("?after=1", {"Last-Event-ID": "-5"}, "Last-Event-ID"),
    ],
)
def test_a_bad_cursor_is_refused_naming_the_field(queue, owner, query, headers, field):
    async def scenario():
        return await (await client_of(owner)).get(f"/live{query}", headers={**ACCEPT, **headers})

    response = asyncio.run(scenario())
    assert response.status_code == 400 and not response.streaming
    assert response.json()["message"] == f"{field}: must be a non-negative event id"


def test_only_get(queue, owner):
    async def scenario():
        return await (await client_of(owner)).post("/live")

    response = asyncio.run(scenario())
    assert response.status_code == 405


def test_keep_alive_carries_the_cursor_past_other_queues_events(queue, other, owner, monkeypatch):
    monkeypatch.setattr(live_views, "HEARTBEAT_SECONDS", 0.3)

    async def scenario() -> list:
        stream, _ = await open_stream(await client_of(owner))
        await sync_to_async(append)(("other", "x", "queued"))
        other_id = await sync_to_async(last_id)()
        blocks = []
        while not any(b.id == str(other_id) for b in blocks):
            blocks.append(await stream.next(timeout=10.0))
        await stream.stop()
        return blocks

    blocks = asyncio.run(scenario())
    assert all(b.event is None and b.data == "" for b in blocks)  # no message fires
    assert blocks[-1].comments == ["keep-alive"]


def test_the_stream_ends_after_its_time_with_the_cursor_to_resume_from(
    queue, other, owner, monkeypatch
):
    monkeypatch.setattr(live_views, "STREAM_SECONDS", 0.5)

    async def scenario() -> tuple[list, int]:
        client = await client_of(owner)
        stream, _ = await open_stream(client)
        await sync_to_async(append)(("other", "x", "queued"))
        await asyncio.wait_for(stream.ended.wait(), 10.0)
        blocks = []
        while not stream.blocks.empty():
            blocks.append(stream.blocks.get_nowait())
        again, cursor = await open_stream(client, "/live", **{"Last-Event-ID": blocks[-1].id})
        await again.stop()
        return blocks, cursor

    blocks, cursor = asyncio.run(scenario())
    assert blocks[-1].event == "end" and blocks[-1].json == {"cursor": last_id()}
    assert blocks[-1].id == str(last_id())
    assert not [b for b in blocks if b.event == "jobs"]
    assert cursor == last_id()


def test_under_wsgi_the_answer_is_one_read_then_the_end(queue, other, owner, client):
    """The test live server and runserver cannot stream: the browser polls instead."""
    start = last_id()
    append(("demo", "a", "queued"), ("other", "x", "queued"), ("demo", "b", "running"))
    client.force_login(owner)
    response = client.get(f"/live?after={start}", headers=ACCEPT)
    assert response.status_code == 200 and not response.streaming
    assert response["Content-Type"].startswith("text/event-stream")
    blocks, rest = parse(response.content.decode())
    assert rest == ""
    assert [(b.event, b.id) for b in blocks] == [
        ("ready", str(start)),
        ("jobs", str(last_id())),
        ("end", str(last_id())),
    ]
    assert blocks[1].json["jobs"] == {"a": "queued", "b": "running"}


def test_no_connection_is_held_between_reads(queue, owner, monkeypatch, settings):
    settings.REDIS_URL = None
    monkeypatch.setattr(live_views, "POLL_SECONDS_WITHOUT_WAKEUPS", 0.05)
    monkeypatch.setattr(live_views, "MIN_READ_INTERVAL", 0.01)
    held: list[tuple[str, bool]] = []

    def spy(name: str):
        original = getattr(live_views, name)

        def call(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            finally:
                held.append((name, connection.connection is not None))

        monkeypatch.setattr(live_views, name, call)

    for name in ("viewer_of", "last_event_id", "read_events"):
        spy(name)

    async def scenario() -> None:
        stream, _ = await open_stream(await client_of(owner))
        await sync_to_async(append)(("demo", "j", "queued"))
        await stream.jobs_until(1)
        deadline = time.monotonic() + 10.0
        while len(held) < 10 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await stream.stop()

    asyncio.run(scenario())
    assert {name for name, _ in held} == {"viewer_of", "last_event_id", "read_events"}
    assert len(held) >= 10 and not any(kept for _, kept in held), held


@needs_redis
def test_a_commit_reaches_the_stream_through_the_wake_up_not_the_poll(queue, owner, monkeypatch):
    monkeypatch.setattr(live_views, "POLL_SECONDS", 60.0)
    monkeypatch.setattr(live_views, "POLL_SECONDS_WITHOUT_WAKEUPS", 60.0)

    async def scenario() -> list[float]:
        stream, _ = await open_stream(await client_of(owner))
        latencies = []
        for i in range(5):
            await asyncio.sleep(0.2)  # the stream is waiting again

            def commit(i: int) -> float:
                append(("demo", f"j{i}", "queued"), ("demo", f"k{i}", "queued", f"set-{i}"))
                return time.monotonic()

            committed = await sync_to_async(commit)(i)
            message = await stream.next_event(timeout=5.0)
            assert list(message.json["jobs"]) == [f"j{i}", f"k{i}"]
            latencies.append(message.arrived - committed)
        await stream.stop()
        return latencies

    latencies = asyncio.run(scenario())
    assert max(latencies) < 0.5, latencies
