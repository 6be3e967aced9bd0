"""Benchmark of idle event-stream watchers (not a test): what 1,000 connected watchers that
receive nothing cost the web workers and the database.

The requirement: 1,000 idle watchers add under 5% of one CPU core to the web workers and
under 10 database transactions a second. One run, one started system, two phases:

- setup: a throw-away PostgreSQL database (DATABASE_URL's, dropped and created again), a
  superuser with an API token, queue ``idle`` and ``--watchers`` job sets ``idle-0000``...
  with one old job each (so they exist); REDIS_URL's database flushed. Then only the web
  service as production starts it (``bench/concurrency_system.py``: uvicorn, ``--web-workers``
  workers, a process group of its own), warmed up by 5 s of submits;
- phase A (``--seconds``): no watchers;
- the watchers connect (``bench/concurrency_clients.run_watchers``, in a process of its own
  so that their CPU is not measured: ``GET /api/v1/job-sets/idle/idle-NNNN/events?watch=true``
  with the token, one each) and stream; 10 s to settle;
- phase B (``--seconds``): the same, with the watchers connected and idle.

Per phase:
- web CPU: utime + stime of every process in the web service's group (uvicorn's master and
  workers, ``/proc/<pid>/stat``), the delta over the phase over its wall time, in cores;
- database transactions a second: ``xact_commit + xact_rollback`` of the bench's database in
  ``pg_stat_database``, read over a connection to database ``postgres`` (so the reads do not
  count), delta over the whole phase. Backends report their counts when they go idle, at most
  once a second, so a counter lags by about a second: negligible against a 60 s window.
  ``sessions`` (new database connections) likewise;
- submit latency: a client in this process posts a 10-job submit once a second to job set
  ``latency``, which no watcher watches (so the watchers stay idle), and records each
  request's wall time (p50, p95). Its transactions count in both phases alike;
- the whole machine's busy cores, for the noise around the figures.

Prints the table with B - A and PASS/FAIL against the limits (0.05 cores, 10 tx/s), and
whether every watcher stayed connected through phase B (one connect each, no drop). With
``--check`` the exit code is 1 when a limit is missed or a watcher reconnected. ``--tree``
runs another checkout's code (e.g. ``git archive <commit> | tar -x -C DIR``) for "before".

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_idle_bench \\
       REDIS_URL=redis://127.0.0.1:6379/13 .venv/bin/python bench/idle_watchers.py \\
       [--watchers 1000] [--seconds 60] [--web-workers 2] [--tree DIR] [--check] [--keep]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other bench modules

QUEUE = "idle"
LATENCY_JOB_SET = "latency"  # watched by no one
CPU_LIMIT = 0.05  # cores
TX_LIMIT = 10.0  # transactions a second
SETTLE_SECONDS = 10.0
SEED = """
import json, os
from django.contrib.auth import get_user_model
from django.utils import timezone
from armada.services.queues import queue_create
from armada.services.submit import job_submit
from armada.services.tokens import token_create
now = timezone.now()
user = get_user_model().objects.create_superuser("bench", "bench@example.com", "bench-pw-1")
queue_create(actor=user, data={"name": os.environ["IDLE_QUEUE"]}, now=now)
job = json.loads(os.environ["IDLE_JOB"])
for i in range(int(os.environ["IDLE_WATCHERS"])):
    data = {"queue": os.environ["IDLE_QUEUE"], "jobSetId": f"idle-{i:04d}", "jobs": [job]}
    job_submit(actor=user, data=data, now=now)
print(token_create(user=user, name="bench", expires_at=None, now=now).key)
"""


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    web_cores: float = 0.0
    tx_per_s: float = 0.0
    sessions_per_s: float = 0.0
    machine_cores: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[round(share * (len(ordered) - 1))] if ordered else float("nan")


def recreate_database(url: str) -> tuple[str, str]:
    """Drops and creates ``url``'s database; returns (admin DSN on ``postgres``, name)."""
    import psycopg

    base, _, name = url.rpartition("/")
    admin = f"{base}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin, name


def submitter(base: str, token: str, stop: threading.Event, phase: Phase) -> None:
    """A 10-job submit once a second (at once after a slow one) until ``stop``."""
    import requests
    from concurrency_clients import job_spec

    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    jobs = [job_spec(random.Random(i), 0.0) for i in range(10)]
    body = {"queue": QUEUE, "jobSetId": LATENCY_JOB_SET, "jobs": jobs}
    started, sent = time.monotonic(), 0
    while not stop.wait(max(0.0, started + sent - time.monotonic())):
        sent += 1
        at = time.monotonic()
        try:
            ok = session.post(f"{base}/api/v1/jobs", json=body, timeout=60).status_code == 201
        except requests.RequestException:
            ok = False
        phase.latencies.append(time.monotonic() - at)
        phase.errors += not ok


def measure(
    name: str, system: Any, admin: Any, db_name: str, base: str, token: str, seconds: float
) -> Phase:
    from concurrency_system import machine_busy

    def counters() -> tuple[int, int]:
        row = admin.execute(
            "SELECT xact_commit + xact_rollback, sessions FROM pg_stat_database WHERE datname = %s",
            (db_name,),
        ).fetchone()
        return int(row[0]), int(row[1])

    phase, stop = Phase(name), threading.Event()
    thread = threading.Thread(target=submitter, args=(base, token, stop, phase))
    pids, cpu, (xacts, sessions) = system.pids("web"), system.cpu_seconds("web"), counters()
    busy, started = machine_busy()[0], time.monotonic()
    thread.start()
    time.sleep(seconds)
    stop.set()
    thread.join()
    phase.seconds = time.monotonic() - started
    phase.web_cores = (system.cpu_seconds("web") - cpu) / phase.seconds
    xacts_after, sessions_after = counters()
    phase.tx_per_s = (xacts_after - xacts) / phase.seconds
    phase.sessions_per_s = (sessions_after - sessions) / phase.seconds
    phase.machine_cores = (machine_busy()[0] - busy) / phase.seconds
    if system.pids("web") != pids:
        print(f"  ! the web processes changed during {name}: {pids} -> {system.pids('web')}")
    return phase


def row(label: str, p: Phase) -> str:
    p50, p95 = percentile(p.latencies, 0.5), percentile(p.latencies, 0.95)
    return (
        f"| {label} | {p.seconds:.0f} s | {p.web_cores:.3f} | {p.tx_per_s:.1f} | "
        f"{p.sessions_per_s:.1f} | {p50:.3f} s | {p95:.3f} s | {len(p.latencies)} ({p.errors}) "
        f"| {p.machine_cores:.2f} |"
    )


def report(a: Phase, b: Phase, watchers: int) -> bool:
    """Prints the table; True when both limits are met."""
    d_cpu, d_tx = b.web_cores - a.web_cores, b.tx_per_s - a.tx_per_s
    d50 = percentile(b.latencies, 0.5) - percentile(a.latencies, 0.5)
    d95 = percentile(b.latencies, 0.95) - percentile(a.latencies, 0.95)
    print()
    print(
        "| phase | length | web CPU (cores) | DB tx/s | DB sessions/s | submit p50 | "
        "submit p95 | submits (errors) | machine busy (cores) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(row("A: no watchers", a))
    print(row(f"B: {watchers:,} idle watchers", b))
    print(
        f"| B - A | | {d_cpu:+.3f} | {d_tx:+.1f} | {b.sessions_per_s - a.sessions_per_s:+.1f} "
        f"| {d50:+.3f} s | {d95:+.3f} s | | {b.machine_cores - a.machine_cores:+.2f} |"
    )
    cpu_ok, tx_ok = d_cpu < CPU_LIMIT, d_tx < TX_LIMIT
    print()
    print(f"web CPU added: {d_cpu:.3f} cores (limit {CPU_LIMIT}): {'PASS' if cpu_ok else 'FAIL'}")
    print(
        f"DB transactions added: {d_tx:.1f}/s (limit {TX_LIMIT:.0f}): {'PASS' if tx_ok else 'FAIL'}"
    )
    return cpu_ok and tx_ok


def watchers_held(path: Path, expected: int) -> bool:
    """Whether each watcher connected once and never dropped; prints the verdict."""
    got = pickle.loads(path.read_bytes())
    bad = [w for w in got.watchers if w.connects != 1 or w.drops]
    failed = [r for r in got.requests if r[2] != 200]
    events = sum(len(w.ids) for w in got.watchers)
    if len(got.watchers) == expected and not bad and not failed:
        print(
            f"all {expected:,} watchers stayed connected (1 connect each, no drop); "
            f"{events:,} events received (the old jobs' own)"
        )
        return True
    print(
        f"! watchers: {len(bad)} of {len(got.watchers)} reconnected or dropped "
        f"(connects {sum(w.connects for w in got.watchers)}, drops "
        f"{sum(w.drops for w in got.watchers)}), {len(failed)} failed requests"
    )
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each phase")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--check", action="store_true", help="exit 1 when a limit is missed")
    parser.add_argument("--keep", action="store_true", help="keep the database and the logs")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to run")
    args = parser.parse_args()

    import psycopg
    import redis
    from concurrency_clients import job_spec, run_watchers
    from concurrency_system import System, commands, wait_until_answering
    from submit_api import free_port

    url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not url.startswith("postgres") or not redis_url:
        raise SystemExit("this benchmark needs PostgreSQL and Redis (DATABASE_URL, REDIS_URL)")
    admin_dsn, db_name = recreate_database(url)
    redis.Redis.from_url(redis_url).flushdb()
    work = Path(tempfile.mkdtemp(prefix="armada-idle-watchers-"))
    (work / "logs").mkdir()
    env = {
        **os.environ,
        "ARMADA_DEV": "1",
        "ARMADA_VAR_DIR": str(work / "var"),
        "PYTHONUNBUFFERED": "1",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(args.tree),
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=args.tree, env=env, check=True)
    seed_env = {
        **env,
        "IDLE_QUEUE": QUEUE,
        "IDLE_JOB": json.dumps(job_spec(random.Random(0), 0.0)),
        "IDLE_WATCHERS": str(args.watchers),
    }
    seeded = subprocess.run(
        [*manage, "shell", "-c", SEED], cwd=args.tree, env=seed_env, check=True, capture_output=True
    )
    token = seeded.stdout.decode().strip().splitlines()[-1]
    print(f"database {db_name}: queue {QUEUE!r}, {args.watchers:,} job sets of one job each")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    web = ["env", "-C", str(args.tree), *commands(port, args.web_workers, "-")["web"]]
    system = System(env, work / "logs", {"web": web})  # env -C: the tree's code comes first
    mp = multiprocessing.get_context("spawn")
    ready, stop_watchers = mp.Event(), mp.Event()
    watchers = None
    ok = False
    try:
        system.start_all()
        wait_until_answering(f"{base}/login")
        print(f"web up ({args.web_workers} workers, pids {system.pids('web')})")
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            measure("warm-up", system, admin, db_name, base, token, 5)  # not counted
            a = measure("phase A", system, admin, db_name, base, token, args.seconds)
            print(f"phase A done: {a.web_cores:.3f} cores, {a.tx_per_s:.1f} tx/s")
            pairs = [(QUEUE, f"idle-{i:04d}") for i in range(args.watchers)]
            watchers = mp.Process(
                target=run_watchers,
                args=("127.0.0.1", port, token, pairs, 100.0, ready, stop_watchers)
                + (str(work / "watchers.pickle"),),
            )
            connecting = time.monotonic()
            watchers.start()
            if not ready.wait(timeout=300):
                raise RuntimeError("the watchers did not all connect within 300 s")
            print(f"{args.watchers:,} watchers connected in {time.monotonic() - connecting:.0f} s")
            time.sleep(SETTLE_SECONDS)
            b = measure("phase B", system, admin, db_name, base, token, args.seconds)
            print(f"phase B done: {b.web_cores:.3f} cores, {b.tx_per_s:.1f} tx/s")
        fds = {pid: len(os.listdir(f"/proc/{pid}/fd")) for pid in system.pids("web")}
        print(f"open file descriptors per web process (pid: count): {fds}")
        stop_watchers.set()
        watchers.join(timeout=120)
        held = watchers_held(work / "watchers.pickle", args.watchers)
        ok = report(a, b, args.watchers) and held
        if system.services["web"].unexpected_exits:
            print(f"! the web service exited {len(system.services['web'].unexpected_exits)}x")
            ok = False
    finally:
        stop_watchers.set()
        if watchers is not None:
            watchers.join(timeout=30)
            watchers.kill()  # only if it is still there
        system.stop_all()
        if args.keep:
            print(f"kept database {db_name} and logs in {work / 'logs'}")
        else:
            with psycopg.connect(admin_dsn, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
            shutil.rmtree(work, ignore_errors=True)
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
