"""The grpc process as users meet it: started by ``manage.py runall`` beside the others,
answering the official ``armada_client`` (unmodified) with their credentials, and restarted
by runall's supervisor when it dies; and in the ``system`` of the end-to-end tests."""

from __future__ import annotations

import os
import signal

import grpc
import pytest
from armada_client.client import ArmadaClient

from tests.e2e.conftest import authenticated_channel, wait_for_grpc
from tests.e2e.test_runall import Runall
from tests.test_supervisor import alive

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def runall(tmp_path):
    started: list[Runall] = []

    def start(*args: str) -> Runall:
        started.append(Runall(tmp_path, *args))
        return started[-1]

    yield start
    for r in started:
        r.stop()


def basic_client(r: Runall) -> tuple[ArmadaClient, grpc.Channel]:
    import base64

    raw = base64.b64encode(f"{r.auth[0]}:{r.auth[1]}".encode()).decode()
    channel = authenticated_channel(r.grpc_target, f"Basic {raw}")
    return ArmadaClient(channel), channel


def test_runall_serves_armadas_grpc_api_and_restarts_the_grpc_process(runall):
    r = runall()
    r.wait_up()
    assert f"Armada's gRPC API at {r.grpc_target}" in r.log()
    assert f"its REST gateway at {r.url}/v1/" in r.log()
    grpc_pid = r.pids()["grpc"]
    wait_for_grpc(r.grpc_target, details=lambda: r.log()[-6000:])

    client, channel = basic_client(r)
    try:
        assert client.submit_health().status == client.submit_health().SERVING
        assert client.event_health().status == client.event_health().SERVING
        # Calls that need a user get one from the Basic credentials; a wrong password is
        # refused whatever the call.
        with pytest.raises(grpc.RpcError) as wrong:
            wrong_client = ArmadaClient(authenticated_channel(r.grpc_target, "Basic eDp5"))
            wrong_client.get_queue("nothing-here")
        assert wrong.value.code() == grpc.StatusCode.UNAUTHENTICATED

        os.kill(grpc_pid, signal.SIGKILL)
        line = f"runall: grpc (pid {grpc_pid}) was killed by SIGKILL; restart 1 of 5 within 60 s"
        r.wait_for("runall to see grpc die", lambda: line in r.log())
        r.wait_for("grpc to be restarted", lambda: r.pids()["grpc"] != grpc_pid)
        assert alive(r.pids()["grpc"])
        wait_for_grpc(r.grpc_target, details=lambda: r.log()[-6000:])
        # The same channel reconnects to the new process.
        r.wait_for(
            "health through the old channel",
            lambda: _serving(client),
        )
        assert client.event_health().status == client.event_health().SERVING
    finally:
        channel.close()
    assert r.proc.poll() is None


def _serving(client: ArmadaClient) -> bool:
    try:
        return client.submit_health().status == client.submit_health().SERVING
    except grpc.RpcError:
        return False


def test_the_e2e_system_serves_armada_client_as_a_given_user(system, armada_client, outsider):
    admin = armada_client("e2e-admin")
    assert admin.submit_health().status == admin.submit_health().SERVING
    stranger = armada_client(outsider)
    # A user is who their token says: the outsider may not create a queue.
    queue = admin.create_queue_request(name="grpc-e2e", priority_factor=1.0)
    with pytest.raises(grpc.RpcError) as denied:
        stranger.create_queue(queue)
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    admin.create_queue(queue)
    assert stranger.get_queue("grpc-e2e").name == "grpc-e2e"
    basic = armada_client("e2e-admin", password="e2e-password")
    assert basic.event_health().status == basic.event_health().SERVING
