"""An executor that holds no database credentials: a cluster joining from anywhere.

The control plane runs on the test database (PostgreSQL and Redis in CI) with the executor
API; the executor is a process of a virtual environment of its own, with neither Django nor
a database driver installed and no database or Redis variable in its environment. It gets
one credential and one file, and runs real jobs on this machine (the local backend, memory
held by a cgroup): one to success, one to a categorised failure that its policy fails at
once, and one out of memory twice, retried with more memory each time, to success. The
outcomes are read through the API and Lookout, as a user would read them.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
import venv
from pathlib import Path

import pytest
import requests
import yaml

from tests.e2e.conftest import ROOT, System

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


#: What the executor's environment installs: the ``executor`` extra of pyproject.toml.
def _executor_packages() -> list[str]:
    """What ``pip install armada-py[executor]`` installs: the base and the executor extra of
    pyproject.toml (read, not repeated here, so that the two cannot drift apart)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["executor"]]


EXECUTOR_PACKAGES = _executor_packages()
CONTROL_PLANE = {
    "scheduling": {"cyclePeriod": "500ms", "retryPolicy": {"enabled": True, "globalMaxRetries": 5}},
    "queueRefreshPeriod": "1s",
    "executorTimeout": "60s",
    "executors": [],
}


def executor_venv(path: Path) -> Path:
    """A virtual environment with the executor's dependencies and nothing of the server's
    (made once per run of the suite in the temporary folder; a minute at most)."""
    python = path / "bin" / "python"
    if not python.exists():
        venv.create(path, with_pip=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "-c", str(ROOT / "requirements.lock"),
             *EXECUTOR_PACKAGES],
            check=True,
            timeout=600,
            capture_output=True,
        )  # fmt: skip
    return python


def tour_executor(tmp_path: Path, api: str, token_file: Path) -> Path:
    """The tour's executor (local backend, its error categories) as a standalone file."""
    tour = yaml.safe_load((ROOT / "config" / "examples" / "tour.yaml").read_text())
    data = {
        **tour["executors"][0],
        "id": "far",
        "stateDir": str(tmp_path / "far-state"),
        "api": {"address": api, "tokenFile": str(token_file)},
    }
    path = tmp_path / "far.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def isolated_python(tmp_path_factory) -> Path:
    from tests.tour.test_readme_tour import memory_cgroups_available

    if not memory_cgroups_available(tmp_path_factory.mktemp("probe")):
        pytest.skip("no writable memory cgroup on this machine: OOM kills need one")
    return executor_venv(tmp_path_factory.getbasetemp() / "executor-venv")


def test_an_executor_without_database_credentials_runs_jobs_retries_and_failures(
    launch, tmp_path, isolated_python
):
    for server_package in ("django", "psycopg", "psycopg2", "rest_framework"):
        found = subprocess.run(
            [str(isolated_python), "-c", f"import {server_package}"], capture_output=True
        )
        assert found.returncode != 0, f"{server_package} is installed beside the executor"
    system: System = launch(CONTROL_PLANE)
    system.start_executors(CONTROL_PLANE)  # the executor API alone: no executor configured

    from django.utils import timezone

    from armada.services.executor_credentials import executor_credential_issue

    token_file = tmp_path / "far.token"
    token_file.write_text(
        executor_credential_issue(cluster_id="far", name="far", now=timezone.now()).key
    )
    config = tour_executor(tmp_path, system.executor_api_target, token_file)
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),  # the project's code, with no server package installed
        "PYTHONUNBUFFERED": "1",
        "ARMADA_VAR_DIR": str(tmp_path / "far-var"),
    }
    assert not {k for k in environment if k.startswith(("DATABASE", "REDIS", "DJANGO"))}
    system.start(
        "executor-far",
        [str(isolated_python), "-m", "armada.executor.main", "--config", str(config)],
        env=environment,
    )

    def ctl(*args: str) -> str:
        done = system.armadactl(*args)
        assert done.returncode == 0, f"{args}: {done.stderr}\n{system.log_tail()}"
        return done.stdout

    ctl("create", "retry-policy", "-f", "config/examples/retry-policy.yaml")
    ctl("create", "queue", "tour", "--retry-policies", "ml-training-retries")
    system.wait_for(
        "the executor's first round",
        lambda: "far" in ctl("get", "executors"),
        timeout=120,
    )
    submitted = {}
    for name in ("oom", "exit-code"):
        out = ctl("submit", f"examples/tour/{name}.yaml")
        submitted[name] = out.split()[4]  # Submitted job with id ID to job set S
    ok = tmp_path / "ok.yaml"
    ok.write_text(
        yaml.safe_dump(
            {
                "queue": "tour",
                "jobSetId": "ok",
                "jobs": [
                    {
                        "podSpec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "python:3.11-slim",
                                    "command": ["python3", "-c", "print('fine')"],
                                    "resources": {
                                        "requests": {"cpu": "100m", "memory": "64Mi"},
                                        "limits": {"cpu": "100m", "memory": "64Mi"},
                                    },
                                }
                            ]
                        }
                    }
                ],
            }
        )
    )
    submitted["ok"] = ctl("submit", str(ok)).split()[4]

    def job(job_id: str) -> dict:
        return json.loads(ctl("get", "job", job_id, "-o", "json"))

    def ended() -> bool:
        return all(job(j)["state"] in ("succeeded", "failed") for j in submitted.values())

    system.wait_for("every job to end", ended, timeout=420, interval=1.0)

    ok_job = job(submitted["ok"])
    assert ok_job["state"] == "succeeded" and len(ok_job["runs"]) == 1
    assert ok_job["runs"][0]["executor"] == "far"

    failed = job(submitted["exit-code"])
    assert failed["state"] == "failed"
    [run] = failed["runs"]
    assert (run["failureCategory"], run["exitCode"], run["retryable"]) == ("user-error", 2, False)
    assert run["decision"]["decision"] == "fail_rule"

    oom = job(submitted["oom"])
    assert oom["state"] == "succeeded"
    assert [r["requests"]["memory"] for r in oom["runs"]] == ["64Mi", "96Mi", "144Mi"]
    assert [r["failureCategory"] for r in oom["runs"][:2]] == ["oom", "oom"]
    assert [r["decision"]["decision"] for r in oom["runs"][:2]] == ["retry", "retry"]

    # Lookout shows the same as for an executor inside the control plane.
    page = lookout_page(system, f"/jobs/{submitted['oom']}")
    assert page.status_code == 200
    assert "oom" in page.text and "144Mi" in page.text and "far" in page.text

    log = (system.logs / "executor-far.log").read_text()
    assert "session opened" in log
    assert "Traceback" not in log, log[-3000:]


def lookout_page(system: System, path: str) -> requests.Response:
    import re

    session = requests.Session()
    login = session.get(f"{system.url}/login", timeout=60)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
    user, password = system.auth
    session.post(
        f"{system.url}/login",
        data={"csrfmiddlewaretoken": csrf, "username": user, "password": password},
        headers={"Referer": f"{system.url}/login"},
        timeout=60,
    )
    return session.get(f"{system.url}{path}", timeout=60)
