"""The grpc process as users meet it: started by ``manage.py runall`` beside the others,
answering the official ``armada_client`` (unmodified) with their credentials, and restarted
by runall's supervisor when it dies; and in the ``system`` of the end-to-end tests."""

from __future__ import annotations

import json
import os
import signal

import grpc
import pytest
import requests
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from tests.e2e.conftest import HTTP_TIMEOUT, authenticated_channel, wait_for_grpc
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


def _container() -> dict:
    resources = {"cpu": "100m", "memory": "64Mi"}
    return {
        "name": "main",
        "image": "busybox:latest",
        "command": ["true"],
        "resources": {"requests": resources, "limits": resources},
    }


def test_the_gateway_of_the_web_process_submits_and_streams_a_job_set(system):
    """Armada's REST paths on the real web process (uvicorn, the body guard, async streams)
    with the real operations: a queue, a submit in Kubernetes JSON, the job set's events."""
    created = system.post("/v1/queue", json={"name": "gateway", "priorityFactor": 1})
    assert created.status_code == 200, created.text
    assert created.json() == {}
    got = system.get("/v1/queue/gateway")
    assert got.status_code == 200 and got.json()["name"] == "gateway"
    missing = system.get("/v1/queue/no-such-queue")
    assert missing.status_code == 404 and missing.json()["code"] == 5

    item = {
        "priority": 1,
        "namespace": "default",
        "annotations": {"fake.armadaproject.io/duration": "1s"},
        "podSpec": {"containers": [_container()]},
    }
    # Unknown keys are ignored, as Armada's gateway ignores them; a wrong type is not.
    typo = system.post(
        "/v1/job/submit",
        json={
            "queue": "gateway",
            "jobSetId": "s",
            "jobRequestItems": [{**item, "priority": "high"}],
        },
    )
    assert typo.status_code == 400
    assert typo.json()["message"] == (
        "invalid request: jobRequestItems[0].priority: must be a number, not a string"
    )
    submitted = system.post(
        "/v1/job/submit",
        json={"queue": "gateway", "jobSetId": "s", "jobRequestItems": [item]},
    )
    assert submitted.status_code == 200, submitted.text
    (job_id,) = [i["jobId"] for i in submitted.json()["jobResponseItems"]]

    def events() -> list[dict]:
        response = system.post("/v1/job-set/gateway/s", json={"watch": False})
        assert response.status_code == 200, response.text
        return [json.loads(line) for line in response.text.splitlines() if line]

    lines = system.wait_for(
        "the job to succeed on the gateway's stream",
        lambda: (found := events()) and "succeeded" in found[-1]["result"]["message"] and found,
    )
    kinds = [next(iter(line["result"]["message"])) for line in lines]
    assert kinds[0] == "submitted" and kinds[-1] == "succeeded"
    assert all(next(iter(line["result"]["message"].values()))["jobId"] == job_id for line in lines)
    # Without credentials the body guard answers before reading the body.
    refused = requests.post(
        system.url + "/v1/job/submit", json={"queue": "gateway"}, timeout=HTTP_TIMEOUT
    )
    assert refused.status_code == 401 and refused.json()["code"] == 16


def test_armada_client_submits_and_follows_a_job_to_success(system, armada_client):
    admin = armada_client("e2e-admin")
    admin.create_queue(admin.create_queue_request(name="grpc-jobs", priority_factor=1.0))
    from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
    from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as quantity

    resources = {
        "cpu": quantity.Quantity(string="100m"),
        "memory": quantity.Quantity(string="64Mi"),
    }
    pod = core_v1.PodSpec(
        containers=[
            core_v1.Container(
                name="main",
                image="busybox:latest",
                command=["true"],
                resources=core_v1.ResourceRequirements(requests=resources, limits=resources),
            )
        ]
    )
    item = admin.create_job_request_item(priority=1, pod_spec=pod, namespace="default")
    response = admin.submit_jobs("grpc-jobs", "set-1", [item])
    (job_id,) = [i.job_id for i in response.job_response_items]
    assert job_id

    def succeeded() -> bool:
        states = admin.get_job_status([job_id]).job_states
        return states[job_id] == submit_pb2.SUCCEEDED

    system.wait_for("the job to succeed", succeeded, timeout=90)
