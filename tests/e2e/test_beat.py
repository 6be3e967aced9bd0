"""Two real beat processes on one database: only the holder of the ``beat`` lease sends, each
periodic task goes out once per period (not once per beat), and after ``kill -9`` of the
holder the other takes over within the lease's time to live.

No worker consumes the ``scheduler`` queue here, so every message beat sends stays on it to
be counted: in Redis when ``REDIS_URL`` is set, else as files of the embedded broker. Each
message's ``origin`` header names the process that sent it (``gen<pid>@<host>``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from armada.beat import LEASE_NAME, LEASE_TTL, RETRY_SECONDS
from armada.management.commands.runall import celery_beat_command
from tests.e2e.conftest import ROOT, _database_url, _e2e_redis_url
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e]
PERIOD = 0.5
CYCLE = "armada.scheduler.cycle"


class Broker:
    """Reads (without consuming) the messages waiting on the ``scheduler`` queue."""

    def __init__(self, env: dict[str, str], var_dir: Path) -> None:
        self.redis = None
        self.folder = var_dir / "broker" / "queue"
        if env.get("REDIS_URL"):
            import redis

            self.redis = redis.Redis.from_url(env["REDIS_URL"])
            self.redis.flushdb()

    def headers(self) -> list[dict]:
        if self.redis is not None:
            raw = self.redis.lrange("scheduler", 0, -1)
        else:
            raw = [p.read_bytes() for p in sorted(self.folder.glob("*.scheduler.msg"))]
        return [json.loads(r)["headers"] for r in raw]

    def clear(self) -> None:
        if self.redis is not None:
            self.redis.delete("scheduler")
        else:
            for path in self.folder.glob("*.scheduler.msg"):
                path.unlink(missing_ok=True)


def cycles_by_sender(broker: Broker) -> dict[int, int]:
    """How many scheduling cycles each process (by pid) has sent."""
    counts: dict[int, int] = {}
    for headers in broker.headers():
        if headers["task"] == CYCLE:
            pid = int(headers["origin"].removeprefix("gen").split("@")[0])
            counts[pid] = counts.get(pid, 0) + 1
    return counts


def wait(what: str, predicate, logs: list[Path], timeout: float = 60.0):
    def tails() -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs)

    return wait_until(what, predicate, timeout=timeout, interval=0.1, details=tails)


def lease_holder_pid() -> int | None:
    from armada.models import LeaderLease

    lease = LeaderLease.objects.filter(name=LEASE_NAME).first()
    if lease is None or not lease.holder:
        return None
    return int(lease.holder.split(":")[1])


def test_two_beats_send_each_cycle_once_and_a_standby_takes_over_after_kill_9(
    transactional_db, tmp_path
):
    from django.db import connection

    config = {"scheduling": {"cyclePeriod": f"{int(PERIOD * 1000)}ms"}, "executors": []}
    (tmp_path / "armada.yaml").write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(
        ARMADA_DEV="1",
        ARMADA_VAR_DIR=str(tmp_path / "var"),
        ARMADA_CONFIG=str(tmp_path / "armada.yaml"),
        DATABASE_URL=_database_url(connection.settings_dict),
        PYTHONUNBUFFERED="1",
    )
    if os.environ.get("REDIS_URL"):
        env["REDIS_URL"] = _e2e_redis_url(os.environ["REDIS_URL"])
    broker = Broker(env, tmp_path / "var")
    logs = [tmp_path / "beat-1.log", tmp_path / "beat-2.log"]
    beats: dict[int, subprocess.Popen] = {}
    try:
        for log in logs:
            with open(log, "w") as out:
                proc = subprocess.Popen(
                    celery_beat_command(),
                    cwd=ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            beats[proc.pid] = proc
        holder = wait("a beat to take the lease", lease_holder_pid, logs)
        assert holder in beats
        wait(
            "the other beat to stand by",
            lambda: (
                all(p.poll() is None for p in beats.values())
                and any("standing by" in log.read_text() for log in logs)
            ),
            logs,
        )

        # One sender, at the rate of one beat.
        broker.clear()
        started = time.monotonic()
        wait("ten cycles", lambda: sum(cycles_by_sender(broker).values()) >= 10, logs)
        time.sleep(2.0)  # room for a second sender to show itself
        counts = cycles_by_sender(broker)
        elapsed = time.monotonic() - started
        assert list(counts) == [holder], counts
        assert counts[holder] <= elapsed / PERIOD + 2, (counts, elapsed)

        # kill -9 of the holder: the standby takes over within the lease's time to live.
        standby = next(pid for pid in beats if pid != holder)
        beats[holder].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        beats.pop(holder).wait(timeout=30)
        broker.clear()
        wait(
            "the standby to send",
            lambda: cycles_by_sender(broker).get(standby),
            logs,
            timeout=LEASE_TTL.total_seconds() + 60,
        )
        took_over = time.monotonic() - killed
        assert lease_holder_pid() == standby
        assert took_over <= LEASE_TTL.total_seconds() + RETRY_SECONDS + 10, took_over
        print(f"standby sent its first cycle {took_over:.1f} s after kill -9 of the holder")

        broker.clear()
        started = time.monotonic()
        time.sleep(3.0)
        counts = cycles_by_sender(broker)
        elapsed = time.monotonic() - started
        assert list(counts) == [standby], counts
        assert counts[standby] <= elapsed / PERIOD + 2, (counts, elapsed)
    finally:
        for proc in beats.values():
            proc.terminate()
        for proc in beats.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
