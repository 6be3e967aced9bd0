"""The job-set event stream: cursor semantics, following, formats and access control."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from armada.services.submit import job_submit
from tests.conftest import T0, job, job_file

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _close_stream_thread_connections():
    """The view reads in asgiref's worker thread; close its connection so the test DB can go."""
    from django.db import connections

    yield
    asyncio.run(sync_to_async(connections.close_all)())


def basic(username: str, password: str) -> dict:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


async def read_lines(response, count: int, timeout: float = 10.0) -> list[dict]:
    """The first ``count`` events of a streamed NDJSON response (keep-alive lines skipped)."""
    out: list[dict] = []
    buffer = ""

    async def collect() -> None:
        nonlocal buffer
        async for chunk in response.streaming_content:
            buffer += chunk.decode() if isinstance(chunk, bytes) else chunk
            while "\n" in buffer:
                line, buffer = buffer.split("\n", 1)
                if line.strip():
                    out.append(json.loads(line))
                if len(out) >= count:
                    return

    await asyncio.wait_for(collect(), timeout)
    return out


def stream(path: str, headers: dict):
    return asyncio.run(_get_all(path, headers))


async def _get_all(path: str, headers: dict) -> tuple[int, str, str]:
    response = await AsyncClient().get(path, headers=headers)
    if not response.streaming:
        return response.status_code, response["Content-Type"], response.content.decode()
    body = ""
    async for chunk in response.streaming_content:
        body += chunk.decode() if isinstance(chunk, bytes) else chunk
    return response.status_code, response["Content-Type"], body


def test_events_of_a_job_set_in_order_then_the_stream_ends(queue, owner):
    ids = job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=T0)
    job_submit(actor=owner, data=job_file(job_set="other"), now=T0)
    status, content_type, body = stream(
        "/api/v1/job-sets/demo/set-1/events", basic("olive", "olive-password")
    )

    assert status == 200 and content_type == "application/x-ndjson"
    events = [json.loads(line) for line in body.splitlines() if line]
    assert [(e["jobId"], e["type"]) for e in events] == [
        (ids[0], "submitted"),
        (ids[0], "queued"),
        (ids[1], "submitted"),
        (ids[1], "queued"),
    ]
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    assert all(e["queue"] == "demo" and e["jobSetId"] == "set-1" for e in events)


def test_from_is_exclusive_so_a_client_resumes_without_duplicates(queue, owner):
    job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=T0)
    _, _, body = stream("/api/v1/job-sets/demo/set-1/events", basic("olive", "olive-password"))
    all_events = [json.loads(line) for line in body.splitlines() if line]
    cursor = all_events[1]["id"]
    _, _, rest = stream(
        f"/api/v1/job-sets/demo/set-1/events?from={cursor}", basic("olive", "olive-password")
    )
    assert [json.loads(line)["id"] for line in rest.splitlines() if line] == [
        e["id"] for e in all_events[2:]
    ]


def test_watch_follows_events_written_after_the_client_connected(queue, owner):
    async def scenario() -> list[dict]:
        response = await AsyncClient().get(
            "/api/v1/job-sets/demo/set-1/events?watch=true",
            headers=basic("olive", "olive-password"),
        )
        assert response.status_code == 200  # connected before any event exists
        await sync_to_async(job_submit)(actor=owner, data=job_file(), now=T0)
        return await read_lines(response, 2)

    events = asyncio.run(scenario())
    assert [e["type"] for e in events] == ["submitted", "queued"]


def test_server_sent_events_for_browsers(queue, owner):
    job_submit(actor=owner, data=job_file(), now=T0)
    headers = {**basic("olive", "olive-password"), "Accept": "text/event-stream"}
    status, content_type, body = stream("/api/v1/job-sets/demo/set-1/events", headers)
    assert status == 200 and content_type == "text/event-stream"
    blocks = [b for b in body.split("\n\n") if b]
    assert blocks[0].startswith("id: ") and "\nevent: submitted\ndata: {" in blocks[0]


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/api/v1/job-sets/demo/set-1/events", {}, 401),
        ("/api/v1/job-sets/demo/set-1/events", basic("olive", "wrong"), 401),
        ("/api/v1/job-sets/demo/set-1/events", basic("otto", "otto-password"), 403),
        ("/api/v1/job-sets/demo/set-1/events", basic("mo", "mo-password"), 403),
        ("/api/v1/job-sets/ghost/set-1/events", basic("olive", "olive-password"), 404),
        ("/api/v1/job-sets/demo/set-1/events?from=-3", basic("olive", "olive-password"), 400),
        ("/api/v1/job-sets/demo/set-1/events?from=abc", basic("olive", "olive-password"), 400),
    ],
    ids=[
        "anonymous",
        "bad-password",
        "outsider",
        "submit-only-member",
        "missing-queue",
        "negative-cursor",
        "bad-cursor",
    ],
)
def test_stream_refusals(queue, member, outsider, path, headers, status):
    got, content_type, body = stream(path, headers)
    assert got == status
    assert json.loads(body)["message"]


def test_admin_may_watch_any_queue(queue, admin_user, owner):
    job_submit(actor=owner, data=job_file(), now=T0)
    status, _, body = stream("/api/v1/job-sets/demo/set-1/events", basic("root", "root-password"))
    assert status == 200 and body.count("\n") == 2


def test_a_throttled_login_gets_429_on_the_stream_too(queue):
    path = "/api/v1/job-sets/demo/set-1/events"
    for _ in range(5):
        assert stream(path, basic("olive", "wrong"))[0] == 401
    status, _, body = stream(path, basic("olive", "olive-password"))
    assert status == 429
    assert "try again" in json.loads(body)["message"].lower()
