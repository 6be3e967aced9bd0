"""Binoculars and Armada's other operator paths against real processes (web, grpc, a Celery
scheduler and an executor on the fake backend): a job prints lines, runs to success, and
Armada's ``JobLogClient`` reads them back as Armada's binoculars example does
(``JobLogClient(url, job_id, disable_ssl).logs()``, then ``line.line`` of each); the same
log on the REST gateway; the job's scheduler report; ``/health`` and ``/swagger.json``.

``JobLogClient`` opens its own channel and sends no credentials: here it is given the
system's channel that sends a user's token, which is how a deployment that needs
credentials uses it."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
import requests
from armada_client import log_client
from armada_client.armada import submit_pb2
from armada_client.internal.binoculars_client import BinocularsClient
from armada_client.log_client import JobLogClient
from armada_client.permissions import Permissions, Subject

from tests.e2e.conftest import HTTP_TIMEOUT
from tests.e2e.wire_system import (
    ADMIN,
    EVENT_TIMEOUT,
    FAKE,
    MEMBER,
    OUTSIDER,
    Flows,
    denied,
    item,
    make_queue,
    module_database,
    module_system,
    submit,
    wait_for_state,
)

pytestmark = [pytest.mark.e2e]

PRINTED = "reading input.csv\n3 rows\n\nwrote output.csv\n"


@pytest.fixture(scope="module")
def transactional_db(django_db_setup, django_db_blocker) -> Iterator[None]:
    yield from module_database(django_db_blocker)


@pytest.fixture(scope="module")
def flows(transactional_db, tmp_path_factory) -> Iterator[Flows]:
    yield from module_system(tmp_path_factory, "binoculars")


def log_client_as(flows: Flows, user: str, job_id: str, monkeypatch) -> JobLogClient:
    """Armada's JobLogClient for ``job_id``, its channel one that sends ``user``'s token."""

    def new_client(url: str, disable_ssl: bool = False):
        assert url == flows.system.grpc_target and disable_ssl
        channel = flows.channel(user)
        return channel, BinocularsClient(channel)

    monkeypatch.setattr(log_client, "new_binoculars_client", new_client)
    return JobLogClient(flows.system.grpc_target, job_id, disable_ssl=True)


def http(flows: Flows, method: str, path: str, user: str | None = ADMIN, **kwargs):
    headers = flows.auth(user) if user else {}
    return requests.request(
        method, flows.system.url + path, headers=headers, timeout=HTTP_TIMEOUT, **kwargs
    )


def test_a_job_prints_lines_and_job_log_client_reads_them(flows, monkeypatch):
    admin = flows.client()
    grant = Permissions([Subject(kind="User", name=MEMBER)], ["watch"])
    make_queue(admin, "logs", permissions=[grant])
    annotations = {FAKE + "log": PRINTED}
    (job_id,) = submit(admin, "logs", "printing", [item(admin, annotations=annotations)])
    wait_for_state(flows, admin, job_id, submit_pb2.SUCCEEDED)

    member = log_client_as(flows, MEMBER, job_id, monkeypatch)
    lines = flows.system.wait_for(
        f"the log of job {job_id}", lambda: member.logs() or None, timeout=EVENT_TIMEOUT
    )
    assert [line.line for line in lines] == ["reading input.csv", "3 rows", "", "wrote output.csv"]
    stamps = {line.timestamp for line in lines}
    assert len(stamps) == 1 and stamps.pop().endswith("Z")
    assert member.logs(since_time="2999-01-01T00:00:00Z") == []

    outsider = log_client_as(flows, OUTSIDER, job_id, monkeypatch)
    refused = denied(outsider.logs)
    assert refused.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "watch" in refused.details()
    unknown = denied(log_client_as(flows, ADMIN, "01nosuchjob", monkeypatch).logs)
    assert unknown.code() == grpc.StatusCode.NOT_FOUND

    # The same lines on the REST gateway, the last two of them (an empty line has no "line":
    # Armada's gateway leaves empty strings out).
    response = http(
        flows,
        "POST",
        "/v1/binoculars/log",
        json={"jobId": job_id, "podNamespace": "default", "logOptions": {"tailLines": 2}},
    )
    assert response.status_code == 200, response.text
    assert response.json()["log"] == [
        {"timestamp": lines[0].timestamp},
        {"timestamp": lines[0].timestamp, "line": "wrote output.csv"},
    ]

    # Its scheduler report under Armada's path.
    report = http(flows, "GET", f"/v1/job/{job_id}/scheduler-report")
    assert report.status_code == 200, report.text
    text = report.json()["report"]
    assert text.startswith(f"Job {job_id} (queue logs, job set printing): succeeded")
    assert "on node worker" in text


def test_health_and_swagger_are_served_by_the_web_process(flows):
    health = http(flows, "GET", "/health", user=None)
    assert health.status_code == 204 and health.content == b""
    spec = http(flows, "GET", "/swagger.json", user=None)
    assert spec.status_code == 200
    document = spec.json()
    assert document["swagger"] == "2.0"
    assert document["paths"]["/v1/binoculars/log"]["post"]["operationId"] == "Logs"
    assert "/v1/scheduling-report" in document["paths"]
