"""The whole system with TLS on the gRPC port and HTTPS on the web port (``grpc.tls``,
``web.tls``), each with a certificate that a CA made by the test signed.

One system serves the module (``module_system(..., tls=True)``): Armada's Airflow
operator's channel (the system's roots, pointed at the test CA by
``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``, and the token as call credentials) submits a job and
sees it succeed; the REST API and its event stream over HTTPS; armadactl with
``ARMADA_CA_FILE``. Then ``manage.py runall`` with TLS set comes up on https and TLS gRPC,
and refuses to start on a key file it cannot read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import requests
import yaml
from armada_client.client import ArmadaClient

from tests.e2e.conftest import E2E_CONFIG, HTTP_TIMEOUT, _free_port, wait_for_grpc
from tests.e2e.wire_system import (
    ADMIN,
    EVENT_TIMEOUT,
    TO_SUCCESS,
    Flows,
    item,
    kinds,
    make_queue,
    module_database,
    module_system,
    seen,
    submit,
    watch,
)
from tests.tls_certs import make_ca_and_server_cert
from tests.tls_channels import with_tls
from tests.waiting import answers, wait_until

pytestmark = [pytest.mark.e2e]
ROOT = Path(__file__).resolve().parents[2]

# What Armada's Airflow operator does (its ArmadaHook): with credentials, a secure channel on
# the system's default roots (grpc.ssl_channel_credentials() with no arguments) and the
# credentials as call metadata. Run in a process of its own, because grpc reads
# GRPC_DEFAULT_SSL_ROOTS_FILE_PATH once per process.
AIRFLOW_CLIENT = textwrap.dedent(
    """
    import json, sys, time

    import grpc
    from armada_client.client import ArmadaClient
    from armada_client.armada import submit_pb2
    from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
    from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as quantity

    target, token, queue, job_set, deadline = sys.argv[1:6]


    class Auth(grpc.AuthMetadataPlugin):
        def __call__(self, context, callback):
            callback((("authorization", f"Bearer {token}"),), None)


    channel = grpc.secure_channel(
        target=target,
        options=None,
        compression=None,
        credentials=grpc.composite_channel_credentials(
            grpc.ssl_channel_credentials(), grpc.metadata_call_credentials(Auth())
        ),
    )
    client = ArmadaClient(channel=channel)
    amount = {"cpu": quantity.Quantity(string="100m"), "memory": quantity.Quantity(string="64Mi")}
    pod = core_v1.PodSpec(containers=[core_v1.Container(
        name="main", image="busybox:latest", command=["sleep", "1"],
        resources=core_v1.ResourceRequirements(requests=amount, limits=amount),
    )])
    request = client.create_job_request_item(
        priority=1, namespace="default", pod_spec=pod,
        annotations={"fake.armadaproject.io/duration": "1s"},
    )
    response = client.submit_jobs(queue, job_set, [request])
    job_id = response.job_response_items[0].job_id
    states = []
    end = time.monotonic() + float(deadline)
    while time.monotonic() < end:
        state = client.get_job_status([job_id]).job_states[job_id]
        states.append(submit_pb2.JobState.Name(state))
        if state in (submit_pb2.JobState.SUCCEEDED, submit_pb2.JobState.FAILED):
            break
        time.sleep(0.3)
    print(json.dumps({"job_id": job_id, "states": states}))
    """
)


@pytest.fixture(scope="module")
def transactional_db(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's ``transactional_db`` for the whole module (see ``module_database``)."""
    yield from module_database(django_db_blocker)


@pytest.fixture(scope="module")
def flows(transactional_db, tmp_path_factory) -> Iterator[Flows]:
    yield from module_system(tmp_path_factory, "tls", E2E_CONFIG, tls=True)


def test_the_airflow_operators_channel_submits_and_sees_the_job_succeed(flows):
    system = flows.system
    assert system.tls is not None
    make_queue(flows.client(), "airflow")
    env = {**system.env, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(system.tls.ca)}
    arguments = [system.grpc_target, flows.tokens[ADMIN], "airflow", "dag-1", str(EVENT_TIMEOUT)]
    done = subprocess.run(
        [sys.executable, "-c", AIRFLOW_CLIENT, *arguments],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=EVENT_TIMEOUT + 60,
    )
    assert done.returncode == 0, f"{done.stderr}\n{system.log_tail()}"
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["states"][-1] == "SUCCEEDED", f"{answer}\n{system.log_tail()}"

    # Without the CA among its roots the same channel refuses the server.
    env.pop("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH")
    refused = subprocess.run(
        [sys.executable, "-c", AIRFLOW_CLIENT, *arguments[:4], "5"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0 and "UNAVAILABLE" in refused.stderr, refused.stderr


def test_armada_client_over_tls_follows_events_and_cancels(flows):
    admin = flows.client()  # a TLS channel trusting the system's CA, the token as credentials
    make_queue(admin, "secure")
    (job_id,) = submit(admin, "secure", "watched", [item(admin)])
    events = watch(flows, admin, "secure", "watched", seen((job_id, "succeeded")))
    assert kinds(events, job_id) == TO_SUCCESS
    (waiting,) = submit(
        admin, "secure", "stopped", [item(admin, required_node_labels={"zone": "nowhere"})]
    )
    cancelled = admin.cancel_jobs(queue="secure", job_set_id="stopped", job_id=waiting)
    assert list(cancelled.cancelled_ids) == [waiting]
    plain = grpc.insecure_channel(flows.system.grpc_target)
    try:
        with pytest.raises(grpc.RpcError) as error:
            ArmadaClient(plain).submit_health()
        assert error.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        plain.close()


def test_the_rest_api_and_its_event_stream_over_https(flows):
    system = flows.system
    assert system.url.startswith("https://")
    headers = flows.auth(ADMIN)
    created = requests.post(
        f"{system.url}/api/v1/queues",
        json={"name": "rest"},
        headers=headers,
        verify=system.verify,
        timeout=HTTP_TIMEOUT,
    )
    assert created.status_code == 201, created.text
    job = {
        "queue": "rest",
        "jobSetId": "https",
        "jobs": [
            {
                "priority": 1,
                "namespace": "default",
                "annotations": {"fake.armadaproject.io/duration": "1s"},
                "podSpec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox:latest",
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "64Mi"},
                                "limits": {"cpu": "100m", "memory": "64Mi"},
                            },
                        }
                    ]
                },
            }
        ],
    }
    submitted = system.post("/api/v1/jobs", json=job)
    assert submitted.status_code == 201, submitted.text
    (job_id,) = submitted.json()["jobIds"]

    # The event stream (an async view) followed over HTTPS until the job has succeeded.
    stream = requests.get(
        f"{system.url}/api/v1/job-sets/rest/https/events",
        params={"watch": "true"},
        headers=headers,
        verify=system.verify,
        stream=True,
        timeout=HTTP_TIMEOUT,
    )
    assert stream.status_code == 200, stream.text
    types: list[str] = []
    deadline = time.monotonic() + EVENT_TIMEOUT
    try:
        for line in stream.iter_lines():
            assert time.monotonic() < deadline, f"saw only {types}\n{system.log_tail()}"
            if line.strip():  # blank lines keep the connection alive
                event = json.loads(line)
                assert event["jobId"] == job_id, event
                types.append(event["type"])
                if event["type"] == "succeeded":
                    break
    finally:
        stream.close()
    assert types == TO_SUCCESS

    # A client that does not trust the CA refuses the server; plain HTTP gets no answer.
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{system.url}/healthz", timeout=HTTP_TIMEOUT)
    assert not answers(system.url.replace("https://", "http://", 1) + "/healthz", timeout=5)


def test_armadactl_talks_https_with_the_ca_file(flows):
    system = flows.system
    made = system.armadactl("create", "queue", "from-cli")
    assert made.returncode == 0, made.stderr
    listed = system.armadactl("get", "queues")
    assert listed.returncode == 0 and "from-cli" in listed.stdout, listed.stderr

    untrusting = {k: v for k, v in system.env.items() if k != "ARMADA_CA_FILE"}
    refused = subprocess.run(
        [str(Path(sys.executable).with_name("armadactl")), "get", "queues"],
        env=untrusting,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0
    assert "ARMADA_CA_FILE" in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
    missing = subprocess.run(
        [str(Path(sys.executable).with_name("armadactl")), "get", "queues"],
        env={**system.env, "ARMADA_CA_FILE": str(system.workdir / "no-ca.pem")},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode != 0 and "ARMADA_CA_FILE" in missing.stderr, missing.stderr
    assert "Traceback" not in missing.stderr


# --- runall ------------------------------------------------------------------------------


def runall_env(tmp_path: Path, config: dict) -> dict[str, str]:
    """runall on the embedded default (SQLite, file broker) with ``config``, no executors."""
    (tmp_path / "armada.yaml").write_text(yaml.safe_dump(config))
    drop = ("DATABASE_URL", "REDIS_URL", "ARMADA_GRPC_ADDR", "ARMADA_EXECUTOR_API_ADDR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        ARMADA_DEV="1",
        ARMADA_VAR_DIR=str(tmp_path / "var"),
        ARMADA_CONFIG=str(tmp_path / "armada.yaml"),
        ARMADA_ADMIN_PASSWORD="tls-admin-password",
        PYTHONUNBUFFERED="1",
    )
    return env


def test_runall_with_tls_serves_https_and_tls_grpc(tmp_path):
    files = make_ca_and_server_cert(tmp_path / "tls")
    grpc_port, port = _free_port(), _free_port()
    config = with_tls(
        {
            "grpc": {"port": grpc_port},
            "executorApi": {"port": _free_port()},
            "scheduling": {"cyclePeriod": "1s"},
            "executors": [],
        },
        files,
    )
    log_path = tmp_path / "runall.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "runall", "--port", str(port)],
            cwd=ROOT,
            env=runall_env(tmp_path, config),
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def log_text() -> str:
        return log_path.read_text(errors="replace")[-6000:]

    try:

        def up() -> bool:
            assert proc.poll() is None, log_text()
            return "Armada is up at" in log_text()

        wait_until("runall to start", up, timeout=120, interval=0.3, details=log_text)
        url = f"https://127.0.0.1:{port}"
        assert f"Armada is up at {url}/" in log_text()
        assert f"Armada's gRPC API at 127.0.0.1:{grpc_port} (TLS)" in log_text()
        auth = ("admin", "tls-admin-password")
        wait_until(
            "the API over HTTPS",
            lambda: answers(f"{url}/api/v1/queues", auth=auth, verify=str(files.ca)),
            timeout=60,
            details=log_text,
        )
        wait_for_grpc(f"localhost:{grpc_port}", proc, details=log_text, ca_file=files.ca)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, log_text()


def test_runall_refuses_to_start_on_a_key_it_cannot_read(tmp_path):
    files = make_ca_and_server_cert(tmp_path / "tls")
    config = with_tls({"executors": []}, files)
    config["web"]["tls"]["keyFile"] = str(tmp_path / "missing.key")
    done = subprocess.run(
        [sys.executable, "manage.py", "runall", "--port", str(_free_port())],
        cwd=ROOT,
        env=runall_env(tmp_path, config),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "cannot read the TLS key" in done.stderr and "web.tls.keyFile" in done.stderr
    assert str(tmp_path / "missing.key") in done.stderr
    assert "Traceback" not in done.stderr, done.stderr
