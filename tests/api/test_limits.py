"""Oversized and unstorable request bodies: refused whole, with the JSON error shape, and
nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from armada.models import Event, Job, Queue, RetryPolicy
from armada.services.submit import MAX_JOBS_PER_SUBMIT
from tests.conftest import job, job_file

pytestmark = pytest.mark.django_db


def nothing_written() -> bool:
    return not Job.objects.exists() and not Event.objects.exists()


def assert_error_shape(response, status: int) -> dict:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"message", "errors"}
    assert isinstance(body["message"], str) and body["message"]
    assert all(set(e) == {"field", "message"} for e in body["errors"])
    return body


# --- the body size limit ------------------------------------------------------------------------


def test_a_body_over_the_configured_limit_is_refused_with_413(api, queue, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
    body = json.dumps(job_file(jobs=[job() for _ in range(20)]))
    assert len(body) > 2000
    response = api.post("/api/v1/jobs", data=body, content_type="application/json")
    error = assert_error_shape(response, 413)
    assert f"the request body is {len(body)} bytes; at most 2000 are accepted" in error["message"]
    assert nothing_written()


def test_a_body_at_the_limit_is_accepted(api, queue, settings):
    body = json.dumps(job_file(jobs=[job()]))
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = len(body)
    response = api.post("/api/v1/jobs", data=body, content_type="application/json")
    assert response.status_code == 201, response.json()
    assert Job.objects.count() == 1


def test_the_default_limit_is_ten_mebibytes(api, queue):
    padding = "x" * (10 * 1024 * 1024)
    body = json.dumps({"name": "big", "labels": {"padding": padding}})
    response = api.post("/api/v1/queues", data=body, content_type="application/json")
    error = assert_error_shape(response, 413)
    assert f"at most {10 * 1024 * 1024} are accepted" in error["message"]
    assert not Queue.objects.filter(name="big").exists()


@pytest.mark.parametrize(
    ("value", "expected"),
    [("123", "123"), ("", str(10 * 1024 * 1024)), ("1e6", "must be a whole number, got '1e6'")],
    ids=["set", "unset", "not-a-number"],
)
def test_the_limit_is_read_from_the_environment(value, expected):
    env = {
        **os.environ,
        "ARMADA_DEV": "1",
        "ARMADA_MAX_BODY_BYTES": value,
        "DJANGO_SETTINGS_MODULE": "armada.settings",
    }
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from django.conf import settings as s; print(s.DATA_UPLOAD_MAX_MEMORY_SIZE)",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
    )
    assert expected in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/v1/queues"),
        ("put", "/api/v1/queues/demo"),
        ("patch", "/api/v1/queues/demo"),
        ("post", "/api/v1/retry-policies"),
        ("put", "/api/v1/retry-policies/p"),
        ("post", "/api/v1/jobs/cancel"),
        ("post", "/api/v1/jobs/reprioritize"),
    ],
)
def test_every_write_has_the_limit(api, queue, settings, method, path):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    body = json.dumps({"name": "demo", "labels": {"x": "y" * 200}})
    before = Queue.objects.get(name="demo").updated_at
    response = getattr(api, method)(path, data=body, content_type="application/json")
    assert_error_shape(response, 413)
    assert Queue.objects.get(name="demo").updated_at == before
    assert not RetryPolicy.objects.exists()


# --- many jobs in one file ----------------------------------------------------------------------


def test_ten_thousand_jobs_are_refused_whole_naming_the_field(api, queue):
    response = api.post(
        "/api/v1/jobs", job_file(jobs=[job() for _ in range(10_000)]), format="json"
    )
    error = assert_error_shape(response, 400)
    assert error["errors"] == [
        {
            "field": "jobs",
            "message": f"10000 jobs in one request; at most {MAX_JOBS_PER_SUBMIT} are accepted, "
            "split the file",
        }
    ]
    assert "split the file" in error["message"]
    assert nothing_written()


def test_the_most_jobs_in_one_file_are_accepted_whole(api, queue):
    response = api.post(
        "/api/v1/jobs", job_file(jobs=[job() for _ in range(MAX_JOBS_PER_SUBMIT)]), format="json"
    )
    assert response.status_code == 201, response.json()
    ids = response.json()["jobIds"]
    assert len(ids) == len(set(ids)) == MAX_JOBS_PER_SUBMIT
    assert Job.objects.count() == MAX_JOBS_PER_SUBMIT


def test_one_bad_job_among_thousands_refuses_the_file(api, queue):
    jobs = [job() for _ in range(MAX_JOBS_PER_SUBMIT)]
    jobs[4321] = job(memory="lots")
    response = api.post("/api/v1/jobs", job_file(jobs=jobs), format="json")
    error = assert_error_shape(response, 400)
    assert [e["field"] for e in error["errors"]] == [
        "jobs[4321].podSpec.containers[0].resources.requests.memory",
        "jobs[4321].podSpec.containers[0].resources.limits.memory",
    ]
    assert nothing_written()


# --- bodies the store cannot keep ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        (job_file(job_set="night\x00ly"), "jobSetId", "NUL"),
        (job_file(jobs=[job(annotations={"note": "a\x00b"})]), "jobs[0].annotations.note", "NUL"),
        (job_file(jobs=[job(annotations={"k\x00": "v"})]), "jobs[0].annotations[k\x00]", "NUL"),
        (
            job_file(jobs=[job(annotations={"armadaproject.io/gangId": "g\x00"})]),
            "jobs[0].annotations[armadaproject.io/gangId]",
            "NUL",
        ),
    ],
    ids=["nul-in-job-set", "nul-in-annotation", "nul-in-key", "nul-in-dotted-key"],
)
def test_json_text_with_nul_is_refused_naming_the_field(api, queue, body, field, fragment):
    response = api.post("/api/v1/jobs", body, format="json")
    error = assert_error_shape(response, 400)
    assert [e["field"] for e in error["errors"]] == [field]
    assert fragment in error["errors"][0]["message"]
    assert nothing_written()


YAML_JOB = """
queue: demo
jobSetId: nightly
jobs:
  - podSpec:
      containers:
        - name: main
          image: busybox
          resources:
            requests: {{cpu: 100m, memory: 64Mi}}
            limits: {{cpu: 100m, memory: 64Mi}}
          {extra}
"""


@pytest.mark.parametrize(
    ("extra", "field", "fragment"),
    [
        ("args: [.nan]", "jobs[0].podSpec.containers[0].args[0]", "finite"),
        ("workingDir: .inf", "jobs[0].podSpec.containers[0].workingDir", "finite"),
        (
            "env: [{name: DAY, value: 2024-01-01}]",
            "jobs[0].podSpec.containers[0].env[0].value",
            "date",
        ),
        ("stdin: !!binary aGVsbG8=", "jobs[0].podSpec.containers[0].stdin", "bytes"),
        ("tty: !!set {a, b}", "jobs[0].podSpec.containers[0].tty", "set"),
        ('command: ["a\\0b"]', "jobs[0].podSpec.containers[0].command[0]", "NUL"),
    ],
    ids=["nan", "infinity", "date", "binary", "set", "nul"],
)
def test_yaml_values_json_cannot_hold_are_refused_naming_the_field(
    api, queue, extra, field, fragment
):
    response = api.post(
        "/api/v1/jobs", data=YAML_JOB.format(extra=extra), content_type="application/yaml"
    )
    error = assert_error_shape(response, 400)
    assert [e["field"] for e in error["errors"]] == [field]
    assert fragment in error["errors"][0]["message"]
    assert nothing_written()


def test_the_yaml_job_file_itself_is_accepted(api, queue):
    response = api.post(
        "/api/v1/jobs", data=YAML_JOB.format(extra=""), content_type="application/yaml"
    )
    assert response.status_code == 201, response.json()


def test_a_yaml_number_too_long_to_convert_is_refused(api, queue):
    response = api.post(
        "/api/v1/queues",
        data="name: q\npriorityFactor: " + "9" * 5000 + "\n",
        content_type="application/yaml",
    )
    error = assert_error_shape(response, 400)
    assert error["message"].startswith("the body is not valid YAML")
    assert not Queue.objects.filter(name="q").exists()


def test_a_yaml_alias_bomb_is_refused(api, queue):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):  # 10**9 values once expanded
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    bomb = "\n".join(lines) + "\nqueue: demo\njobSetId: s\njobs: *a8\n"
    response = api.post("/api/v1/jobs", data=bomb, content_type="application/yaml")
    error = assert_error_shape(response, 400)
    assert "anchors and aliases" in error["message"]
    assert nothing_written()


def test_anchors_that_share_a_pod_spec_are_fine(api, queue):
    spec = "podSpec: &pod {containers: [{name: main, image: busybox, resources: {requests: {cpu: '1', memory: 1Gi}, limits: {cpu: '1', memory: 1Gi}}}]}"
    body = f"queue: demo\njobSetId: s\njobs:\n  - {spec}\n" + "  - podSpec: *pod\n" * 99
    response = api.post("/api/v1/jobs", data=body, content_type="application/yaml")
    assert response.status_code == 201, response.json()
    assert Job.objects.count() == 100


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
def test_a_body_nested_too_deeply_to_decode_is_refused(api, queue, content_type):
    body = "[" * 2000 + "]" * 2000
    response = api.post("/api/v1/queues", data=body, content_type=content_type)
    error = assert_error_shape(response, 400)
    assert "nested too deeply" in error["message"]


def test_a_body_nested_deeper_than_any_pod_spec_is_refused_naming_where(api, queue):
    deep: dict = {}
    node = deep
    for _ in range(100):
        node["x"] = {}
        node = node["x"]
    response = api.post("/api/v1/jobs", job_file(jobs=[job(labels=deep)]), format="json")
    error = assert_error_shape(response, 400)
    [only] = error["errors"]
    assert only["field"].startswith("jobs[0].labels.x.x.x")
    assert "nested more than 64 levels deep" in only["message"]
    assert nothing_written()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/queues/de%00mo",
        "/api/v1/retry-policies/p%00",
        "/api/v1/jobs/01ABC%00",
        "/api/v1/runs/01ABC%00/log",
        "/api/v1/job-sets/demo/set%00/events",
    ],
)
def test_a_nul_in_a_path_is_refused(api, queue, path):
    response = api.get(path)
    error = assert_error_shape(response, 400)
    assert "NUL" in error["errors"][0]["message"]
