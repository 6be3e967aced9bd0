"""Job commands against a real HTTP server: get job, logs, preempt, reprioritize, cancel;
and the help listing.

No Django, no database: the fake server of conftest.py speaks the REST contract.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.cli.fake_armada import CREATED, FakeArmada
from tests.cli.helpers import run

JOB_WITH_RUNS = {
    "id": "01jjob0001",
    "queue": "q1",
    "jobSetId": "js1",
    "state": "running",
    "priority": 0,
    "runs": [
        {
            "id": "01jrun0001",
            "state": "failed",
            "node": "node-7",
            "exitCode": 137,
            "reason": "OOMKilled",
            "message": "container main was killed",
            "failureCategory": "resources",
            "failureSubcategory": "oom",
            "hint": "raise the memory request",
            "retryable": True,
            "decision": {
                "decision": "retry",
                "policy": "oom",
                "rule": 1,
                "mutation": {"memory": {"kind": "factor", "before": "256Mi", "after": "384Mi"}},
            },
        },
        {"id": "01jrun0002", "state": "running", "node": "node-3", "exitCode": None},
    ],
}


def test_get_job_yaml_by_default_and_json(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = JOB_WITH_RUNS
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "job", "01jjob0001")
    assert (code, err) == (0, "")
    assert yaml.safe_load(out) == JOB_WITH_RUNS
    assert out.startswith("id: 01jjob0001\nqueue: q1\n")  # the server's key order
    assert "  failureCategory: resources\n" in out
    assert "      before: 256Mi\n" in out and "    rule: 1\n" in out
    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "job", "01jjob0001", "-o", "json")
    assert code == 0
    assert json.loads(out) == JOB_WITH_RUNS
    assert fake_armada.paths() == ["/api/v1/jobs/01jjob0001"] * 2


def test_get_job_not_found(capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada) -> None:
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "job", "nope")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: job nope does not exist"


def test_logs_prints_the_text_as_is(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    text = "starting\n\ttab and  spaces\nno newline at the end"
    fake_armada.run_logs["01jrun0001"] = {
        "runId": "01jrun0001",
        "jobId": "01jjob0001",
        "log": text,
        "truncated": False,
        "updatedAt": CREATED,
    }
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "01jrun0001")
    assert (code, out, err) == (0, text, "")
    assert fake_armada.paths() == ["/api/v1/runs/01jrun0001/log"]


def test_logs_says_when_truncated_or_empty(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.run_logs["r1"] = {"runId": "r1", "jobId": "j", "log": "tail\n", "truncated": True}
    fake_armada.run_logs["r2"] = {"runId": "r2", "jobId": "j", "log": "", "truncated": False}
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "r1")
    assert (code, out) == (0, "tail\n")
    assert err.strip() == "Note: the server truncated this log; it is not the whole log."
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "r2")
    assert (code, out) == (0, "")
    assert err.strip() == "Run r2 has no log."
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "r3")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: run r3 does not exist"


def test_help_lists_the_new_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for text in ("update", "delete", "cordon", "uncordon", "logs", "create retry-policy -f"):
        assert text in out
    code, out, _ = run(capsys, "update", "queue", "--help")
    assert code == 0
    assert "--retry-policies P1,P2" in out and '"" clears it' in out
    code, out, _ = run(capsys, "get", "--help")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines() if re.match(r"    \S", line)]
    assert listed == [
        "queue",
        "queues",
        "retry-policy",
        "retry-policies",
        "job",
        "job-sets",
        "executors",
        "executor",
        "executor-credentials",
        "scheduling",
        "queue-report",
        "job-report",
        "scheduling-report",
    ]


def test_preempt_job_checks_queue_and_job_set_then_asks_the_server(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = {**JOB_WITH_RUNS, "state": "running"}
    queue, job_set = JOB_WITH_RUNS["queue"], JOB_WITH_RUNS["jobSetId"]
    code, out, err = run(
        capsys,
        "--url",
        fake_armada.url,
        "preempt",
        "job",
        queue,
        job_set,
        "01jjob0001",
        "maintenance",
    )
    assert (code, err) == (0, "")
    assert out.splitlines() == [  # Armada's two lines
        f"Requesting preemption of job matching queue: {queue}, job set: {job_set}, "
        "and job Id: 01jjob0001",
        "Requested preemption for job 01jjob0001",
    ]
    assert fake_armada.paths("POST") == ["/api/v1/jobs/01jjob0001/preempt"]
    assert fake_armada.requests[-1].body == {"reason": "maintenance"}

    code, out, err = run(
        capsys, "--url", fake_armada.url, "preempt", "job", "other", job_set, "01jjob0001"
    )
    assert code == 1 and "not in queue other" in err
    assert fake_armada.paths("POST") == ["/api/v1/jobs/01jjob0001/preempt"]  # nothing more sent


def test_preempt_a_job_that_is_not_running_is_an_error(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = {**JOB_WITH_RUNS, "state": "succeeded"}
    queue, job_set = JOB_WITH_RUNS["queue"], JOB_WITH_RUNS["jobSetId"]
    code, _, err = run(
        capsys, "--url", fake_armada.url, "preempt", "job", queue, job_set, "01jjob0001"
    )
    assert code == 1 and "not running" in err


def test_reprioritize_a_job_and_a_job_set(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = {**JOB_WITH_RUNS, "id": "01jjob0001"}
    fake_armada.jobs["01jjob0002"] = {**JOB_WITH_RUNS, "id": "01jjob0002"}
    queue, job_set = JOB_WITH_RUNS["queue"], JOB_WITH_RUNS["jobSetId"]
    code, out, _ = run(
        capsys, "--url", fake_armada.url, "reprioritize", "job", queue, job_set, "01jjob0001", "5"
    )
    assert (code, out.splitlines()) == (0, ["Reprioritized jobs with ID:", "01jjob0001"])
    assert fake_armada.requests[-1].body == {
        "queue": queue,
        "jobSetId": job_set,
        "priority": 5,
        "jobIds": ["01jjob0001"],
    }
    code, out, _ = run(
        capsys, "--url", fake_armada.url, "reprioritize", "job-set", queue, job_set, "2"
    )
    assert code == 0
    assert out.splitlines() == ["Reprioritized jobs with ID:", "01jjob0001", "01jjob0002"]
    assert fake_armada.requests[-1].body == {"queue": queue, "jobSetId": job_set, "priority": 2}
    code, _, _ = run(
        capsys, "--url", fake_armada.url, "reprioritize", "job-set", queue, job_set, "high"
    )
    assert code == 2


def test_cancel_a_job_and_a_job_set(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = {**JOB_WITH_RUNS, "id": "01jjob0001"}
    queue, job_set = JOB_WITH_RUNS["queue"], JOB_WITH_RUNS["jobSetId"]
    code, out, _ = run(
        capsys, "--url", fake_armada.url, "cancel", "job", queue, job_set, "01jjob0001"
    )
    assert (code, out.splitlines()) == (
        0,
        [
            f"Requesting cancellation of jobs matching queue: {queue}, job set: {job_set}, "
            "and job ID: 01jjob0001",
            "Requested cancellation for jobs 01jjob0001",
        ],
    )
    assert fake_armada.paths("POST") == ["/api/v1/jobs/cancel"]
    assert fake_armada.requests[-1].body == {
        "queue": queue,
        "jobSetId": job_set,
        "jobIds": ["01jjob0001"],
    }
    code, out, _ = run(capsys, "--url", fake_armada.url, "cancel", "job-set", queue, job_set)
    assert (code, out.splitlines()) == (
        0,
        [
            f"Requesting cancellation of job set matching queue: {queue}, job set: {job_set}",
            f"Requested cancellation for job set {job_set}",
        ],
    )
    assert fake_armada.requests[-1].body == {"queue": queue, "jobSetId": job_set}


def test_reprioritize_finding_no_job_is_an_error_as_in_armada(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(
        capsys, "--url", fake_armada.url, "reprioritize", "job-set", "q1", "empty", "3"
    )
    assert (code, out) == (1, "")
    assert err.strip() == "Error: no jobs were reprioritized"
