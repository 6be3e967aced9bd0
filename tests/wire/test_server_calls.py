"""The gRPC server (``armada.wire.server``) serving calls, with real gRPC clients against a
``grpc.aio`` server in this process (tests/wire/grpc_server.py): the registered table,
Armada's status codes for errors, bad and large inputs, and each call's database connection
handed back.

The server's worker threads use their own database connections, so these tests commit
(``transaction=True``)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import grpc
import pytest
from armada_client.armada import submit_pb2, submit_pb2_grpc
from armada_client.client import ArmadaClient
from django.db import connection
from django.db.utils import OperationalError

from armada.services.errors import (
    AlreadyExists,
    Conflict,
    FailedPrecondition,
    FieldError,
    NotFound,
    PermissionDenied,
    Unavailable,
    ValidationFailed,
)
from armada.wire.registry import Call, load_operations
from armada.wire.server import INTERNAL_MESSAGE, run_unary
from tests.conftest import T0
from tests.wire.fake_operations import operation, raiser
from tests.wire.grpc_server import TIMEOUT, basic, failure, get_queue

pytestmark = pytest.mark.django_db(transaction=True)


# --- serving the registered table -------------------------------------------------------


def test_every_registered_operation_is_served_and_health_needs_no_credentials(serve):
    server = serve()
    assert set(server.server.operations) == set(load_operations())
    client = ArmadaClient(server.channel)
    assert client.submit_health().status == client.submit_health().SERVING
    assert client.event_health().status == client.event_health().SERVING


def test_a_method_no_module_registers_is_unimplemented(serve):
    server = serve({"api.Submit/Health": load_operations()["api.Submit/Health"]})
    error = failure(lambda: get_queue(server, basic("root", "x")))
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED


# --- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "code", "words"),
    [
        (
            ValidationFailed([FieldError("jobRequestItems[0].priority", "must be 0 or more")]),
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid request: jobRequestItems[0].priority: must be 0 or more",
        ),
        (PermissionDenied("needs submit"), grpc.StatusCode.PERMISSION_DENIED, "needs submit"),
        (NotFound("queue 'q' does not exist"), grpc.StatusCode.NOT_FOUND, "does not exist"),
        (AlreadyExists("queue 'q' exists"), grpc.StatusCode.ALREADY_EXISTS, "exists"),
        (FailedPrecondition("in use"), grpc.StatusCode.FAILED_PRECONDITION, "in use"),
        (Conflict("clash"), grpc.StatusCode.FAILED_PRECONDITION, "clash"),
        (Unavailable("try later"), grpc.StatusCode.UNAVAILABLE, "try later"),
        (OperationalError("server closed"), grpc.StatusCode.UNAVAILABLE, "database"),
    ],
)
def test_service_errors_get_armadas_status_codes(serve, admin_user, exc, code, words):
    server = serve({"api.Submit/GetQueue": operation("api.Submit/GetQueue", raiser(exc))})
    error = failure(lambda: get_queue(server, basic("root", "root-password")))
    assert error.code() == code
    assert words in error.details()


def test_a_bug_is_internal_logged_and_its_text_is_not_sent(serve, admin_user, caplog):
    secret = "password=hunter2 in /srv/secret.py"
    server = serve(
        {"api.Submit/GetQueue": operation("api.Submit/GetQueue", raiser(KeyError(secret)))}
    )
    with caplog.at_level(logging.ERROR, logger="armada.wire.server"):
        error = failure(lambda: get_queue(server, basic("root", "root-password")))
    assert error.code() == grpc.StatusCode.INTERNAL
    assert error.details() == INTERNAL_MESSAGE
    assert "hunter2" not in error.details()
    record = next(r for r in caplog.records if "api.Submit/GetQueue failed" in r.getMessage())
    assert record.exc_info is not None and "hunter2" in str(record.exc_info[1])


def test_garbled_request_bytes_are_invalid_argument_and_the_operation_never_runs(serve, admin_user):
    ran = []
    server = serve(
        {"api.Submit/GetQueue": operation("api.Submit/GetQueue", lambda c, r: ran.append(r))}
    )
    raw = server.channel.unary_unary("/api.Submit/GetQueue")  # bytes in, bytes out
    for garbage in (b"\xff\xff\xff", b"\x0a\x05ab", b"\x0a\x02\xc3\x28"):  # truncated, bad UTF-8
        error = failure(
            lambda g=garbage: raw(g, metadata=basic("root", "root-password"), timeout=TIMEOUT)
        )
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid api.QueueGetRequest message" in error.details()
    assert ran == []


def test_a_nul_in_any_string_is_invalid_argument_naming_the_field(serve, admin_user):
    ran = []

    def submit(call: Call, request: submit_pb2.JobSubmitRequest) -> submit_pb2.JobSubmitResponse:
        ran.append(request)
        return submit_pb2.JobSubmitResponse()

    server = serve({"api.Submit/SubmitJobs": operation("api.Submit/SubmitJobs", submit)})
    stub = submit_pb2_grpc.SubmitStub(server.channel)
    item = submit_pb2.JobSubmitRequestItem(priority=1, namespace="default")
    item.annotations["a\x00b"] = "ok"
    item.pod_spec.containers.add(name="main", image="bad\x00image")
    request = submit_pb2.JobSubmitRequest(queue="q", job_set_id="s", job_request_items=[item])
    error = failure(
        lambda: stub.SubmitJobs(request, metadata=basic("root", "root-password"), timeout=TIMEOUT)
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "jobRequestItems[0].podSpec.containers[0].image: must not contain the NUL" in (
        error.details()
    )
    assert "jobRequestItems[0].annotations['a\\x00b']: (the key)" in error.details()
    assert ran == []
    # Without a NUL the same request goes through.
    item.pod_spec.containers[0].image = "busybox"
    del item.annotations["a\x00b"]
    clean = submit_pb2.JobSubmitRequest(queue="q", job_set_id="s", job_request_items=[item])
    stub.SubmitJobs(clean, metadata=basic("root", "root-password"), timeout=TIMEOUT)
    assert len(ran) == 1


def test_a_message_larger_than_grpcs_4_mib_default_is_taken(serve, admin_user):
    sizes = []

    def submit(call: Call, request: submit_pb2.JobSubmitRequest) -> submit_pb2.JobSubmitResponse:
        sizes.append(request.ByteSize())
        items = [submit_pb2.JobSubmitResponseItem(job_id=str(i)) for i in range(1000)]
        return submit_pb2.JobSubmitResponse(job_response_items=items)

    server = serve({"api.Submit/SubmitJobs": operation("api.Submit/SubmitJobs", submit)})
    items = []
    for i in range(1000):  # 1,000 jobs of about 6 KB each
        item = submit_pb2.JobSubmitRequestItem(priority=1, namespace="default")
        item.annotations["note"] = "x" * 6000
        item.pod_spec.containers.add(name=f"c{i}", image="busybox")
        items.append(item)
    request = submit_pb2.JobSubmitRequest(queue="q", job_set_id="s", job_request_items=items)
    assert request.ByteSize() > 4 * 1024 * 1024
    stub = submit_pb2_grpc.SubmitStub(server.channel)
    response = stub.SubmitJobs(request, metadata=basic("root", "root-password"), timeout=TIMEOUT)
    assert len(response.job_response_items) == 1000
    assert sizes == [request.ByteSize()]


def test_a_unary_call_hands_its_database_connection_back(admin_user):
    """``run_unary`` (what the server runs on a worker thread) closes that thread's
    connection after the operation used it."""

    def count_users(call: Call, request: Any) -> submit_pb2.Queue:
        from django.contrib.auth import get_user_model

        assert connection.connection is not None or get_user_model().objects.count() >= 0
        get_user_model().objects.count()
        assert connection.connection is not None  # the operation had one
        return submit_pb2.Queue(name="ok")

    op = operation("api.Submit/GetQueue", count_users)
    found: dict[str, Any] = {}

    def worker() -> None:
        raw = submit_pb2.QueueGetRequest(name="q").SerializeToString()
        found["response"] = run_unary(op, basic("root", "root-password"), "ipv4:1.2.3.4:5", raw, T0)
        found["connection"] = connection.connection

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(TIMEOUT)
    assert submit_pb2.Queue.FromString(found["response"]).name == "ok"
    assert found["connection"] is None
