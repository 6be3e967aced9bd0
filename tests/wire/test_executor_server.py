"""The executor API over real gRPC sockets: the aio server of ``wire.executor_server`` in this
process, the executor's own client (``executor.api.client``), plaintext and TLS."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.utils import timezone

from armada.core.config import parse_config
from armada.executor.agent import ExecutorAgent
from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.client import (
    ApiRefused,
    ApiUnavailable,
    ClientTls,
    ExecutorApiClient,
    Fenced,
    open_channel,
)
from armada.executor.backends.fake import FakeBackend
from armada.models import Job
from armada.services.executor_credentials import executor_credential_revoke
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from armada.wire.executor_server import ExecutorApiServer, ServerTls
from tests.conftest import job, job_file
from tests.executor_api import CREDENTIAL_ADMIN, credential_for

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = 30.0
FAKE = "fake.armadaproject.io/"


class RunningServer:
    """An ExecutorApiServer on its own event loop in a thread, on a free port."""

    def __init__(self, tls: ServerTls | None = None) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(ThreadPoolExecutor(4, thread_name_prefix="test-xapi"))
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server, self.port = self.run(self._start(tls))
        self.target = f"127.0.0.1:{self.port}"

    @staticmethod
    async def _start(tls: ServerTls | None) -> tuple[ExecutorApiServer, int]:
        server = ExecutorApiServer()  # made on the loop that serves it
        port = server.add_port("127.0.0.1:0", tls)
        await server.start()
        return server, port

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(TIMEOUT)

    def close(self) -> None:
        self.run(self.server.stop(0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()


@pytest.fixture
def configured(settings):
    settings.ARMADA = parse_config(
        {
            "executors": [
                {
                    "id": "east",
                    "nodes": [{"name": "n", "allocatable": {"cpu": "8", "memory": "8Gi"}}],
                }
            ]
        }
    )
    return settings.ARMADA.executors[0]


@pytest.fixture
def server():
    running = RunningServer()
    yield running
    running.close()


def client_for(target: str, key: str, tls: ClientTls | None = None) -> ExecutorApiClient:
    return ExecutorApiClient(open_channel(target, tls), lambda: key, timeout=TIMEOUT)


def open_request(executor_id: str = "east") -> pb.OpenSessionRequest:
    return pb.OpenSessionRequest(executor_id=executor_id, pool="default", backend="fake")


def test_a_job_runs_to_success_through_the_socket(configured, server, queue, owner):
    key = credential_for("east", timezone.now())
    agent = ExecutorAgent(configured, FakeBackend(), client_for(server.target, key))
    agent.tick(timezone.now())  # session and first round: the executor and its node exist
    annotations = {FAKE + "duration": "0s", FAKE + "pendingDuration": "0s"}
    [job_id] = job_submit(
        actor=owner, data=job_file(jobs=[job(annotations=annotations)]), now=timezone.now()
    )
    scheduler_cycle(now=timezone.now())
    for _ in range(5):
        report = agent.tick(timezone.now())
        assert report.reachable and not report.fenced
        if Job.objects.get(id=job_id).state == "succeeded":
            break
    assert Job.objects.get(id=job_id).state == "succeeded"
    assert not agent.runs and not agent.outbox  # acknowledged and let go
    agent.api.close()


def test_refusals_arrive_as_the_clients_exceptions(configured, server):
    key = credential_for("east", timezone.now())
    first = client_for(server.target, key)
    session = first.open_session(open_request()).session
    with pytest.raises(ApiRefused, match="may not act for 'west'"):
        first.open_session(open_request("west"))
    with pytest.raises(ApiRefused, match="not an executor key"):
        client_for(server.target, "arm_" + "x" * 40).open_session(open_request())
    second = client_for(server.target, key)
    second.open_session(open_request())  # a second process: the first is fenced
    with pytest.raises(Fenced, match="fenced"):
        first.lease(pb.LeaseRequest(executor_id="east", session=session, pool="default"))
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.get(username=CREDENTIAL_ADMIN)
    credential_id = admin.executor_credentials.get().id
    executor_credential_revoke(actor=admin, credential_id=credential_id, now=timezone.now())
    with pytest.raises(ApiRefused, match="revoked"):  # at once, on the very next call
        second.open_session(open_request())
    first.close()
    second.close()


def test_an_unreachable_server_is_unavailable_not_refused(configured):
    with pytest.raises(ApiUnavailable):
        client_for("127.0.0.1:1", "arme_" + "x" * 40).open_session(open_request())


@pytest.fixture
def certificate(tmp_path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key."""
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=armada-test", "-keyout", str(key), "-out", str(cert),
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


def test_tls_serves_a_client_that_trusts_the_certificate_and_only_it(configured, certificate):
    cert, key_file = certificate
    running = RunningServer(ServerTls(str(cert), str(key_file)))
    try:
        key = credential_for("east", timezone.now())
        trusted = client_for(running.target, key, ClientTls(ca_file=str(cert)))
        assert trusted.open_session(open_request()).session
        with pytest.raises(ApiUnavailable):  # plaintext to a TLS port: no answer
            client_for(running.target, key).open_session(open_request())
        with pytest.raises(ApiUnavailable):  # the system's roots do not know this server
            client_for(running.target, key, ClientTls()).open_session(open_request())
        by_name = client_for(
            running.target, key, ClientTls(ca_file=str(cert), server_name="localhost")
        )
        assert by_name.open_session(open_request()).session
        trusted.close()
    finally:
        running.close()


def test_a_tls_setting_with_one_file_missing_stops_start_up():
    from armada.core.errors import ValidationFailed

    with pytest.raises(ValidationFailed, match="executorApi.tls: certFile and keyFile go"):
        parse_config({"executorApi": {"tls": {"certFile": "/x.pem"}}})
    with pytest.raises(Exception, match="cannot read the TLS certificate"):
        ServerTls("/nonexistent.pem", "/nonexistent.key").credentials()


def test_the_server_clock_is_its_own(configured, server):
    """Heartbeats are the server's time, whatever the executor's clock says."""
    from armada.models import Executor

    key = credential_for("east", timezone.now())
    api = client_for(server.target, key)
    session = api.open_session(open_request()).session
    before = datetime.now(UTC)  # noqa: TID251 - the test's own reading
    api.lease(pb.LeaseRequest(executor_id="east", session=session, pool="default"))
    assert Executor.objects.get(id="east").last_heartbeat >= before
    api.close()
