"""``armada_event_api_active_subscriptions{user}``: each open watching stream counts for its
user in the serving process while it is open, through REST (over the ASGI handler, as uvicorn
runs it) and gRPC (the gateway's stream is the gRPC service's), and is given back when the
stream ends, the client goes away or the server cancels it; streams that do not watch are
not counted. Served at this process's ``/metrics``."""

from __future__ import annotations

import asyncio
import base64

import pytest
from armada_client.armada.event_pb2 import WatchRequest
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler

from armada.api.stream_metrics import ACTIVE_SUBSCRIPTIONS
from armada.services.submit import job_submit
from tests.conftest import T0, job_file
from tests.metrics.scrape import parse, value
from tests.wire.event_streams import WATCH, events_of, request

pytestmark = pytest.mark.django_db(transaction=True)

NAME = "armada_event_api_active_subscriptions"
TIMEOUT = 30.0


@pytest.fixture(autouse=True)
def _close_stream_thread_connections():
    """The views read in asgiref's worker threads; close their connections afterwards."""
    from django.db import connections

    yield
    asyncio.run(sync_to_async(connections.close_all)())


def active(user: str) -> float:
    """The gauge's value for ``user`` in this process (read from the gauge alone: the whole
    registry's collection reads the database, which an async test may not)."""
    samples = [s for family in ACTIVE_SUBSCRIPTIONS.collect() for s in family.samples]
    return next((s.value for s in samples if s.labels == {"user": user}), 0.0)


def _scope(path: str, query: str, user: str, password: str) -> dict:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Basic {token}".encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


async def _serve_until_first_line(query: str, *, user: str, during: list[float]) -> list[dict]:
    """Serve one REST stream through Django's ASGI handler; once its first body line is
    sent, note the gauge and have the client go away (``http.disconnect``)."""
    sent: list[dict] = []
    first_line = asyncio.Event()
    asked = 0

    async def receive() -> dict:
        nonlocal asked
        asked += 1
        if asked == 1:
            return {"type": "http.request", "body": b"", "more_body": False}
        await first_line.wait()
        during.append(active(user))
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and message.get("body"):
            first_line.set()

    scope = _scope("/api/v1/job-sets/demo/set-1/events", query, user, "olive-password")
    await asyncio.wait_for(ASGIHandler()(scope, receive, send), TIMEOUT)
    return sent


def test_a_rest_watch_counts_while_open_and_is_given_back_when_the_client_goes(queue, owner):
    job_submit(actor=owner, data=job_file(), now=T0)
    before = active("olive")
    during: list[float] = []
    sent = asyncio.run(_serve_until_first_line("watch=true", user="olive", during=during))
    assert sent[0]["status"] == 200
    assert during == [before + 1]
    assert active("olive") == before


def test_a_stream_that_does_not_watch_is_not_counted(queue, owner):
    job_submit(actor=owner, data=job_file(), now=T0)
    before = active("olive")
    during: list[float] = []
    sent = asyncio.run(_serve_until_first_line("", user="olive", during=during))
    assert sent[0]["status"] == 200
    assert during in ([], [before])  # it may have ended before the handler listened
    assert active("olive") == before


def test_grpc_watch_counts_per_user_until_closed_or_cancelled(queue, owner, admin_user, client):
    job_submit(actor=owner, data=job_file(), now=T0)
    olive, root = active("olive"), active("root")

    async def scenario() -> list[tuple[float, float]]:
        seen = []
        first = events_of(owner, request(watch=True))
        second = events_of(owner, WatchRequest(queue="demo", job_set_id="set-1"), WATCH)
        third = events_of(admin_user, request(watch=True))
        for stream in (first, second, third):
            await asyncio.wait_for(anext(stream), TIMEOUT)
        seen.append((active("olive"), active("root")))
        # Served at this process's /metrics, as every process serves its own.
        text = await sync_to_async(lambda: client.get("/metrics").content.decode())()
        values, _ = parse(text)
        seen.append((value(values, NAME, user="olive"), value(values, NAME, user="root")))
        await first.aclose()  # the stream is closed (it ended, or the gateway closed it)
        seen.append((active("olive"), active("root")))

        async def consume(stream) -> None:
            async for _ in stream:
                pass

        # The client goes away or the server shuts down: the serving task is cancelled.
        tasks = [asyncio.create_task(consume(s)) for s in (second, third)]
        await asyncio.sleep(0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        seen.append((active("olive"), active("root")))
        return seen

    assert asyncio.run(scenario()) == [
        (olive + 2, root + 1),
        (olive + 2, root + 1),
        (olive + 1, root + 1),
        (olive, root),
    ]


def test_a_stream_refused_is_not_counted(queue, outsider):
    before = active("otto")

    async def scenario() -> None:
        with pytest.raises(Exception):  # noqa: B017 - PERMISSION_DENIED, as the service says
            await asyncio.wait_for(anext(events_of(outsider, request(watch=True))), TIMEOUT)

    asyncio.run(scenario())
    assert active("otto") == before
