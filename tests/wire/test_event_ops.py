"""Armada's GetJobSetEvents and Watch, called as the transports call them: cursor semantics,
following new events, errorIfMissing, refusals, no connection held while waiting, and many
watchers beside parallel writers each getting every event once, in order."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import pytest
from armada_client.armada import event_pb2
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection, connections

from armada.api import event_follow, streams
from armada.models import Event
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.services.submit import job_submit
from armada.wire.registry import Call, load_operations
from tests.conftest import T0, job, job_file

pytestmark = pytest.mark.django_db(transaction=True)
GET = "api.Event/GetJobSetEvents"
WATCH = "api.Event/Watch"


@pytest.fixture(autouse=True)
def _close_stream_thread_connections():
    """The reads run in the loop's worker threads; close what they may have left."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())


def events_of(user, request, name: str = GET) -> AsyncIterator[event_pb2.EventStreamMessage]:
    return load_operations()[name].func(Call(actor=user, now=T0), request)


def request(**fields) -> event_pb2.JobSetRequest:
    return event_pb2.JobSetRequest(**{"queue": "demo", "id": "set-1", **fields})


async def collect(stream: AsyncIterator, count: int | None = None, timeout: float = 10.0) -> list:
    """The first ``count`` messages (every message when None, the stream must end)."""
    out = []
    while count is None or len(out) < count:
        try:
            out.append(await asyncio.wait_for(anext(stream), timeout))
        except StopAsyncIteration:
            break
    await stream.aclose()
    return out


def read_all(user, req, name: str = GET) -> list[event_pb2.EventStreamMessage]:
    return asyncio.run(collect(events_of(user, req, name)))


def failure(user, req, name: str = GET) -> Exception:
    with pytest.raises(Exception) as raised:
        read_all(user, req, name)
    return raised.value


def stored_ids(job_set: str = "set-1") -> list[str]:
    rows = Event.objects.filter(queue="demo", job_set=job_set).order_by("id")
    return [str(i) for i in rows.values_list("id", flat=True)]


def test_the_events_of_a_job_set_in_order_then_the_stream_ends(queue, owner):
    ids = job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=T0)
    job_submit(actor=owner, data=job_file(job_set="other"), now=T0)
    messages = read_all(owner, request())
    assert [m.id for m in messages] == stored_ids()
    kinds = [(m.message.WhichOneof("events"), m.message.submitted.job_id) for m in messages]
    assert [k for k, _ in kinds] == ["submitted", "queued", "submitted", "queued"]
    assert [m.message.queued.job_id for m in messages[1::2]] == ids


def test_from_message_id_is_exclusive(queue, owner):
    job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=T0)
    every = stored_ids()
    assert [m.id for m in read_all(owner, request(from_message_id=every[1]))] == every[2:]
    assert read_all(owner, request(from_message_id=every[-1])) == []


@pytest.mark.parametrize("cursor", ["abc", "-1", "1.5", "1-0", "１"])
def test_a_cursor_that_is_not_an_event_id_is_invalid_argument_naming_the_field(
    queue, owner, cursor
):
    error = failure(owner, request(from_message_id=cursor))
    assert isinstance(error, ValidationFailed)
    assert [e.field for e in error.errors] == ["fromMessageId"]
    error = failure(
        owner, event_pb2.WatchRequest(queue="demo", job_set_id="s", from_id=cursor), WATCH
    )
    assert [e.field for e in error.errors] == ["fromId"]


def test_missing_names_are_invalid_argument(queue, owner):
    assert [e.field for e in failure(owner, request(queue="")).errors] == ["queue"]
    assert [e.field for e in failure(owner, request(id="")).errors] == ["id"]


def test_error_if_missing(queue, owner, outsider):
    # Without the flag an empty job set is an empty stream; with it, NOT_FOUND.
    assert read_all(owner, request()) == []
    error = failure(owner, request(errorIfMissing=True))
    assert isinstance(error, NotFound) and "set-1" in str(error)
    # Watch always asks for it.
    watch = event_pb2.WatchRequest(queue="demo", job_set_id="set-1")
    assert isinstance(failure(owner, watch, WATCH), NotFound)
    # Someone who may not watch the queue learns nothing about its job sets.
    assert isinstance(failure(outsider, request(errorIfMissing=True)), PermissionDenied)
    job_submit(actor=owner, data=job_file(), now=T0)
    assert len(read_all(owner, request(errorIfMissing=True))) == 2


def test_refusals(queue, owner, outsider, member, admin_user):
    job_submit(actor=owner, data=job_file(), now=T0)
    error = failure(owner, request(queue="nope"))
    assert isinstance(error, NotFound) and "nope" in str(error)
    for user in (outsider, member):  # the member may submit, not watch
        error = failure(user, request())
        assert isinstance(error, PermissionDenied) and "watch" in str(error)
    assert len(read_all(admin_user, request())) == 2  # the global watch_all_events


def test_anonymous_callers_may_not_watch(queue, owner):
    from django.contrib.auth.models import AnonymousUser

    job_submit(actor=owner, data=job_file(), now=T0)
    assert isinstance(failure(AnonymousUser(), request()), PermissionDenied)


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
        monkeypatch.setattr(streams, "POLL_SECONDS", 60.0)
        monkeypatch.setattr(streams, "POLL_SECONDS_WITH_WAKEUPS", 60.0)
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
    """Each read closes its thread's connection before the stream waits; the check before
    the stream does too."""
    settings.REDIS_URL = None
    monkeypatch.setattr(streams, "POLL_SECONDS", 0.05)
    held: list[bool] = []
    original = event_follow.read_batch

    def read_batch(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        finally:
            held.append(connection.connection is not None)

    monkeypatch.setattr(event_follow, "read_batch", read_batch)
    job_submit(actor=owner, data=job_file(), now=T0)

    async def scenario() -> None:
        stream = events_of(owner, request(watch=True))
        await collect_some(stream, 2)
        waiting = asyncio.create_task(anext(stream))  # no event comes: it polls and waits
        deadline = time.monotonic() + 10.0
        while len(held) < 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        await stream.aclose()

    asyncio.run(scenario())
    assert len(held) >= 5 and not any(held)


@pytest.mark.skipif(
    not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
    reason="the connection pool is PostgreSQL's",
)
def test_fifty_waiting_watchers_hold_no_pooled_connection(queue, owner, monkeypatch):
    """Fifty watchers wait on a pool of a few connections: every connection is back in the
    pool while they wait (holding one each, the ninth would not even get to read)."""
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

    async def scenario() -> dict[str, int]:
        streams_ = [events_of(owner, request(watch=True)) for _ in range(50)]
        for s in streams_:
            await collect_some(s, 2)
        # Each asks for its next event: it reads again, finds none and waits.
        waiting = [asyncio.create_task(anext(s)) for s in streams_]
        deadline = time.monotonic() + 30.0
        while reads < 100 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert reads >= 100
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


def test_the_official_client_follows_a_job_set_through_a_real_server(queue, owner, outsider):
    """``armada_client``'s own event stream (it always sends errorIfMissing) over gRPC."""
    import grpc
    from armada_client.armada import event_pb2_grpc
    from armada_client.client import ArmadaClient

    from tests.e2e.conftest import authenticated_channel
    from tests.wire.grpc_server import InProcessServer, basic

    ids = job_submit(actor=owner, data=job_file(), now=T0)
    server = InProcessServer()
    channel = authenticated_channel(
        server.target, dict(basic("olive", "olive-password"))["authorization"]
    )
    try:
        client = ArmadaClient(channel)
        stream = client.get_job_events_stream("demo", "set-1")
        first = [client.unmarshal_event_response(next(stream)) for _ in range(2)]
        assert [(e.type.value, e.message.job_id) for e in first] == [
            ("submitted", ids[0]),
            ("queued", ids[0]),
        ]
        more = job_submit(actor=owner, data=job_file(), now=T0)
        following = [client.unmarshal_event_response(next(stream)) for _ in range(2)]
        assert [(e.type.value, e.message.job_id) for e in following] == [
            ("submitted", more[0]),
            ("queued", more[0]),
        ]
        assert [e.id for e in first + following] == stored_ids()
        stream.cancel()

        stub = event_pb2_grpc.EventStub(channel)
        missing = event_pb2.JobSetRequest(queue="demo", id="nothing", errorIfMissing=True)
        with pytest.raises(grpc.RpcError) as raised:
            list(stub.GetJobSetEvents(missing, timeout=30))
        assert raised.value.code() == grpc.StatusCode.NOT_FOUND
        bad_cursor = event_pb2.JobSetRequest(queue="demo", id="set-1", from_message_id="x")
        with pytest.raises(grpc.RpcError) as raised:
            list(stub.GetJobSetEvents(bad_cursor, timeout=30))
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "fromMessageId" in raised.value.details()
        otto = authenticated_channel(
            server.target, dict(basic("otto", "otto-password"))["authorization"]
        )
        with pytest.raises(grpc.RpcError) as raised:
            list(event_pb2_grpc.EventStub(otto).GetJobSetEvents(request(), timeout=30))
        assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED
        otto.close()
    finally:
        channel.close()
        server.close()


def test_the_rest_gateway_path_streams_the_same_messages_in_armadas_json(queue, owner, settings):
    """``POST /v1/job-set/{queue}/{id}``: one ``{"result": EventStreamMessage}`` a line,
    camelCase fields, ids as text; a failed event names its category and exit codes."""
    import base64
    import json

    from django.test import AsyncClient

    from armada.models import Run

    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    Run.objects.create(id="01run", job_id=job_id, executor="c1", node="n1", pool="p", leased_at=T0)
    Event.objects.create(
        created=T0,
        queue="demo",
        job_set="set-1",
        job_id=job_id,
        run_id="01run",
        type="failed",
        payload={
            "retryable": True,
            "failureCategory": "oom",
            "failureSubcategory": "",
            "reason": "OOMKilled",
            "exitCodes": {"main": 137},
        },
    )
    olive = "Basic " + base64.b64encode(b"olive:olive-password").decode()

    async def post(body: dict) -> tuple[int, list[dict]]:
        response = await AsyncClient().post(
            "/v1/job-set/demo/set-1",
            json.dumps(body),
            content_type="application/json",
            headers={"Authorization": olive},
        )
        if not response.streaming:
            return response.status_code, [json.loads(response.content)]
        text = b"".join([c async for c in response.streaming_content]).decode()
        return response.status_code, [json.loads(line) for line in text.splitlines() if line]

    status, lines = asyncio.run(post({}))
    assert status == 200
    assert [line["result"]["id"] for line in lines] == stored_ids()
    assert list(lines[0]["result"]["message"]) == ["submitted"]
    failed = lines[2]["result"]["message"]["failed"]
    assert failed["retryable"] is True and failed["failureCategory"] == "oom"
    assert failed["exitCodes"] == {"main": 137} and failed["cause"] == "OOM"
    status, lines = asyncio.run(post({"fromMessageId": stored_ids()[1]}))
    assert [line["result"]["id"] for line in lines] == stored_ids()[2:]
    status, [error] = asyncio.run(post({"errorIfMissing": True, "fromMessageId": "x"}))
    assert status == 400 and "fromMessageId" in error["message"]
