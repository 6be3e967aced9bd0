"""How open event streams end: when their credential or permission goes (``api.stream_guard``),
on every transport at once (our REST stream, Armada's gRPC ``GetJobSetEvents`` on a real
in-process server, and the gateway's ``/v1/job-set``), and never while both stay.

Real wake-ups: with ``REDIS_URL`` the streams are woken by Redis, else they poll. Every wait
has an explicit deadline; nothing relies on a sleep being long enough."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from datetime import timedelta

import grpc
import pytest
from armada_client.armada import event_pb2, event_pb2_grpc
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.utils import timezone

from armada.api import stream_guard
from armada.services.queues import queue_update
from armada.services.submit import job_submit
from armada.services.tokens import token_create, token_revoke
from tests.conftest import T0, job_file
from tests.statements import statements_recorded
from tests.wire.grpc_server import bearer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_close_stream_thread_connections"),
]

DEADLINE = 10.0  # seconds from the change to the end of every stream
EVENTS = "/api/v1/job-sets/demo/set-1/events?watch=true"
GATEWAY = "/v1/job-set/demo/set-1"
OLIVE_BASIC = "Basic " + base64.b64encode(b"olive:olive-password").decode()


@pytest.fixture
def quick_checks(monkeypatch):
    """Checks every 0.3 s instead of every CHECK_SECONDS, to keep the tests short."""
    monkeypatch.setattr(stream_guard, "CHECK_SECONDS", 0.3)


def key_of(owner, expires_at=None) -> tuple[int, str]:
    new = token_create(user=owner, name="laptop", expires_at=expires_at, now=timezone.now())
    return new.token.pk, new.key


class Lines:
    """An open streamed response of ours or of the gateway, read a JSON line at a time
    (blank lines and SSE comments skipped)."""

    def __init__(self, response) -> None:
        self.response, self.chunks, self.buffer = response, aiter(response.streaming_content), ""

    async def next(self, timeout: float = DEADLINE) -> dict | None:
        """The next JSON line, or None once the body has ended."""
        async with asyncio.timeout(timeout):
            while True:
                while "\n" in self.buffer:
                    line, self.buffer = self.buffer.split("\n", 1)
                    if line.strip():
                        return json.loads(line)
                try:
                    chunk = await anext(self.chunks)
                except StopAsyncIteration:
                    return None
                self.buffer += chunk.decode() if isinstance(chunk, bytes) else chunk

    async def rest(self, timeout: float = DEADLINE) -> list[dict]:
        """Every line until the body ends (within ``timeout``)."""
        out: list[dict] = []
        async with asyncio.timeout(timeout):
            while (line := await self.next(timeout)) is not None:
                out.append(line)
        return out


async def open_rest(authorization: str) -> Lines:
    response = await AsyncClient().get(EVENTS, headers={"Authorization": authorization})
    assert response.status_code == 200, response.content
    return Lines(response)


async def open_gateway(authorization: str) -> Lines:
    response = await AsyncClient().post(
        GATEWAY, '{"watch": true}', content_type="application/json",
        headers={"Authorization": authorization},
    )  # fmt: skip
    assert response.status_code == 200 and response.streaming, response.content
    return Lines(response)


class GrpcWatch:
    """A watching ``GetJobSetEvents`` of a real server, read on a thread of its own."""

    def __init__(self, server, metadata) -> None:
        stub = event_pb2_grpc.EventStub(server.channel)
        request = event_pb2.JobSetRequest(queue="demo", id="set-1", watch=True)
        self.call = stub.GetJobSetEvents(request, metadata=metadata, timeout=60)
        self.received: list[event_pb2.EventStreamMessage] = []
        self.error: grpc.RpcError | None = None
        self.ended = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for message in self.call:
                self.received.append(message)
        except grpc.RpcError as exc:
            self.error = exc
        finally:
            self.ended.set()

    async def end(self, timeout: float = DEADLINE) -> grpc.RpcError:
        """The error the stream ended with, within ``timeout``."""
        assert await asyncio.to_thread(self.ended.wait, timeout), "the gRPC stream goes on"
        assert self.error is not None
        return self.error

    async def count(self, n: int, timeout: float = DEADLINE) -> None:
        async with asyncio.timeout(timeout):
            while len(self.received) < n:
                await asyncio.sleep(0.05)


async def events_then_drained(lines: Lines, count: int) -> None:
    """Read ``count`` events of a stream just opened (its first read)."""
    for _ in range(count):
        assert "type" in (await lines.next())


def test_a_revoked_token_ends_every_stream_within_the_check_interval(serve, queue, owner):
    """At the default interval (CHECK_SECONDS): REST, gateway and gRPC streams opened with
    one token each end within 10 s of its revocation, each with its own form of 401."""
    assert stream_guard.CHECK_SECONDS <= DEADLINE / 2
    job_submit(actor=owner, data=job_file(), now=T0)
    token_id, key = key_of(owner)
    server = serve()

    async def scenario() -> None:
        rest, gateway = await open_rest(f"Bearer {key}"), await open_gateway(f"Bearer {key}")
        watch = GrpcWatch(server, bearer(key))
        await events_then_drained(rest, 2)
        assert "result" in await gateway.next()
        await watch.count(2)
        await sync_to_async(token_revoke)(user=owner, token_id=token_id, now=timezone.now())
        revoked = time.monotonic()
        rest_tail, gateway_tail, error = await asyncio.gather(
            rest.rest(), gateway.rest(), watch.end()
        )
        assert time.monotonic() - revoked < DEADLINE
        assert rest_tail[-1]["status"] == 401 and rest_tail[-1]["errors"] == []
        assert "token 'laptop' was revoked" in rest_tail[-1]["message"]
        assert gateway_tail[-1]["error"]["http_code"] == 401
        assert gateway_tail[-1]["error"]["http_status"] == "Unauthorized"
        assert "was revoked" in gateway_tail[-1]["error"]["message"]
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "no longer lets you in" in error.details() and "was revoked" in error.details()

    asyncio.run(scenario())


def test_an_expired_token_ends_its_streams(serve, queue, owner, quick_checks):
    job_submit(actor=owner, data=job_file(), now=T0)
    _, key = key_of(owner, expires_at=timezone.now() + timedelta(seconds=3))
    server = serve()

    async def scenario() -> None:
        rest, watch = await open_rest(f"Bearer {key}"), GrpcWatch(server, bearer(key))
        await events_then_drained(rest, 2)
        await watch.count(2)
        rest_tail, error = await asyncio.gather(rest.rest(3 + DEADLINE), watch.end(3 + DEADLINE))
        assert rest_tail[-1]["status"] == 401 and "expired at" in rest_tail[-1]["message"]
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "expired at" in error.details()

    asyncio.run(scenario())


def test_losing_watch_ends_every_stream_with_permission_denied(
    serve, queue, owner, admin_user, quick_checks
):
    """Olive owns ``demo``; the queue's owners change: her REST stream (SSE, by password),
    her gateway stream (by password) and her gRPC stream (by token) end with 403."""
    job_submit(actor=owner, data=job_file(), now=T0)
    _, key = key_of(owner)
    server = serve()

    async def scenario() -> None:
        response = await AsyncClient().get(
            EVENTS, headers={"Authorization": OLIVE_BASIC, "Accept": "text/event-stream"}
        )
        sse = aiter(response.streaming_content)
        gateway, watch = await open_gateway(OLIVE_BASIC), GrpcWatch(server, bearer(key))
        assert "result" in await gateway.next()
        await watch.count(2)
        await sync_to_async(queue_update)(
            actor=admin_user, name="demo", data={"owners": []}, now=T0
        )
        changed = time.monotonic()

        async def sse_text() -> str:
            async with asyncio.timeout(DEADLINE):
                return "".join([c.decode() if isinstance(c, bytes) else c async for c in sse])

        text, gateway_tail, error = await asyncio.gather(sse_text(), gateway.rest(), watch.end())
        assert time.monotonic() - changed < DEADLINE
        last = text.rstrip("\n").split("\n\n")[-1]
        assert last.startswith("event: error\ndata: ")
        record = json.loads(last.split("data: ", 1)[1])
        assert record["status"] == 403
        assert "'olive' may no longer watch queue 'demo'" in record["message"]
        assert gateway_tail[-1]["error"]["http_code"] == 403
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "may no longer watch" in error.details()

    asyncio.run(scenario())


def test_streams_whose_access_stays_keep_streaming(serve, queue, owner, monkeypatch):
    """Checks that pass end nothing: after several of them, new events still arrive."""
    monkeypatch.setattr(stream_guard, "CHECK_SECONDS", 0.1)
    checks: list[str] = []
    real_check = stream_guard.streams_access_refusals

    def counted(pairs, *, now):
        checks.extend(queue_name for _, queue_name in pairs)
        return real_check(pairs, now=now)

    monkeypatch.setattr(stream_guard, "streams_access_refusals", counted)
    job_submit(actor=owner, data=job_file(), now=T0)
    _, key = key_of(owner)
    server = serve()

    async def scenario() -> None:
        rest, watch = await open_rest(f"Bearer {key}"), GrpcWatch(server, bearer(key))
        await events_then_drained(rest, 2)
        await watch.count(2)
        async with asyncio.timeout(DEADLINE):
            while len(checks) < 6:  # the streams checked a few times, and passed
                await asyncio.sleep(0.05)
        await sync_to_async(job_submit)(actor=owner, data=job_file(), now=T0)
        following = [await rest.next() for _ in range(2)]
        assert [e["type"] for e in following] == ["submitted", "queued"]
        await watch.count(4)
        assert watch.error is None
        watch.call.cancel()

    asyncio.run(scenario())


def test_an_idle_stream_makes_no_access_query_until_a_check_is_due(
    queue, owner, admin_user, monkeypatch
):
    """Around a wake-up (a submit to its job set) the stream reads the new events, and asks
    nothing of the credential or the permission: no check is due yet."""
    monkeypatch.setattr(stream_guard, "CHECK_SECONDS", 600.0)
    _, key = key_of(owner)
    statements: list[str] = []

    async def scenario() -> None:
        rest = await open_rest(f"Bearer {key}")
        await events_then_drained(rest, 2)
        with statements_recorded(monkeypatch) as recorded:
            # A superuser's submit asks nothing of the user tables either.
            await sync_to_async(job_submit)(actor=admin_user, data=job_file(), now=T0)
            assert [(await rest.next())["type"] for _ in range(2)] == ["submitted", "queued"]
        statements.extend(recorded)

    job_submit(actor=owner, data=job_file(), now=T0)
    asyncio.run(scenario())
    assert any("armada_event" in sql for sql in statements)  # the stream did read
    assert not [s for s in statements if "auth_user" in s or "armada_apitoken" in s]


def test_a_lookout_session_logged_out_ends_its_stream(queue, owner, quick_checks):
    """A browser's stream (Server-Sent Events with the session cookie) ends with a 401
    record once that session is logged out elsewhere."""
    from django.conf import settings
    from django.contrib.sessions.models import Session
    from django.test import Client

    browser = Client()
    browser.force_login(owner)
    cookie = browser.cookies[settings.SESSION_COOKIE_NAME].value
    job_submit(actor=owner, data=job_file(), now=T0)

    async def scenario() -> None:
        client = AsyncClient()
        client.cookies[settings.SESSION_COOKIE_NAME] = cookie
        response = await client.get(EVENTS, headers={"Accept": "text/event-stream"})
        assert response.status_code == 200
        sse = aiter(response.streaming_content)
        first = await anext(sse)
        assert "event: submitted" in (first.decode() if isinstance(first, bytes) else first)
        await sync_to_async(Session.objects.filter(session_key=cookie).delete)()
        async with asyncio.timeout(DEADLINE):
            text = "".join([c.decode() if isinstance(c, bytes) else c async for c in sse])
        record = json.loads(text.rstrip("\n").split("\n\n")[-1].split("data: ", 1)[1])
        assert record["status"] == 401 and "its session ended" in record["message"]

    asyncio.run(scenario())
