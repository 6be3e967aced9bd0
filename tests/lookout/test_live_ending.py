"""How a live grid stream ends: the client going away (through the ASGI application, as
uvicorn calls it), the process being asked to stop (in process, and a real uvicorn given
SIGTERM, whose graceful shutdown would otherwise wait for the stream's five minutes)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import pytest
import requests
from asgiref.sync import sync_to_async
from django.conf import settings
from django.test import AsyncClient, Client

from armada.api import wakeups
from armada.models import Event
from lookout import live_views
from tests.e2e.conftest import _database_url, _free_port, web_command
from tests.lookout.live_sse import SSE, append, parse
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = settings.BASE_DIR


@pytest.fixture(autouse=True)
def _close_stream_thread_connections():
    from django.db import connections

    yield
    asyncio.run(sync_to_async(connections.close_all)())


@pytest.fixture
def closed_waiters(monkeypatch) -> list[str]:
    """The keys of the stream waiters closed (a stream's generator has run its end)."""
    closed: list[str] = []
    original = wakeups.register_any

    async def register_any():
        waiter = await original()
        close = waiter.close

        def closing() -> None:
            closed.append(waiter.key)
            close()

        waiter.close = closing
        return waiter

    monkeypatch.setattr(wakeups, "register_any", register_any)
    return closed


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def test_the_stream_ends_when_the_client_goes_away(queue, owner, closed_waiters, monkeypatch):
    from armada.asgi import application

    reads = 0
    original = live_views.read_events

    def read_events(*args, **kwargs):
        nonlocal reads
        reads += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(live_views, "read_events", read_events)
    cookie = f"{settings.SESSION_COOKIE_NAME}={session_cookie(owner)}"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/live",
        "raw_path": b"/live",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"accept", b"text/event-stream"),
            (b"cookie", cookie.encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }

    async def scenario() -> tuple[list[dict], str]:
        gone = asyncio.Event()
        asked = False
        sent: list[dict] = []
        text = ""
        ready = asyncio.Event()

        async def receive() -> dict:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            nonlocal text
            sent.append(message)
            text += message.get("body", b"").decode()
            if "event: ready" in text:
                ready.set()

        app = asyncio.create_task(application(scope, receive, send))
        await asyncio.wait_for(ready.wait(), 10.0)
        deadline = time.monotonic() + 10.0
        while reads < 2 and time.monotonic() < deadline:  # it read, and is waiting or reading
            await asyncio.sleep(0.01)
        gone.set()  # the browser tab closes
        await asyncio.wait_for(app, 10.0)
        return sent, text

    sent, text = asyncio.run(scenario())
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert closed_waiters == [wakeups.ANY]  # the generator ran its end
    assert "event: end" not in text  # it was cut off, not ended by itself


def test_a_stop_request_ends_the_stream_with_its_cursor(queue, owner, closed_waiters, monkeypatch):
    monkeypatch.setattr(wakeups, "_stop_requested", False)

    async def scenario() -> list:
        client = AsyncClient()
        await client.aforce_login(owner)
        response = await client.get("/live", headers={"Accept": "text/event-stream"})
        stream = SSE(response)
        assert (await stream.next()).event == "ready"
        await sync_to_async(append)(("demo", "j", "queued"))
        await stream.next_event()
        await asyncio.get_running_loop().run_in_executor(None, wakeups.request_stop)
        await asyncio.wait_for(stream.ended.wait(), 10.0)
        blocks = []
        while not stream.blocks.empty():
            blocks.append(stream.blocks.get_nowait())
        return blocks

    blocks = asyncio.run(scenario())
    last = Event.objects.order_by("-id").values_list("id", flat=True).first()
    assert [b.event for b in blocks] == ["end"]
    assert blocks[0].json == {"cursor": last} and blocks[0].id == str(last)
    assert closed_waiters == [wakeups.ANY]


@pytest.mark.skipif(
    not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
    reason="a second process on the test database needs PostgreSQL",
)
def test_uvicorn_stops_at_once_with_streams_open(queue, owner, tmp_path):
    """SIGTERM: every open stream ends with ``event: end`` and the process exits, instead of
    uvicorn waiting for the streams to close (five minutes, ``STREAM_SECONDS``)."""
    from django.db import connection

    port = _free_port()
    env = {
        **os.environ,
        "ARMADA_DEV": "1",
        "ARMADA_VAR_DIR": str(tmp_path / "var"),
        "SECRET_KEY": settings.SECRET_KEY,  # the test's sessions are good there too
        "DATABASE_URL": _database_url(connection.settings_dict),
        "PYTHONUNBUFFERED": "1",
    }
    log = open(tmp_path / "web.log", "w")  # noqa: SIM115 - closed below
    web = subprocess.Popen(
        web_command(port), env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}/live"
    cookies = {settings.SESSION_COOKIE_NAME: session_cookie(owner)}
    try:
        wait_until(
            "the web process",
            lambda: requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).ok,
            details=lambda: (tmp_path / "web.log").read_text(),
        )
        streams = [
            requests.get(
                url,
                cookies=cookies,
                headers={"Accept": "text/event-stream"},
                stream=True,
                timeout=(5, 60),
            )
            for _ in range(3)
        ]
        texts = []
        for response in streams:
            assert response.status_code == 200
            chunks = response.iter_content(chunk_size=None, decode_unicode=True)
            text = next(chunks)
            assert "event: ready" in text
            texts.append((chunks, text))
        asked = time.monotonic()
        web.send_signal(signal.SIGTERM)
        try:
            code = web.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("uvicorn kept waiting for the open streams after SIGTERM")
        took = time.monotonic() - asked
        for i, (chunks, text) in enumerate(texts):
            texts[i] = (chunks, text + "".join(chunks))  # to the end of the response
    finally:
        if web.poll() is None:
            web.kill()
            web.wait()
        log.close()
    # uvicorn raises the signal again once it has shut down gracefully.
    assert code in (0, -signal.SIGTERM), (tmp_path / "web.log").read_text()
    assert "Finished server process" in (tmp_path / "web.log").read_text()
    assert took < 15, took
    for _, text in texts:
        blocks, rest = parse(text)
        assert rest == "" and blocks[-1].event == "end"
