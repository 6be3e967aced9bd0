"""The REST gateway's streamed answers: one JSON result per line, then the stream's error.

Most tests swap a test-only operation into the registry for one method (the ``swap`` fixture
of tests/wire/conftest.py), so that what the gateway hands the operation (and what it does
with the answer) can be seen exactly."""

from __future__ import annotations

import asyncio
import json

import pytest
from armada_client.armada import event_pb2

from armada.services.errors import (
    NotFound,
    PermissionDenied,
)
from armada.wire.gateway import make_view
from armada.wire.http_rules import http_rules
from armada.wire.registry import Call
from tests.wire.gateway_calls import JSON, ROOT_AUTH, post_async

pytestmark = pytest.mark.django_db


# --- streams -----------------------------------------------------------------------------


def events(count: int, then: BaseException | None = None):
    async def stream(call: Call, request: event_pb2.JobSetRequest):
        for i in range(count):
            yield event_pb2.EventStreamMessage(
                id=str(i + 1),
                message=event_pb2.EventMessage(
                    queued=event_pb2.JobQueuedEvent(job_id=f"j{i}", queue=request.queue)
                ),
            )
        if then is not None:
            raise then

    return stream


@pytest.mark.django_db(transaction=True)
def test_a_stream_is_one_result_per_line_then_its_error(admin_user, swap):
    seen = swap("api.Event/GetJobSetEvents", events(2, NotFound("job set gone")))
    response, content = post_async(
        "/v1/job-set/q/s", {"watch": False, "fromMessageId": "7"}, **ROOT_AUTH
    )
    assert response.status_code == 200
    assert response["Content-Type"] == JSON
    lines = [json.loads(line) for line in content.splitlines()]
    assert lines == [
        {"result": {"id": "1", "message": {"queued": {"jobId": "j0", "queue": "q"}}}},
        {"result": {"id": "2", "message": {"queued": {"jobId": "j1", "queue": "q"}}}},
        {
            "error": {
                "grpc_code": 5,
                "http_code": 404,
                "message": "job set gone",
                "http_status": "Not Found",
            }
        },
    ]
    request = seen[0][1]
    assert (request.queue, request.id, request.from_message_id) == ("q", "s", "7")


@pytest.mark.django_db(transaction=True)
def test_a_stream_that_fails_before_its_first_message_answers_with_the_status(admin_user, swap):
    swap("api.Event/GetJobSetEvents", events(0, PermissionDenied("may not watch queue 'q'")))
    response, content = post_async("/v1/job-set/q/s", {}, **ROOT_AUTH)
    assert response.status_code == 403
    denied = "may not watch queue 'q'"
    assert json.loads(content) == {"error": denied, "code": 7, "message": denied}
    response, content = post_async("/v1/job-set/q/s", {})
    assert response.status_code == 401
    assert json.loads(content)["code"] == 16


@pytest.mark.django_db(transaction=True)
def test_a_stream_with_no_messages_is_an_empty_answer(admin_user, swap):
    swap("api.Event/GetJobSetEvents", events(0))
    response, content = post_async("/v1/job-set/q/s", {}, **ROOT_AUTH)
    assert response.status_code == 200
    assert content == b""


@pytest.mark.django_db(transaction=True)
def test_a_stream_with_a_bad_body_is_400(admin_user, swap):
    seen = swap("api.Event/GetJobSetEvents", events(1))
    response, content = post_async("/v1/job-set/q/s", {"watch": "yes"}, **ROOT_AUTH)
    assert response.status_code == 400
    assert json.loads(content)["message"].startswith("invalid request: watch: ")
    assert seen == []


def test_a_view_for_a_template_with_a_stream_is_async():

    stream_rule = next(r for r in http_rules() if r.template == "/v1/job-set/{queue}/{id}")
    unary_rule = next(r for r in http_rules() if r.template == "/v1/job/submit")
    assert asyncio.iscoroutinefunction(make_view({"POST": stream_rule}))
    assert not asyncio.iscoroutinefunction(make_view({"POST": unary_rule}))
