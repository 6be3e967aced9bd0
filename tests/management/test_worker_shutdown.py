"""SIGTERM to a scheduler worker in the middle of a cycle: Celery's warm shutdown lets the
cycle finish, its lease transaction commits whole (every run with its ``leased`` event and
its job leased; nothing of it before), and the worker exits 0.

The worker runs ``tests.management.slow_cycle_celery``: the real application, with the
cycle paused inside its transaction until the test says go, so that the signal lands
there for certain."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from tests.conftest import job, job_file
from tests.management.celery_calls import call_scheduler_cycle
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
CONFIG = {
    "scheduling": {"cyclePeriod": "1s"},
    "executorTimeout": "10m",
    "executors": [
        {
            "id": "stopping",
            "nodes": [{"name": "n", "count": 2, "allocatable": {"cpu": "16", "memory": "64Gi"}}],
        }
    ],
}
JOBS = 6


def _counts(job_ids: list[str]) -> dict[str, int]:
    from armada.models import Event, Job, Run

    return {
        "runs": Run.objects.filter(job_id__in=job_ids).count(),
        "leased_events": Event.objects.filter(job_id__in=job_ids, type="leased").count(),
        "leased_jobs": Job.objects.filter(id__in=job_ids, state="leased").count(),
    }


@pytest.mark.django_db(transaction=True)
def test_sigterm_mid_cycle_commits_the_cycle_and_exits_0(tmp_path, admin_user, settings):
    from armada.core.config import parse_config
    from armada.services.queues import queue_create
    from armada.services.submit import job_submit
    from tests.e2e.conftest import process_env
    from tests.executor_api import register_executor

    config_path = tmp_path / "armada.yaml"
    config_path.write_text(yaml.safe_dump(CONFIG))
    settings.ARMADA = parse_config(CONFIG)
    now = timezone.now()
    register_executor(settings.ARMADA.executors[0], now)
    queue_create(actor=admin_user, data={"name": "stopping"}, now=now)
    job_ids = job_submit(
        actor=admin_user, data=job_file("stopping", jobs=[job() for _ in range(JOBS)]), now=now
    )
    marks = tmp_path / "marks"
    # JSON logs too: Celery leaves logging to the settings (armada.celery), so the worker's
    # lines are one JSON object each, with the process kind read from its command line.
    env = process_env(
        tmp_path,
        ARMADA_CONFIG=str(config_path),
        SLOW_CYCLE_MARKS=str(marks),
        ARMADA_LOG_FORMAT="json",
    )
    log_path = tmp_path / "scheduler.log"
    with open(log_path, "w") as log:
        worker = subprocess.Popen(
            [
                *(PY, "-m", "celery", "-A", "tests.management.slow_cycle_celery", "worker"),
                *("-Q", "scheduler", "-n", "scheduler@stopping-test", "--pool=solo"),
                *("--without-mingle", "--without-gossip", "--loglevel", "INFO"),
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def details() -> str:
        return log_path.read_text(errors="replace")

    try:
        call_scheduler_cycle(env)
        wait_until(
            "the cycle to reach its lease transaction",
            lambda: (
                worker.poll() is not None or (marks.exists() and "in cycle" in marks.read_text())
            ),
            timeout=120,
            details=details,
        )
        assert worker.poll() is None, details()
        # Mid-transaction: nothing of the cycle is visible yet.
        assert _counts(job_ids) == {"runs": 0, "leased_events": 0, "leased_jobs": 0}
        worker.send_signal(signal.SIGTERM)
        wait_until(
            "the worker to take the signal as a warm shutdown",
            lambda: "Warm shutdown" in details(),
            timeout=60,
            details=details,
        )
        assert worker.poll() is None  # still finishing the cycle
        (tmp_path / "go").touch()
        try:
            code = worker.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the worker did not exit after its cycle\n{details()}")
        assert code == 0, details()
        assert _counts(job_ids) == {"runs": JOBS, "leased_events": JOBS, "leased_jobs": JOBS}
        lines = [json.loads(line) for line in details().splitlines() if line.startswith("{")]
        leased = [
            line for line in lines if line["message"] == f"scheduling cycle leased {JOBS} job(s)"
        ]
        assert len(leased) == 1, details()
        assert leased[0]["process"] == "scheduler"
        assert leased[0]["logger"] == "armada.services.scheduler"
        assert any(line["logger"].startswith("celery") for line in lines)  # Celery's own too
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
