from __future__ import annotations

import pytest

from armada.models import Event, Job
from tests.conftest import job, job_file

pytestmark = pytest.mark.django_db

JOB_FILE_YAML = """
queue: demo
jobSetId: nightly
jobs:
  - priority: 1
    podSpec:
      containers:
        - name: main
          image: busybox
          resources:
            requests: {cpu: 100m, memory: 64Mi}
            limits: {cpu: 100m, memory: 64Mi}
"""


def test_submit_json_returns_ids(api, queue):
    response = api.post("/api/v1/jobs", job_file(jobs=[job(), job()]), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["queue"] == "demo" and body["jobSetId"] == "set-1"
    assert len(body["jobIds"]) == 2
    assert set(Job.objects.values_list("id", flat=True)) == set(body["jobIds"])


def test_submit_yaml_job_file(api, queue):
    response = api.post("/api/v1/jobs", data=JOB_FILE_YAML, content_type="application/yaml")
    assert response.status_code == 201, response.json()
    job_row = Job.objects.get()
    assert (job_row.job_set, job_row.priority, job_row.requests) == (
        "nightly",
        1,
        {"cpu": 100, "memory": 64 * 2**20 * 1000},
    )


def _without_resources():
    spec = job()
    del spec["podSpec"]["containers"][0]["resources"]
    return spec


def _unequal():
    spec = job()
    spec["podSpec"]["containers"][0]["resources"]["limits"]["cpu"] = "2"
    return spec


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (job_file(queue="ghost"), "queue"),
        ({"jobSetId": "x", "jobs": [job()]}, "queue"),
        (job_file(jobs=[]), "jobs"),
        (job_file(jobs=[_without_resources()]), "jobs[0].podSpec.containers[0].resources"),
        (job_file(jobs=[job(), _unequal()]), "jobs[1].podSpec.containers[0].resources"),
        (
            job_file(jobs=[job(memory="lots")]),
            "jobs[0].podSpec.containers[0].resources.requests.memory",
        ),
        (job_file(jobs=[{"podSpec": {"containers": []}}]), "jobs[0].podSpec.containers"),
        (job_file(jobs=[job(colour="red")]), "jobs[0].colour"),
        (["not", "a", "mapping"], ""),
    ],
    ids=[
        "missing-queue",
        "no-queue-field",
        "no-jobs",
        "no-resources",
        "requests-not-limits",
        "bad-quantity",
        "no-containers",
        "unknown-field",
        "not-a-mapping",
    ],
)
def test_bad_job_file_is_a_400_naming_the_problem_and_writes_nothing(api, queue, body, field):
    response = api.post("/api/v1/jobs", body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert field in [e["field"] for e in payload["errors"]], payload
    assert Job.objects.count() == 0
    assert Event.objects.count() == 0


def test_malformed_yaml_is_a_400(api, queue):
    response = api.post("/api/v1/jobs", data="queue: [unclosed", content_type="application/yaml")
    assert response.status_code == 400
    assert "YAML" in response.json()["message"]
    assert Job.objects.count() == 0


def test_malformed_json_is_a_400(api, queue):
    response = api.post("/api/v1/jobs", data="{not json", content_type="application/json")
    assert response.status_code == 400
    assert "JSON" in response.json()["message"]


def test_submit_to_a_queue_without_permission_is_a_403(api_as, queue, outsider):
    response = api_as(outsider).post("/api/v1/jobs", job_file(), format="json")
    assert response.status_code == 403
    assert "submit" in response.json()["message"]
    assert Job.objects.count() == 0


def test_get_job_with_runs(api, queue):
    [job_id] = api.post("/api/v1/jobs", job_file(), format="json").json()["jobIds"]
    body = api.get(f"/api/v1/jobs/{job_id}").json()
    assert body["id"] == job_id and body["state"] == "queued" and body["runs"] == []
    assert body["requests"] == {"cpu": "1", "memory": "1Gi"}


def test_member_who_may_only_submit_cannot_read_jobs(api_as, queue, member):
    [job_id] = api_as(member).post("/api/v1/jobs", job_file(), format="json").json()["jobIds"]
    assert api_as(member).get(f"/api/v1/jobs/{job_id}").status_code == 403
