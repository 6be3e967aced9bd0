"""A new user's first session, through real processes: create a queue, submit, watch.

Web (uvicorn), the scheduler (Celery worker + beat) and an executor (Celery worker, fake
backend) run as separate processes; armadactl talks to the REST API. Nothing is eager.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import requests

pytestmark = [pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
LIFECYCLE = ["submitted", "queued", "leased", "pending", "running"]


def test_jobs_travel_from_submit_to_their_end_and_watch_shows_every_step(system):
    created = system.armadactl("create", "queue", "demo")
    assert created.returncode == 0, created.stderr + system.log_tail()

    listed = system.armadactl("get", "queues")
    assert "demo" in listed.stdout

    submitted = system.armadactl("submit", str(ROOT / "examples" / "hello.yaml"))
    assert submitted.returncode == 0, submitted.stderr + system.log_tail()
    job_ids = re.findall(r"\b[0-9a-z]{26}\b", submitted.stdout)
    assert len(job_ids) == 3, submitted.stdout

    watched = system.armadactl("watch", "demo", "hello", "--exit-if-inactive", timeout=90)
    assert watched.returncode == 0, watched.stderr + system.log_tail()
    for job_id in job_ids:
        lines = [line for line in watched.stdout.splitlines() if job_id in line]
        seen = [
            t
            for line in lines
            for t in LIFECYCLE + ["succeeded", "failed"]
            if re.search(rf"\b{t}\b", line, re.I)
        ]
        for step in LIFECYCLE:
            assert step in seen, f"{job_id}: {step} missing from\n" + "\n".join(lines)

    # The stream itself, read raw: two successes and one failure that carries its exit code.
    auth = (system.env["ARMADA_USERNAME"], system.env["ARMADA_PASSWORD"])
    body = requests.get(
        f"{system.url}/api/v1/job-sets/demo/hello/events", auth=auth, timeout=10
    ).text
    events = [json.loads(line) for line in body.splitlines() if line]
    finals = {e["jobId"]: e for e in events if e["type"] in ("succeeded", "failed")}
    assert sorted(e["type"] for e in finals.values()) == ["failed", "succeeded", "succeeded"]
    failed = next(e for e in finals.values() if e["type"] == "failed")
    assert failed["exitCode"] == 1
    assert failed["retryable"] is False
    assert failed["clusterId"] == "e2e" and failed["nodeName"].startswith("worker")
    for job_id in job_ids:
        types = [e["type"] for e in events if e["jobId"] == job_id]
        assert types[:5] == LIFECYCLE, types

    job = requests.get(f"{system.url}/api/v1/jobs/{failed['jobId']}", auth=auth, timeout=10).json()
    assert job["state"] == "failed"
    assert job["runs"][0]["exitCode"] == 1 and job["runs"][0]["state"] == "failed"


def test_bad_submissions_are_refused_with_the_problem_named(system, tmp_path):
    assert system.armadactl("create", "queue", "demo").returncode == 0
    missing_queue = tmp_path / "missing.yaml"
    missing_queue.write_text(
        (ROOT / "examples" / "hello.yaml").read_text().replace("queue: demo", "queue: ghost")
    )
    result = system.armadactl("submit", str(missing_queue))
    assert result.returncode != 0
    assert "ghost" in result.stderr

    no_resources = tmp_path / "no-resources.yaml"
    no_resources.write_text(
        "queue: demo\njobSetId: bad\njobs:\n  - podSpec:\n      containers:\n        - name: main\n          image: busybox\n"
    )
    result = system.armadactl("submit", str(no_resources))
    assert result.returncode != 0
    assert "jobs[0].podSpec.containers[0].resources" in result.stderr
    auth = (system.env["ARMADA_USERNAME"], system.env["ARMADA_PASSWORD"])
    body = requests.get(f"{system.url}/api/v1/job-sets/demo/bad/events", auth=auth, timeout=10).text
    assert body == ""
