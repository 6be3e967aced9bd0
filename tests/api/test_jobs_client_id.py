"""clientId through our REST API: a retried POST /api/v1/jobs answers with the original ids."""

from __future__ import annotations

import pytest

from armada.models import Event, Job
from tests.conftest import job, job_file

pytestmark = pytest.mark.django_db


def test_a_retried_post_answers_with_the_original_ids(api, queue):
    body = job_file(jobs=[job(clientId="first"), job()])
    first = api.post("/api/v1/jobs", body, format="json")
    assert first.status_code == 201, first.content
    ids = first.json()["jobIds"]
    stored = (Job.objects.count(), Event.objects.count())

    again = api.post("/api/v1/jobs", job_file(jobs=[job(clientId="first")]), format="json")
    assert again.status_code == 201, again.content
    assert again.json() == {"queue": "demo", "jobSetId": "set-1", "jobIds": [ids[0]]}
    assert (Job.objects.count(), Event.objects.count()) == stored

    detail = api.get(f"/api/v1/jobs/{ids[0]}").json()
    assert detail["clientId"] == "first"
    assert api.get(f"/api/v1/jobs/{ids[1]}").json()["clientId"] == ""


def test_a_retried_yaml_file_is_deduplicated_too(api, queue):
    body = """
queue: demo
jobSetId: set-1
jobs:
  - clientId: nightly-2026-01-01
    podSpec:
      containers:
        - name: main
          image: busybox:latest
          resources:
            requests: {cpu: "1", memory: 1Gi}
            limits: {cpu: "1", memory: 1Gi}
"""
    ids = [
        api.post("/api/v1/jobs", data=body, content_type="application/yaml").json()["jobIds"]
        for _ in range(2)
    ]
    assert ids[0] == ids[1]
    assert Job.objects.count() == 1


@pytest.mark.parametrize(
    ("jobs", "field"),
    [
        ([job(clientId=["a"])], "jobs[0].clientId"),
        ([job(clientId="x" * 101)], "jobs[0].clientId"),
        ([job(clientId="a"), job(clientId="a")], "jobs[1].clientId"),
        ([job(clientId="a\x00b")], "jobs[0].clientId"),
    ],
)
def test_a_bad_client_id_is_a_400_naming_it(api, queue, jobs, field):
    response = api.post("/api/v1/jobs", job_file(jobs=jobs), format="json")
    assert response.status_code == 400, response.content
    assert field in [e["field"] for e in response.json()["errors"]]
    assert (Job.objects.count(), Event.objects.count()) == (0, 0)


def test_the_schema_documents_client_id(api):
    schema = api.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    components = schema["components"]["schemas"]
    assert components["JobItem"]["properties"]["clientId"]["maxLength"] == 100
    assert "clientId" in components["Job"]["properties"]
