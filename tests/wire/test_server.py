"""The gRPC server (``armada.wire.server``) with real gRPC clients: a ``grpc.aio`` server in
this process (its own event loop in a thread, on a free port) serving the registered
operations or test-only ones, and the ``python -m armada.grpcserver`` process for SIGTERM.

The server's worker threads use their own database connections, so these tests commit
(``transaction=True``)."""

from __future__ import annotations

import asyncio
import base64
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from armada_client.armada import submit_pb2, submit_pb2_grpc
from armada_client.client import ArmadaClient
from django.db import connection
from django.db.utils import OperationalError
from google.protobuf import empty_pb2
from rest_framework.authtoken.models import Token

from armada.core.config import parse_config
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
from armada.services.tokens import token_create
from armada.wire.registry import Call, Operation, load_operations
from armada.wire.server import INTERNAL_MESSAGE, MAX_MESSAGE_BYTES, WireServer, run_unary
from tests.conftest import T0
from tests.e2e.conftest import _free_port
from tests.waiting import wait_until
from tests.wire.fake_operations import operation, raiser

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30  # seconds a call may take on a busy machine


class InProcessServer:
    """A WireServer on its own event loop in a thread, on a free port of 127.0.0.1."""

    def __init__(self, operations: dict[str, Operation] | None = None) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(ThreadPoolExecutor(4, thread_name_prefix="test-grpc"))
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server, self.port = self.run(self._start(operations))
        self.target = f"127.0.0.1:{self.port}"
        self.channel = grpc.insecure_channel(
            self.target,
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ],
        )

    @staticmethod
    async def _start(operations) -> tuple[WireServer, int]:
        server = WireServer(operations)
        port = server.add_port("127.0.0.1:0")
        await server.start()
        return server, port

    def run(self, coroutine, timeout: float = TIMEOUT) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop_later(self, grace: float):
        """Start a graceful stop; returns its future."""
        return asyncio.run_coroutine_threadsafe(self.server.stop(grace), self.loop)

    def close(self) -> None:
        self.channel.close()
        self.run(self.server.stop(0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()


def whoami(call: Call, request: submit_pb2.QueueGetRequest) -> submit_pb2.Queue:
    """A test operation that answers with the caller's name (empty for anonymous)."""
    return submit_pb2.Queue(name=call.actor.get_username(), user_owners=[request.name])


@pytest.fixture
def serve() -> Iterator[Callable[..., InProcessServer]]:
    started: list[InProcessServer] = []

    def start(operations: dict[str, Operation] | None = None) -> InProcessServer:
        started.append(InProcessServer(operations))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture
def whoami_server(serve) -> InProcessServer:
    return serve({"api.Submit/GetQueue": operation("api.Submit/GetQueue", whoami)})


def basic(username: str, password: str) -> tuple[tuple[str, str]]:
    raw = base64.b64encode(f"{username}:{password}".encode()).decode()
    return (("authorization", f"Basic {raw}"),)


def bearer(key: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {key}"),)


def get_queue(server: InProcessServer, metadata=(), name: str = "q") -> submit_pb2.Queue:
    stub = submit_pb2_grpc.SubmitStub(server.channel)
    return stub.GetQueue(submit_pb2.QueueGetRequest(name=name), metadata=metadata, timeout=TIMEOUT)


def failure(call: Callable[[], Any]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


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


# --- authentication ---------------------------------------------------------------------


def test_basic_credentials_are_a_user(whoami_server, owner):
    assert get_queue(whoami_server, basic("olive", "olive-password")).name == "olive"


def test_a_personal_token_and_a_legacy_token_are_their_users(whoami_server, owner, outsider):
    key = token_create(user=owner, name="grpc", expires_at=None, now=T0).key
    assert get_queue(whoami_server, bearer(key)).name == "olive"
    legacy = Token.objects.create(user=outsider)
    assert get_queue(whoami_server, (("authorization", f"Token {legacy.key}"),)).name == "otto"


def test_no_credentials_are_unauthenticated(whoami_server):
    error = failure(lambda: get_queue(whoami_server))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "authorization: Bearer <token>" in error.details()


def test_anonymous_access_when_configured_and_bad_credentials_are_still_refused(
    whoami_server, settings, owner
):
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True}})
    assert get_queue(whoami_server).name == ""  # AnonymousUser
    error = failure(lambda: get_queue(whoami_server, basic("olive", "wrong")))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        (basic("olive", "wrong"), "invalid username or password"),
        (bearer("arm_" + "x" * 40), "invalid token"),
        (bearer("not-a-token"), "no such token"),
        ((("authorization", "Basic !!!"),), "invalid basic header"),
        ((("authorization", "Negotiate abc"),), "unsupported authorization scheme"),
    ],
)
def test_bad_credentials_are_unauthenticated_saying_why(whoami_server, owner, metadata, words):
    error = failure(lambda: get_queue(whoami_server, metadata))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert words in error.details()


def test_failed_logins_are_throttled_as_on_rest(whoami_server, owner, settings):
    limit = settings.LOGIN_THROTTLE["USER_FAILURES"]
    for _ in range(limit):
        assert (
            failure(lambda: get_queue(whoami_server, basic("olive", "wrong"))).code()
            == grpc.StatusCode.UNAUTHENTICATED
        )
    error = failure(lambda: get_queue(whoami_server, basic("olive", "olive-password")))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "try again" in error.details().lower() or "locked" in error.details().lower()


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


# --- streams and stopping ---------------------------------------------------------------


def queue_stream(count: int, then: BaseException | None = None, forever: bool = False):
    async def op(call: Call, request: submit_pb2.StreamingQueueGetRequest):
        for i in range(count):
            yield submit_pb2.StreamingQueueMessage(queue=submit_pb2.Queue(name=f"q{i}"))
        if then is not None:
            raise then
        while forever:
            await asyncio.sleep(3600)

    return op


def test_a_stream_sends_its_messages_then_its_error(serve, admin_user):
    server = serve(
        {
            "api.Submit/GetQueues": operation(
                "api.Submit/GetQueues", queue_stream(3, NotFound("gone"))
            )
        }
    )
    stub = submit_pb2_grpc.SubmitStub(server.channel)
    stream = stub.GetQueues(
        submit_pb2.StreamingQueueGetRequest(num=3), metadata=basic("root", "root-password")
    )
    received = []
    with pytest.raises(grpc.RpcError) as caught:
        for message in stream:
            received.append(message.queue.name)
    assert received == ["q0", "q1", "q2"]
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


def test_a_stream_refuses_callers_before_it_starts(serve):
    server = serve({"api.Submit/GetQueues": operation("api.Submit/GetQueues", queue_stream(3))})
    stub = submit_pb2_grpc.SubmitStub(server.channel)
    error = failure(lambda: list(stub.GetQueues(submit_pb2.StreamingQueueGetRequest())))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED


def test_stopping_ends_streams_at_once_and_lets_a_unary_call_in_flight_finish(serve, admin_user):
    release = threading.Event()
    started = threading.Event()

    def slow(call: Call, request: submit_pb2.QueueGetRequest) -> submit_pb2.Queue:
        started.set()
        release.wait(TIMEOUT)
        return submit_pb2.Queue(name="finished")

    server = serve(
        {
            "api.Submit/GetQueue": operation("api.Submit/GetQueue", slow),
            "api.Submit/GetQueues": operation(
                "api.Submit/GetQueues", queue_stream(1, forever=True)
            ),
        }
    )
    stub = submit_pb2_grpc.SubmitStub(server.channel)
    auth = basic("root", "root-password")
    stream = stub.GetQueues(submit_pb2.StreamingQueueGetRequest(), metadata=auth)
    assert next(stream).queue.name == "q0"
    pending = stub.GetQueue.future(
        submit_pb2.QueueGetRequest(name="q"), metadata=auth, timeout=TIMEOUT
    )
    assert started.wait(TIMEOUT)

    stopped = server.stop_later(grace=TIMEOUT)
    with pytest.raises(grpc.RpcError) as ended:
        next(stream)
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "shutting down" in ended.value.details()
    assert not pending.done()  # still within its grace
    # A new call is refused while stopping.
    late = grpc.insecure_channel(server.target)
    error = failure(lambda: submit_pb2_grpc.SubmitStub(late).Health(empty_pb2.Empty(), timeout=5))
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    late.close()
    release.set()
    assert pending.result(TIMEOUT).name == "finished"
    stopped.result(TIMEOUT)


# --- the process --------------------------------------------------------------------------


def test_the_grpc_process_serves_health_and_stops_cleanly_on_sigterm(tmp_path):
    from tests.e2e.conftest import process_env

    port = _free_port()
    log = tmp_path / "grpc.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "armada.grpcserver", "--address", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=process_env(tmp_path),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        client = ArmadaClient(channel)

        def healthy() -> bool:
            assert proc.poll() is None, log.read_text()
            try:
                return client.submit_health().status == client.submit_health().SERVING
            except grpc.RpcError:
                return False

        wait_until("the grpc process", healthy, timeout=120, details=log.read_text)
        assert f"on 127.0.0.1:{port}" in log.read_text()
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()
        assert time.monotonic() - started < 10  # nothing in flight: no grace to wait out
        assert "grpc: stopped" in log.read_text()
        channel.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_grpc_process_fails_when_its_port_is_taken(tmp_path):
    import socket

    from tests.e2e.conftest import process_env

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "armada.grpcserver", "--address", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=process_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
