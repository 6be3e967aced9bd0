"""Job files: the local shape check, dry runs, and submit against a real HTTP server (the
lines it prints).

No Django, no database: the fake server of conftest.py speaks the REST contract.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from armada.cli.jobfile import check_job_file, load_job_file
from tests.cli.fake_armada import FakeArmada
from tests.cli.helpers import VALID_JOB_FILE, run, write

# -- job files ---------------------------------------------------------------------------


def test_job_file_shape_check_names_each_field(tmp_path: Path) -> None:
    errors = check_job_file(
        {
            "queue": "",
            "jobs": [{"podSpec": []}, "nope", {"podSpec": {}, "annotations": [1]}],
            "extra": 1,
        }
    )
    assert errors == [
        ("extra", "unknown field; allowed: queue, jobSetId, jobs"),
        ("queue", "is required and must be a string"),
        ("jobSetId", "is required and must be a string"),
        ("jobs[0].podSpec", "is required and must be a mapping"),
        ("jobs[1]", "must be a mapping"),
        ("jobs[2].annotations", "must be a mapping of strings to strings"),
    ]
    assert check_job_file(VALID_JOB_FILE) == []
    assert check_job_file([1, 2]) == [("", "a job file is a mapping with queue, jobSetId and jobs")]


def test_yaml_dates_stay_strings(tmp_path: Path) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(
        "queue: q1\njobSetId: 2024-01-01\njobs:\n- podSpec: {}\n  annotations: {day: 2024-05-06}\n"
    )
    data = load_job_file(str(path))
    assert data["jobSetId"] == "2024-01-01"
    assert data["jobs"][0]["annotations"]["day"] == "2024-05-06"


def test_dry_run_of_an_invalid_file_lists_the_problems(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "bad.yaml", {"queue": "q1", "jobs": [{"priority": 1}]})
    code, out, err = run(capsys, "submit", str(path), "--dry-run")
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        f"Error: job file {path} is not valid",
        "  jobSetId: is required and must be a string",
        "  jobs[0].podSpec: is required and must be a mapping",
    ]


def test_dry_run_of_unparsable_yaml(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("queue: [oops\n")
    code, out, err = run(capsys, "submit", str(path), "--dry-run")
    assert code == 1 and out == ""
    assert err.startswith(f"Error: {path} is not valid YAML")
    assert "Traceback" not in err


def test_dry_run_of_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "submit", str(tmp_path / "nope.yaml"), "--dry-run")
    assert code == 1
    assert err.strip() == f"Error: job file {tmp_path / 'nope.yaml'} does not exist"


def test_submit_prints_one_line_per_job(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.add_queue("q1")
    path = write(tmp_path / "jobs.yaml", VALID_JOB_FILE)
    code, out, err = run(capsys, "--url", fake_armada.url, "submit", str(path))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Submitted job with id 01jfake0001 to job set js1",
        "Submitted job with id 01jfake0002 to job set js1",
    ]
    # Armada's line: scripts take the id as the fifth word.
    assert [line.split()[4] for line in out.splitlines()] == ["01jfake0001", "01jfake0002"]
    (request,) = fake_armada.requests
    assert request.path == "/api/v1/jobs"
    assert request.body == VALID_JOB_FILE


def test_submit_json_file_and_server_validation_errors(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.add_queue("q1")
    bad = json.loads(json.dumps(VALID_JOB_FILE))
    bad["jobs"][1]["podSpec"] = {"containers": []}
    path = write(tmp_path / "jobs.json", bad)
    code, out, err = run(capsys, "submit", str(path), "--url", fake_armada.url)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "Error: the job file is not valid",
        "  jobs[1].podSpec.containers: at least one container is required",
    ]


def test_dry_run_sends_nothing(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    path = write(tmp_path / "jobs.yaml", VALID_JOB_FILE)
    code, out, _ = run(capsys, "--url", fake_armada.url, "submit", str(path), "--dry-run")
    assert code == 0
    assert fake_armada.requests == []
    assert out.splitlines() == [
        "Would submit 2 jobs to queue q1 (job set js1):",
        "  jobs[0]: priority 1, namespace default, 1 container (busybox:1.36)",
        "  jobs[1]: priority 0, namespace default, 1 container (alpine)",
        "Dry run: nothing was submitted.",
    ]


def test_invalid_file_is_not_sent(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    path = write(tmp_path / "jobs.yaml", {"queue": "q1", "jobSetId": "js1", "jobs": []})
    code, _, err = run(capsys, "--url", fake_armada.url, "submit", str(path))
    assert code == 1
    assert "  jobs: at least one job is required (a list)" in err.splitlines()
    assert fake_armada.requests == []


def test_a_job_file_with_a_duplicate_key_is_refused_with_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("queue: a\njobSetId: s\nqueue: b\njobs: []\n")
    code, out, err = run(capsys, "submit", str(path), "--dry-run")
    assert code == 1 and out == ""
    assert err.startswith(f"Error: {path} is not valid YAML")
    assert "found duplicate key 'queue' (first given on line 1)" in err
    assert "line 3" in err
