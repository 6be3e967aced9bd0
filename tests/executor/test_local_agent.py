"""The executor agent on the local backend: real processes, real memory cgroups, the
shipped example configuration (config/examples/local-executor.yaml)."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from django.utils import timezone

from armada.conf import load_config_file
from armada.executor.backends.local import LocalBackend
from armada.models import Event, Job, Run, RunLog
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import job_file
from tests.executor_api import ApiAgent, api_agent

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def local_config():
    return load_config_file(ROOT / "config" / "examples" / "local-executor.yaml").executors[0]


def make_agent(state_dir: Path) -> ApiAgent:
    config = local_config()
    return api_agent(config, LocalBackend(state_dir, executor_id=config.id))


def now() -> datetime:
    return timezone.now()


def container(command: list[str], memory: str = "64Mi", **extra) -> dict:
    return {
        "name": "main",
        "image": "none",
        "command": command,
        "resources": {
            "requests": {"cpu": "100m", "memory": memory},
            "limits": {"cpu": "100m", "memory": memory},
        },
        **extra,
    }


def submit(owner, command: list[str], memory: str = "64Mi", **extra) -> str:
    spec = {
        "podSpec": {"restartPolicy": "Never", "containers": [container(command, memory, **extra)]}
    }
    return job_submit(actor=owner, data=job_file(jobs=[spec]), now=now())[0]


def run_until(agent: ApiAgent, job_id: str, states: set[str], timeout: float = 20.0) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        scheduler_cycle(now=now())
        agent.tick(now())
        scheduler_cycle(now=now())
        job = Job.objects.get(id=job_id)
        if job.state in states:
            return job
        assert time.monotonic() < deadline, f"job stuck in {job.state}"
        time.sleep(0.2)


@pytest.fixture
def agent(tmp_path, queue, settings):
    settings.ARMADA = settings.ARMADA.model_copy(update={"executors": [local_config()]})
    a = make_agent(tmp_path / "executor")
    a.tick(now())
    yield a
    for status in a.backend.poll(now()):
        a.backend.delete_pod(status.name, now(), 1.0)


def test_a_process_over_its_memory_limit_is_oom_killed_and_categorised_oom(agent, owner):
    job_id = submit(owner, [sys.executable, "-c", "bytearray(300 * 1024 * 1024)"], memory="64Mi")
    job = run_until(agent, job_id, {"failed"})
    run = Run.objects.get(job_id=job_id)
    assert (run.reason, run.exit_code, run.failure_category) == ("OOMKilled", 137, "oom")
    assert run.hint.startswith("The job used more memory")
    assert job.failure_category == "oom"


def test_an_exit_code_is_categorised_by_exit_code(agent, owner):
    job_id = submit(owner, ["sh", "-c", "echo about to fail; exit 3"])
    run_until(agent, job_id, {"failed"})
    run = Run.objects.get(job_id=job_id)
    assert (run.exit_code, run.failure_category, run.failure_subcategory) == (
        3,
        "exit-code",
        "other",
    )
    assert "about to fail" in RunLog.objects.get(run=run).text
    assert Event.objects.get(job_id=job_id, type="failed").payload["exitCode"] == 3


def test_a_termination_message_rule_matches(agent, owner):
    script = 'echo "Invalid argument: --epochs=-1" > "$ARMADA_TERMINATION_MESSAGE_PATH"; exit 5'
    job_id = submit(owner, ["sh", "-c", script])
    run_until(agent, job_id, {"failed"})
    run = Run.objects.get(job_id=job_id)
    assert run.message == "Invalid argument: --epochs=-1"
    assert run.failure_category == "user-error"


def test_a_job_that_succeeds_keeps_its_log(agent, owner):
    job_id = submit(owner, ["sh", "-c", "echo hello from the local backend"])
    run_until(agent, job_id, {"succeeded"})
    run = Run.objects.get(job_id=job_id)
    assert run.exit_code == 0
    assert "hello from the local backend" in RunLog.objects.get(run=run).text


def test_restarting_the_executor_mid_run_loses_nothing(agent, owner, tmp_path):
    job_id = submit(owner, ["sh", "-c", "sleep 2; echo finished after the restart"])
    run_until(agent, job_id, {"running"})
    restarted = make_agent(tmp_path / "executor")  # a new worker process: same state dir
    job = run_until(restarted, job_id, {"succeeded", "failed"})
    assert job.state == "succeeded"
    run = Run.objects.get(job_id=job_id)
    assert "finished after the restart" in RunLog.objects.get(run=run).text
    types = list(Event.objects.filter(job_id=job_id).values_list("type", flat=True))
    assert types.count("running") == 1 and types.count("succeeded") == 1


def test_active_deadline_is_enforced(agent, owner):
    spec = {
        "podSpec": {
            "restartPolicy": "Never",
            "activeDeadlineSeconds": 1,
            "containers": [container(["sleep", "30"])],
        }
    }
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec]), now=now())
    run_until(agent, job_id, {"failed"})
    assert Run.objects.get(job_id=job_id).reason == "DeadlineExceeded"


def test_a_spec_the_backend_cannot_run_fails_as_job_creation_failed(agent, owner):
    spec = {"podSpec": {"containers": [{**container(["true"]), "command": None}]}}
    spec["podSpec"]["containers"][0].pop("command")
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec]), now=now())
    job = run_until(agent, job_id, {"failed"})
    assert (job.failure_category, job.failure_subcategory) == ("internal", "job-creation-failed")
    assert Run.objects.get(job_id=job_id).retryable is False
