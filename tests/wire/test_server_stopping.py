"""The gRPC server's streams and stopping (``armada.wire.server``) with real gRPC clients
against a ``grpc.aio`` server in this process (tests/wire/grpc_server.py), and the
``python -m armada.grpcserver`` process for SIGTERM.

The server's worker threads use their own database connections, so these tests commit
(``transaction=True``)."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from armada_client.armada import event_pb2, event_pb2_grpc, submit_pb2, submit_pb2_grpc
from armada_client.client import ArmadaClient
from google.protobuf import empty_pb2

from armada.services.errors import (
    NotFound,
)
from armada.wire.registry import Call
from tests.e2e.conftest import _free_port
from tests.waiting import wait_until
from tests.wire.fake_operations import operation
from tests.wire.grpc_server import TIMEOUT, basic, failure

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


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


def test_a_client_cancelling_a_stream_being_written_logs_no_error(serve, admin_user, swap, caplog):
    """The server is writing (a stream that sends large messages without end) when the client
    cancels: the failed write is no bug, so nothing is logged at ERROR (a DEBUG line at most)."""
    closed = threading.Event()

    async def endless(call: Call, request: event_pb2.WatchRequest):
        try:
            number = 0
            while True:
                number += 1
                yield event_pb2.EventStreamMessage(id=f"{number}".rjust(100_000, "0"))
        finally:
            closed.set()

    swap("api.Event/Watch", endless)
    server = serve()
    caplog.set_level(logging.DEBUG)
    stub = event_pb2_grpc.EventStub(server.channel)
    request = event_pb2.WatchRequest(queue="q", job_set_id="s")
    stream = stub.Watch(request, metadata=basic("root", "root-password"), timeout=TIMEOUT)
    next(stream)
    stream.cancel()
    wait_until("the server closes the stream", closed.is_set, timeout=TIMEOUT)

    async def collect() -> None:
        await asyncio.sleep(0.2)  # let the call's tasks finish on the server's loop
        gc.collect()  # a task whose error nobody looked at is reported when it is collected

    server.run(collect())
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


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
