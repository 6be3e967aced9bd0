"""Who sees what on the live grid's stream: only the jobs of queues the viewer may watch,
nothing without logging in, and a viewer who logs out or loses a queue is re-checked while
the stream is open."""

from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from armada.models import Queue
from lookout import live_views
from tests.lookout.live_sse import (
    ACCEPT,
    append,
    client_of,
    last_id,
    open_stream,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_stream_thread_connections"),
]


def test_only_jobs_of_queues_the_viewer_may_watch(queue, other, owner, admin_user):
    async def scenario(user) -> list[tuple[int, str, str]]:
        stream, _ = await open_stream(await client_of(user))
        await sync_to_async(append)(("demo", "j1", "queued"), ("other", "x1", "queued"))
        await sync_to_async(append)(("other", "x2", "running"), ("demo", "j2", "running"))
        seen = await stream.jobs_until(2 if user is owner else 4)
        await stream.stop()
        return seen

    seen = asyncio.run(scenario(owner))
    assert [(job, kind) for _, job, kind in seen] == [("j1", "queued"), ("j2", "running")]
    assert seen[-1][0] == last_id()  # the cursor passes the other queue's events too
    everything = asyncio.run(scenario(admin_user))
    assert sorted(job for _, job, _ in everything) == ["j1", "j2", "x1", "x2"]


def test_not_logged_in_gets_no_stream(queue):
    async def scenario(headers: dict):
        return await AsyncClient().get("/live?after=0", headers=headers)

    page = asyncio.run(scenario({}))
    assert page.status_code == 302 and not page.streaming
    assert page["Location"] == "/login?next=/live%3Fafter%3D0"
    source = asyncio.run(scenario(ACCEPT))  # an EventSource: a redirect to HTML would not do
    assert source.status_code == 401 and not source.streaming


def test_a_viewer_who_logged_out_is_cut_off_at_the_next_check(queue, owner, monkeypatch):
    monkeypatch.setattr(live_views, "RECHECK_SECONDS", 0.1)
    monkeypatch.setattr(live_views, "POLL_SECONDS", 0.1)

    async def scenario() -> list:
        client = await client_of(owner)
        stream, _ = await open_stream(client)
        await client.alogout()
        await asyncio.wait_for(stream.ended.wait(), 10.0)
        await sync_to_async(append)(("demo", "late", "queued"))
        blocks = []
        while not stream.blocks.empty():
            blocks.append(stream.blocks.get_nowait())
        return blocks

    assert not [b for b in asyncio.run(scenario()) if b.event == "jobs"]


def test_a_queue_no_longer_watchable_drops_out_at_the_next_check(
    queue, other, owner, admin_user, monkeypatch
):
    Queue.objects.filter(name="other").update(
        permissions=[{"subjects": [{"kind": "User", "name": "olive"}], "verbs": ["watch"]}]
    )
    monkeypatch.setattr(live_views, "RECHECK_SECONDS", 0.1)
    monkeypatch.setattr(live_views, "POLL_SECONDS", 0.1)
    checks = 0
    original = live_views.viewer_of

    def viewer_of(request, *, fresh: bool = False):
        nonlocal checks
        viewer = original(request, fresh=fresh)
        checks += fresh
        return viewer

    monkeypatch.setattr(live_views, "viewer_of", viewer_of)

    async def scenario() -> tuple[list, list]:
        stream, _ = await open_stream(await client_of(owner))
        await sync_to_async(append)(("other", "x1", "queued"))
        before = await stream.jobs_until(1)
        await sync_to_async(Queue.objects.filter(name="other").update)(permissions=[])
        seen_checks = checks
        deadline = time.monotonic() + 10.0
        while checks < seen_checks + 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await sync_to_async(append)(("other", "x2", "queued"), ("demo", "j", "queued"))
        after = await stream.jobs_until(1)
        await stream.stop()
        return before, after

    before, after = asyncio.run(scenario())
    assert [job for _, job, _ in before] == ["x1"]
    assert [job for _, job, _ in after] == ["j"]
