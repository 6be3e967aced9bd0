"""Following a job set's events through the real transports: the official client over gRPC,
and the REST gateway's path in Armada's JSON."""

from __future__ import annotations

import asyncio

import pytest
from armada_client.armada import event_pb2

from armada.models import Event
from armada.services.submit import job_submit
from tests.conftest import T0, job_file
from tests.wire.event_streams import (
    request,
    stored_ids,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_close_stream_thread_connections"),
]


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
    # Armada's gateway writes enums as numbers: Cause OOM is 2.
    assert failed["exitCodes"] == {"main": 137} and failed["cause"] == 2
    status, lines = asyncio.run(post({"fromMessageId": stored_ids()[1]}))
    assert [line["result"]["id"] for line in lines] == stored_ids()[2:]
    status, [error] = asyncio.run(post({"errorIfMissing": True, "fromMessageId": "x"}))
    assert status == 400 and "fromMessageId" in error["message"]
