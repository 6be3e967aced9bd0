"""``manage.py check_workers``: one line per check, exit 0 when all pass, 1 when one fails,
2 on bad usage; the leases and heartbeats in the database, and with Redis a ping through
the broker, against a real Celery worker."""

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

from armada.core.config import parse_config
from armada.management.commands import check_workers
from armada.models import LeaderLease
from armada.services.executors import executor_register
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
        executor_register(config=executor, now=now - timedelta(seconds=5))
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
    executor_register(config=configured.executors[0], now=timezone.now() - timedelta(seconds=95))
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
        "FAIL: executor west (heartbeat): never registered: its worker has not ticked yet"
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


def test_options_pick_the_checks(configured):
    executor_register(config=configured.executors[1], now=timezone.now())
    code, lines = run("--executor", "west")
    assert code == 0 and len(lines) == 1 and lines[0].startswith("ok: executor west (heartbeat)")
    code, lines = run("--executor", "west", "--executor", "east")
    assert code == 1 and [line.split(":")[0] for line in lines] == ["ok", "FAIL"]
    code, lines = run("--beat")
    assert code == 1 and len(lines) == 1 and lines[0].startswith("FAIL: beat (lease)")


def test_bad_usage_is_exit_code_2(configured):
    with pytest.raises(CommandError, match="--executor: north is not in the configuration") as e:
        run("--executor", "north")
    assert e.value.returncode == 2
    with pytest.raises(CommandError, match="--timeout: must be more than 0") as e:
        run("--timeout", "0")
    assert e.value.returncode == 2


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
    # The exit code a supervisor sees for bad usage, from the real command line.
    bad = subprocess.run(
        [PY, "manage.py", "check_workers", "--executor", "north"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "north is not in the configuration" in bad.stderr
