"""Idle event streams cost the database nothing of their own (``api.wakeups``'s sweep,
``api.stream_guard``'s access sweep): forty open, waiting streams cause only the process's
sweeps, a few statements each, and never a read of their own; and a wake-up lost on the way
is made good by the sweep."""

from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.test import AsyncClient
from django.utils import timezone

from armada.api import stream_guard, wakeups
from armada.services import event_notify
from armada.services.submit import job_submit
from armada.services.tokens import token_create
from tests.conftest import T0, job_file
from tests.statements import statements_recorded
from tests.stream_reader import StreamReader

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_close_stream_thread_connections"),
]
STREAMS = 40
SWEEP = 0.25  # both sweeps' period here, to see several in a short window


@pytest.fixture(params=["redis", "polling"])
def wakeup_kind(request, settings, monkeypatch):
    """With Redis wake-ups live (the sweep is a safety net) and without (it is the only
    mechanism)."""
    if request.param == "redis" and not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set")
    if request.param == "polling":
        settings.REDIS_URL = None
    monkeypatch.setattr(wakeups, "POLL_SECONDS", SWEEP)
    monkeypatch.setattr(wakeups, "POLL_SECONDS_WITH_WAKEUPS", SWEEP)
    monkeypatch.setattr(stream_guard, "CHECK_SECONDS", SWEEP)
    return request.param


async def open_streams(keys: list[str], job_sets: list[str]) -> list[StreamReader]:
    client = AsyncClient()
    streams = []
    for i, job_set in enumerate(job_sets):
        response = await client.get(
            f"/api/v1/job-sets/demo/{job_set}/events?watch=true",
            headers={"Authorization": f"Bearer {keys[i % len(keys)]}"},
        )
        assert response.status_code == 200
        streams.append(StreamReader(response))
    async with asyncio.timeout(30.0):
        for stream in streams:
            await stream.drained.wait()
    return streams


def counted(monkeypatch, module, name: str, calls: list[float]) -> None:
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        calls.append(time.monotonic())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)


def test_idle_streams_make_no_query_of_their_own(queue, owner, wakeup_kind, monkeypatch):
    """Forty idle streams (two tokens, forty job sets) over about eight sweeps of
    each kind: no stream reads the log, and every statement run belongs to a sweep, at
    most three per sweep, as for one stream."""
    keys = [
        token_create(user=owner, name=name, expires_at=None, now=timezone.now()).key
        for name in ("laptop", "desktop")
    ]
    for i in range(STREAMS):
        job_submit(actor=owner, data=job_file(job_set=f"idle-{i}"), now=T0)
    event_sweeps: list[float] = []
    access_sweeps: list[float] = []
    counted(monkeypatch, wakeups, "_sweep_read", event_sweeps)
    counted(monkeypatch, stream_guard, "_refusals_and_release", access_sweeps)
    statements: list[str] = []

    async def scenario() -> None:
        streams = await open_streams(keys, [f"idle-{i}" for i in range(STREAMS)])
        await asyncio.sleep(2 * SWEEP)  # the first sweeps (the newest id) are behind us
        with statements_recorded(monkeypatch) as recorded:
            event_sweeps.clear()
            access_sweeps.clear()
            await asyncio.sleep(8 * SWEEP)
        statements.extend(recorded)
        # Still following: a submit to one of the job sets reaches its stream.
        await sync_to_async(job_submit)(actor=owner, data=job_file(job_set="idle-7"), now=T0)
        async with asyncio.timeout(10.0):
            while len(streams[7].events) < 4:
                await asyncio.sleep(0.05)
        for stream in streams:
            await stream.stop()

    asyncio.run(scenario())
    assert len(event_sweeps) >= 4 and len(access_sweeps) >= 4
    reads = [s for s in statements if '"armada_event"."job_set" = ' in s]
    assert reads == []
    assert len(statements) <= 3 * (len(event_sweeps) + len(access_sweeps)), statements


@pytest.mark.skipif(not settings.REDIS_URL, reason="REDIS_URL is not set")
def test_a_lost_wake_up_is_made_good_by_the_sweep(queue, owner, monkeypatch):
    """Redis is up but a commit's notification never leaves (a publish that timed out):
    the stream still gets the events, at the next sweep."""
    monkeypatch.setattr(wakeups, "POLL_SECONDS_WITH_WAKEUPS", 0.5)
    job_submit(actor=owner, data=job_file(job_set="quiet"), now=T0)
    key = token_create(user=owner, name="laptop", expires_at=None, now=timezone.now()).key

    async def scenario() -> float:
        (stream,) = await open_streams([key], ["quiet"])
        hub = wakeups.hub_for_loop()
        assert hub.ready.is_set()  # the subscription is live
        monkeypatch.setattr(event_notify, "publish", lambda keys: None)  # lost on the way
        started = time.monotonic()
        await sync_to_async(job_submit)(actor=owner, data=job_file(job_set="quiet"), now=T0)
        async with asyncio.timeout(10.0):
            while len(stream.events) < 4:
                await asyncio.sleep(0.02)
        await stream.stop()
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 5.0
