"""``manage.py check_workers``: one line per check, exit 0 when all pass, 1 when one fails,
2 on bad usage; the leases, and the heartbeat of every executor registered through the
executor API or named by the configuration, in the database; with Redis a ping of the
scheduler's queue through the broker (executors run their Celery workers on brokers of
their own, so none is pinged), against a real Celery worker."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.utils import timezone

from armada.core.config import Executor, parse_config
from armada.management.commands import check_workers
from armada.models import LeaderLease
from tests.executor_api import register_executor
from tests.management.celery_calls import call_scheduler_cycle
from tests.waiting import wait_until

# The command reads the database in a thread of its own (bounded): data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
CONFIG = {
    "scheduling": {"cyclePeriod": "1s"},
    "executorTimeout": "60s",
    "executors": [
        {"id": "east", "nodes": [{"name": "n", "allocatable": {"cpu": "4", "memory": "8Gi"}}]},
        {"id": "west", "nodes": [{"name": "n", "allocatable": {"cpu": "4", "memory": "8Gi"}}]},
    ],
}


@pytest.fixture
def configured(settings):
    settings.ARMADA = parse_config(CONFIG)
    settings.CELERY_WORKER_ENABLE_REMOTE_CONTROL = False  # the database's checks alone here
    return settings.ARMADA


def run(*args: str) -> tuple[int, list[str]]:
    out = StringIO()
    try:
        call_command("check_workers", *args, stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue().splitlines()


def lease(name: str, holder: str, expires_in: float) -> None:
    LeaderLease.objects.update_or_create(
        name=name,
        defaults={"holder": holder, "expires_at": timezone.now() + timedelta(seconds=expires_in)},
    )


def test_all_alive(configured):
    now = timezone.now()
    for executor in configured.executors:
        register_executor(executor, now - timedelta(seconds=5))
    lease("scheduler", "other-host:1:2", 25)
    lease("beat", "other-host:1:3:abc", 4)
    code, lines = run()
    assert code == 0, lines
    assert lines == [
        "ok: scheduler (lease): the 'scheduler' lease is held by other-host:1:2 for 25 s more",
        "ok: beat (lease): the 'beat' lease is held by other-host:1:3:abc for 4 s more",
        "ok: executor east (heartbeat): last heartbeat 5 s ago (executorTimeout 60 s)",
        "ok: executor west (heartbeat): last heartbeat 5 s ago (executorTimeout 60 s)",
    ]


def test_each_kind_of_failure_is_named_and_exits_1(configured):
    register_executor(configured.executors[0], timezone.now() - timedelta(seconds=95))
    lease("scheduler", "other-host:1:2", -40)
    code, lines = run()
    assert code == 1
    assert lines[0].startswith(
        "FAIL: scheduler (lease): the 'scheduler' lease of other-host:1:2 expired 40 s ago; "
        "no scheduling cycle runs"
    )
    assert lines[1] == (
        "FAIL: beat (lease): the 'beat' lease was never taken; no beat sends cycles or ticks"
    )
    assert lines[2] == (
        "FAIL: executor east (heartbeat): last heartbeat 95 s ago (executorTimeout 60 s)"
    )
    assert lines[3] == (
        "FAIL: executor west (heartbeat): never registered: it has not reached the executor API yet"
    )


def test_a_lease_of_a_process_that_has_exited_or_was_released_fails(configured):
    from armada.services.leader import process_holder

    dead = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True)
    host, namespace, _pid = process_holder().split(":")
    lease("scheduler", f"{host}:{namespace}:{dead.stdout.decode().strip()}", 25)
    code, lines = run("--scheduler")
    assert code == 1 and len(lines) == 1
    assert "lease's holder" in lines[0] and "has exited" in lines[0]
    lease("scheduler", "", 25)
    code, lines = run("--scheduler")
    assert code == 1
    assert "released and is held by nobody" in lines[0]


def test_every_registered_executor_is_checked_whether_configured_or_not(configured):
    """An executor brings its configuration with it: one the control plane's configuration
    does not name is checked once it has registered through the executor API."""
    now = timezone.now()
    elsewhere = Executor(
        id="north", nodes=[{"name": "n", "allocatable": {"cpu": "2", "memory": "4Gi"}}]
    )
    for executor in (*configured.executors, elsewhere):
        register_executor(executor, now - timedelta(seconds=5))
    lease("scheduler", "other-host:1:2", 25)
    lease("beat", "other-host:1:3:abc", 4)
    code, lines = run()
    assert code == 0, lines
    assert [line.split(" (")[0] for line in lines[2:]] == [
        "ok: executor east",
        "ok: executor north",
        "ok: executor west",
    ]
    code, lines = run("--executor", "north")
    assert code == 0
    assert lines == [
        "ok: executor north (heartbeat): last heartbeat 5 s ago (executorTimeout 60 s)"
    ]


def test_options_pick_the_checks(configured):
    register_executor(configured.executors[1], timezone.now())
    code, lines = run("--executor", "west")
    assert code == 0 and len(lines) == 1 and lines[0].startswith("ok: executor west (heartbeat)")
    code, lines = run("--executor", "west", "--executor", "east")
    assert code == 1 and [line.split(":")[0] for line in lines] == ["ok", "FAIL"]
    code, lines = run("--beat")
    assert code == 1 and len(lines) == 1 and lines[0].startswith("FAIL: beat (lease)")


def test_an_executor_never_seen_fails_as_never_registered_not_as_bad_usage(configured):
    """Any id may be asked for: the control plane cannot know every cluster's executor
    beforehand, so one it has never heard from is a failed check (exit 1), not a usage
    error."""
    code, lines = run("--executor", "north")
    assert code == 1
    assert lines == [
        "FAIL: executor north (heartbeat): never registered: it has not reached the executor "
        "API yet"
    ]


def test_bad_usage_is_exit_code_2(configured):
    with pytest.raises(CommandError, match="--timeout: must be more than 0") as e:
        run("--timeout", "0")
    assert e.value.returncode == 2
    with pytest.raises(CommandError, match="--timeout: must be more than 0") as e:
        run("--executor", "east", "--timeout", "-1")
    assert e.value.returncode == 2


def test_only_the_schedulers_queue_is_pinged(configured, settings, monkeypatch):
    """With remote control (Redis), the scheduler's queue is pinged; executors' queues are
    on their own brokers, out of reach, so their heartbeat is their only check."""
    settings.CELERY_WORKER_ENABLE_REMOTE_CONTROL = True
    asked: list[float] = []

    def consumers(timeout: float) -> dict[str, list[str]]:
        asked.append(timeout)
        return {"scheduler": ["scheduler@a"], "executor.east": ["executor-east@b"]}

    monkeypatch.setattr(check_workers, "consumers", consumers)
    now = timezone.now()
    for executor in configured.executors:
        register_executor(executor, now)
    lease("scheduler", "other-host:1:2", 25)
    lease("beat", "other-host:1:3:abc", 4)
    code, lines = run("--timeout", "2")
    assert code == 0, lines
    assert [line for line in lines if "(ping)" in line] == [
        "ok: scheduler (ping): scheduler@a on queue 'scheduler' answered"
    ]
    assert asked == [2.0]
    # An executor's check alone asks the broker nothing.
    code, lines = run("--executor", "east")
    assert code == 0 and len(lines) == 1 and "(ping)" not in lines[0]
    assert asked == [2.0]


def test_a_database_that_does_not_answer_fails_within_the_timeout(configured, monkeypatch):
    import threading

    release = threading.Event()
    monkeypatch.setattr(check_workers, "lease_check", lambda *a: release.wait(60))
    try:
        code, lines = run("--scheduler", "--timeout", "0.3")
    finally:
        release.set()
    assert code == 1
    assert lines == ["FAIL: database: no answer within 0.3 s"]


def test_against_a_real_scheduler_worker(tmp_path, settings):
    """A real worker on queue ``scheduler`` runs a cycle: the check passes (with Redis, its
    ping too); after the worker stops, the ping fails at once (with Redis) and the lease
    check once the lease has lapsed."""
    from tests.e2e.conftest import WORKER, process_env

    config_path = tmp_path / "armada.yaml"
    config_path.write_text(yaml.safe_dump(CONFIG))
    env = process_env(tmp_path, ARMADA_CONFIG=str(config_path))
    log_path = tmp_path / "scheduler.log"

    def details() -> str:
        return log_path.read_text(errors="replace")

    def check() -> subprocess.CompletedProcess:
        return subprocess.run(
            [PY, "manage.py", "check_workers", "--scheduler", "--timeout", "5"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    with open(log_path, "w") as log:
        worker = subprocess.Popen(
            [*WORKER, "-Q", "scheduler", "-n", "scheduler@check-test"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        call_scheduler_cycle(env)
        passed = wait_until(
            "check_workers --scheduler to pass",
            lambda: (done := check()).returncode == 0 and done,
            timeout=120,
            interval=1.0,
            details=details,
        )
        assert passed.stdout.startswith("ok: scheduler (lease): the 'scheduler' lease is held by")
        if os.environ.get("REDIS_URL"):
            assert "ok: scheduler (ping): scheduler@check-test on queue 'scheduler' answered" in (
                passed.stdout
            )
        # --scheduler checks the scheduler alone: no executor, and no executor's queue.
        assert "executor" not in passed.stdout
        worker.terminate()
        worker.wait(timeout=60)
        if os.environ.get("REDIS_URL"):
            failed = check()
            assert failed.returncode == 1
            assert "FAIL: scheduler (ping): no worker on queue 'scheduler' answered within 5 s" in (
                failed.stdout
            )
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    # The exit codes a supervisor sees, from the real command line: 1 for an executor that
    # never reached the executor API, whatever its id; 2 for bad usage.

    def command(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [PY, "manage.py", "check_workers", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    unknown = command("--executor", "north")
    assert unknown.returncode == 1, unknown.stdout + unknown.stderr
    assert unknown.stdout == (
        "FAIL: executor north (heartbeat): never registered: it has not reached the executor "
        "API yet\n"
    )
    bad = command("--timeout", "0")
    assert bad.returncode == 2 and "--timeout: must be more than 0 seconds" in bad.stderr


def test_a_registered_executor_is_checked_until_its_credentials_are_revoked(configured):
    from armada.models import ExecutorCredential

    now = timezone.now()
    for executor in configured.executors:
        register_executor(executor, now - timedelta(seconds=5))
    far = Executor.model_validate(
        {"id": "far", "nodes": [{"name": "n", "allocatable": {"cpu": "1", "memory": "1Gi"}}]}
    )
    register_executor(far, now - timedelta(seconds=300))  # not in the configuration
    code, lines = run("--executor", "far")
    assert code == 1 and "executor far (heartbeat)" in lines[0]
    code, lines = run()
    assert code == 1 and any(line.startswith("FAIL: executor far (heartbeat)") for line in lines)
    ExecutorCredential.objects.filter(cluster_id="far").update(revoked_at=now)  # retired
    code, lines = run()
    assert not any("far" in line for line in lines), lines
