"""Binoculars through Armada's own client, ``JobLogClient``, against an in-process gRPC server
with every operation.

``JobLogClient`` opens its own channel and sends no credentials; where a server needs them
(ours, unless anonymous callers may watch the queue), the client's channel is wrapped with
one that adds a token to each call. Everything else is the client's own code: the request it
builds (namespace ``default``, pod 0, empty log options) and the lines it returns."""

from __future__ import annotations

import collections
from collections.abc import Iterator

import grpc
import pytest
from armada_client import log_client
from armada_client.armada import binoculars_pb2
from armada_client.internal.binoculars_client import BinocularsClient
from armada_client.log_client import JobLogClient

from armada.models import Node, RunLog
from armada.services.queues import queue_create
from armada.services.tokens import token_create
from armada.wire.binoculars_ops import parse_rfc3339
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_live_executor, make_run
from tests.wire.grpc_server import TIMEOUT, basic, failure

pytestmark = pytest.mark.django_db(transaction=True)

OLIVES_JOB = "01olivesjob000000000000000"
TEXT = "hello from the pod\nsecond line\n"


class _Details(
    collections.namedtuple(
        "_Details",
        ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression"),
    ),
    grpc.ClientCallDetails,
):
    pass


class _SendToken(grpc.UnaryUnaryClientInterceptor):
    def __init__(self, key: str) -> None:
        self.metadata = (("authorization", f"Bearer {key}"),)

    def intercept_unary_unary(self, continuation, details, request):
        sent = _Details(
            details.method,
            details.timeout,
            (*(details.metadata or ()), *self.metadata),
            details.credentials,
            details.wait_for_ready,
            details.compression,
        )
        return continuation(sent, request)


@pytest.fixture
def job(admin_user, owner) -> str:
    """A job of queue ``closed`` (olive's) whose run has sent its log."""
    queue_create(actor=admin_user, data={"name": "closed", "owners": [owner.username]}, now=T0)
    make_job(OLIVES_JOB, queue="closed")
    run = make_run("01olive-run", OLIVES_JOB, state="succeeded")
    RunLog.objects.create(run=run, text=TEXT, updated_at=at(20))
    return OLIVES_JOB


@pytest.fixture
def as_user(monkeypatch) -> Iterator:
    """``as_user(user)``: JobLogClients made afterwards send a token of ``user``."""
    channels: list[grpc.Channel] = []

    def use(user) -> None:
        key = token_create(user=user, name=f"logs-{len(channels)}", expires_at=None, now=at(0)).key

        def new_client(url: str, disable_ssl: bool = False):
            channel = grpc.insecure_channel(url)
            channels.append(channel)
            return channel, BinocularsClient(grpc.intercept_channel(channel, _SendToken(key)))

        monkeypatch.setattr(log_client, "new_binoculars_client", new_client)

    yield use
    for channel in channels:
        channel.close()


def test_job_log_client_reads_the_lines_as_armadas_example_does(job, serve, as_user, owner):
    server = serve()
    as_user(owner)
    lines = JobLogClient(server.target, job, disable_ssl=True).logs()
    assert [line.line for line in lines] == ["hello from the pod", "second line"]
    assert all(parse_rfc3339(line.timestamp, "timestamp") == at(20) for line in lines)


def test_job_log_client_since_time(job, serve, as_user, owner):
    server = serve()
    as_user(owner)
    client = JobLogClient(server.target, job, disable_ssl=True)
    assert client.logs(since_time="2026-01-01T12:00:21Z") == []
    assert len(client.logs(since_time="2026-01-01T12:00:20Z")) == 2
    bad = failure(lambda: client.logs(since_time="noon"))
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "sinceTime" in bad.details()


def test_job_log_client_refusals(job, serve, as_user, outsider, owner):
    server = serve()
    as_user(outsider)
    refused = failure(JobLogClient(server.target, job, disable_ssl=True).logs)
    assert refused.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "may not watch on queue 'closed'" in refused.details()
    as_user(owner)
    unknown = failure(JobLogClient(server.target, "01nosuchjob", disable_ssl=True).logs)
    assert unknown.code() == grpc.StatusCode.NOT_FOUND
    assert "01nosuchjob" in unknown.details()


def test_without_credentials_the_call_is_unauthenticated(job, serve):
    server = serve()
    client = JobLogClient(server.target, job, disable_ssl=True)
    try:
        refused = failure(client.logs)
    finally:
        client._channel.close()
    assert refused.code() == grpc.StatusCode.UNAUTHENTICATED


def test_cordon_cordons_the_node_at_the_control_plane(serve, admin_user):
    make_live_executor(now=T0)
    server = serve()
    stub = BinocularsClient(server.channel).binoculars_stub
    stub.Cordon(
        binoculars_pb2.CordonRequest(node_name="node-1"),
        metadata=basic("root", "root-password"),
        timeout=TIMEOUT,
    )
    node = Node.objects.get(name="node-1")
    assert node.cordoned and node.cordon_reason == "cordoned by Binoculars"
    assert not Node.objects.filter(cordoned=True).exclude(name="node-1").exists()
