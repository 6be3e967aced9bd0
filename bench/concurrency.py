"""Benchmark of many users at once, with faults (not a test).

Starts the system as production runs it, each kind its own process (``bench/
concurrency_system.py``: uvicorn with ``--web-workers`` workers and ``armada.webserver``'s
protocol, the scheduler worker, beat under its lease, one executor worker on the fake
backend with ``--nodes`` nodes), on PostgreSQL and Redis: a throw-away database
(``test_<name>`` of DATABASE_URL) and the Redis database of REDIS_URL, which is flushed.
Then, for ``--duration`` seconds (``bench/concurrency_clients.py``):

- ``--watchers`` event-stream watchers (``watch=true&from=0``, NDJSON), one per job set
  being submitted to, each resuming from its last event after a dropped connection; for
  every event the lag from its ``created`` to its arrival, and whether it came once;
- ``--users`` Lookout users, logged in, browsing the job list, job pages, queues, policies
  and decision metrics with a pause of ``--think`` seconds on average;
- ``--clients`` clients with personal API tokens submitting ``--rate`` jobs/s each, in
  requests of ``--per-request`` jobs; ``--fail-share`` of the jobs fail (out of memory:
  retried twice by the queue's retry policy, then failed by its limit; exit code 1: failed
  by a rule), so that the scheduler decides failures all along;
- a sampler of the database connections open and in use (``pg_stat_activity``) against
  the pools' bound (``ARMADA_DB_POOL_SIZE`` x processes), and ``pg_stat_database.deadlocks``
  before and after.

With ``--faults``: during the run, one ``kill -9`` of each process kind (web: the uvicorn
master and its workers; scheduler; beat; executor), each restarted at once as a supervisor
would, and three terminations of every database connection (``pg_terminate_backend``).
The report (``bench/concurrency_report.py``) gives the recovery time after each (until
submits succeed, watchers receive events, and jobs are leased and run again, all after the
fault) and the 5xx answers outside ``--fault-window`` seconds of a fault.

After the load stops, ``--drain`` seconds at most for the jobs to end and the watchers to
catch up; then the report: requests and errors per kind with p50/p95/p99, watcher lag,
events delivered once / missing / duplicated, jobs acknowledged vs stored and their states.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_bench \\
    REDIS_URL=redis://127.0.0.1:6379/8 .venv/bin/python bench/concurrency.py \\
    [--duration 180] [--faults] [--json results.json]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")

from concurrency_report import Sampler, report, sql  # noqa: E402 - bench/ is on the path

QUEUE = "bench"
EXECUTOR = "bench"
PASSWORD = "bench-password-1"
TERMINAL = ("succeeded", "failed", "cancelled", "preempted", "rejected")
FAULT_KINDS = ("web", "db", "scheduler", "db", "beat", "executor", "db")
POLICY = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "bench",
    "retryLimit": 2,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {"action": "Retry", "onCategory": "oom"},
    ],
}


def system_config(nodes: int) -> dict[str, Any]:
    categories = {
        "enabled": True,
        "categories": [
            {"name": "oom", "action": "Delete", "rules": [{"onConditions": ["OOMKilled"]}]},
            {
                "name": "user-error",
                "action": "Retain",
                "rules": [{"onExitCodes": {"operator": "In", "values": [1]}}],
            },
        ],
    }
    return {
        "scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": 5}},
        "executors": [
            {
                "id": EXECUTOR,
                "nodes": [
                    {"name": "node", "count": nodes, "allocatable": {"cpu": "16", "memory": "64Gi"}}
                ],
                "errorCategories": categories,
            }
        ],
    }


# -- faults ------------------------------------------------------------------------------


def terminate_connections(dsn: str, db_name: str) -> tuple[float, int]:
    at = time.time()
    rows = sql(
        dsn,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = %s AND pid <> pg_backend_pid()",
        (db_name,),
    )
    return at, len(rows)


# -- setting up --------------------------------------------------------------------------


def seed(args: argparse.Namespace) -> dict[str, Any]:
    """Users, tokens, the retry policy and the queue; returns what the clients need."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission
    from django.utils import timezone

    from armada.services.policies import policy_create
    from armada.services.queues import queue_create
    from armada.services.tokens import token_create

    now = timezone.now()
    users = get_user_model().objects
    admin = users.create_superuser("bench-admin", "bench@example.com", PASSWORD)
    submitters, viewers = (
        Group.objects.create(name="submitters"),
        Group.objects.create(name="viewers"),
    )
    viewers.permissions.add(Permission.objects.get(codename="view_retrypolicy"))
    policy_create(actor=admin, data=POLICY, now=now)
    queue_create(
        actor=admin,
        data={
            "name": QUEUE,
            "retryPolicies": [POLICY["name"]],
            "permissions": [
                {"subjects": [{"kind": "Group", "name": "submitters"}], "verbs": ["submit"]},
                {"subjects": [{"kind": "Group", "name": "viewers"}], "verbs": ["watch"]},
            ],
        },
        now=now,
    )
    tokens = []
    for i in range(args.clients):
        user = users.create_user(f"client-{i}", password=PASSWORD)
        user.groups.add(submitters)
        tokens.append(token_create(user=user, name="bench", expires_at=None, now=now).key)
    lookout_users = []
    for i in range(args.users):
        user = users.create_user(f"viewer-{i}", password=PASSWORD)
        user.groups.add(viewers)
        lookout_users.append((user.username, PASSWORD))
    watch_token = token_create(user=admin, name="watchers", expires_at=None, now=now).key
    per_client = max(1, args.watchers // args.clients)
    job_sets = [[f"c{c}-js{k:04d}" for k in range(per_client)] for c in range(args.clients)]
    return {
        "tokens": tokens,
        "watch_token": watch_token,
        "users": lookout_users,
        "job_sets": job_sets,
    }


# -- faults ------------------------------------------------------------------------------


def inject_faults(system, dsn: str, db_name: str, started: float, duration: float, stop) -> list:
    """One fault of each kind in ``FAULT_KINDS`` order, evenly over the middle 70% of the
    run; returns ``[(kind, wall-clock time, detail)]``."""
    faults = []
    for i, kind in enumerate(FAULT_KINDS):
        due = started + duration * (0.15 + 0.7 * i / (len(FAULT_KINDS) - 1))
        if stop.wait(max(0.0, due - time.time())):
            break
        if kind == "db":
            at, count = terminate_connections(dsn, db_name)
            faults.append((kind, at, f"{count} connections terminated"))
        else:
            pids = system.pids(kind)
            at = system.kill9(kind)
            faults.append((kind, at, f"kill -9 of pids {pids}, restarted"))
        print(f"  fault at {at - started:5.1f} s: {kind}: {faults[-1][2]}")
    return faults


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=180)
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--think", type=float, default=1.0, help="Lookout users' mean pause")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rate", type=float, default=100, help="jobs/s per client")
    parser.add_argument("--per-request", type=int, default=10)
    parser.add_argument("--fail-share", type=float, default=0.2)
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--faults", action="store_true")
    parser.add_argument("--fault-window", type=float, default=10.0)
    parser.add_argument("--drain", type=float, default=120.0)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true", help="keep the database and logs")
    args = parser.parse_args()

    import django

    django.setup()
    import redis
    import yaml
    from concurrency_clients import run_load, run_watchers  # bench/ is on the path
    from concurrency_system import System, commands, machine_busy, wait_until_answering
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from submit_api import free_port

    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL"):
        raise SystemExit("this benchmark needs PostgreSQL and Redis (DATABASE_URL, REDIS_URL)")
    old = setup_databases(verbosity=0, interactive=False, keepdb=False)
    db = settings.DATABASES["default"]
    db_name = db["NAME"]
    dsn = f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/{db_name}"
    work = Path(tempfile.mkdtemp(prefix="armada-concurrency-"))
    system = None
    try:
        seeded = seed(args)
        connection.close()
        redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
        (work / "armada.yaml").write_text(yaml.safe_dump(system_config(args.nodes)))
        (work / "logs").mkdir()
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db_name}",
            "ARMADA_CONFIG": str(work / "armada.yaml"),
            "ARMADA_VAR_DIR": str(work / "var"),
            "ARMADA_DEV": "1",
            "PYTHONUNBUFFERED": "1",
        }
        services = commands(port, args.web_workers, EXECUTOR)
        system = System(env, work / "logs", services)
        system.start_all()
        base = f"http://127.0.0.1:{port}"
        wait_until_answering(f"{base}/login")
        pool = int(os.environ.get("ARMADA_DB_POOL_SIZE", "8"))
        processes = args.web_workers + len(services) - 1
        print(
            f"system up: web ({args.web_workers} workers), scheduler, beat, executor "
            f"({args.nodes} nodes) on {db_name}; logs in {work / 'logs'}"
        )

        deadlocks_before = sql(
            dsn, "SELECT deadlocks FROM pg_stat_database WHERE datname = %s", (db_name,)
        )[0][0]
        sampler = Sampler(dsn, db_name)
        sampler.thread.start()

        mp = multiprocessing.get_context("spawn")
        stop_load, stop_watchers, ready = mp.Event(), mp.Event(), mp.Event()
        pairs = [(QUEUE, js) for sets in seeded["job_sets"] for js in sets][: args.watchers]
        watchers = mp.Process(
            target=run_watchers,
            args=("127.0.0.1", port, seeded["watch_token"], pairs, 100.0, ready, stop_watchers)
            + (str(work / "watchers.pickle"),),
        )
        watchers.start()
        if not ready.wait(timeout=300):
            raise RuntimeError("the watchers did not all connect within 300 s")
        print(f"{len(pairs)} watchers connected")
        load = mp.Process(
            target=run_load,
            args=(
                base,
                QUEUE,
                seeded["tokens"],
                seeded["job_sets"],
                args.rate,
                args.per_request,
                args.fail_share,
                seeded["users"],
                args.think,
                stop_load,
                str(work / "load.pickle"),
            ),
        )
        started = time.time()
        busy_before = machine_busy()
        cpu_before = {name: system.cpu_seconds(name) for name in services}
        load.start()
        faults: list = []
        fault_stop = threading.Event()
        if args.faults:
            fault_thread = threading.Thread(
                target=lambda: faults.extend(
                    inject_faults(system, dsn, db_name, started, args.duration, fault_stop)
                )
            )
            fault_thread.start()
        time.sleep(args.duration)
        fault_stop.set()
        if args.faults:
            fault_thread.join()
        stop_load.set()
        load.join(timeout=120)
        load_ended = time.time()
        busy_after = machine_busy()
        cpu = {name: system.cpu_seconds(name) - cpu_before[name] for name in services}
        cpu["machine"] = busy_after[0] - busy_before[0]
        cpu["machine_total"] = busy_after[1] - busy_before[1]
        print(f"load stopped after {load_ended - started:.0f} s; draining")

        # Drain: every job ends (or the time is up) and every watcher has caught up.
        drain_deadline = time.time() + args.drain
        while time.time() < drain_deadline:
            live = sql(
                dsn,
                "SELECT count(*) FROM armada_job WHERE queue = %s AND state <> ALL(%s)",
                (QUEUE, list(TERMINAL)),
            )[0][0]
            if live == 0:
                break
            time.sleep(2)
        time.sleep(5)  # the last events reach the watchers
        stop_watchers.set()
        watchers.join(timeout=120)
        sampler.stop.set()
        drained_in = time.time() - load_ended
        report(
            args,
            work,
            dsn,
            started,
            load_ended,
            drained_in,
            faults,
            sampler,
            pool * processes,
            deadlocks_before,
            db_name,
            system,
            cpu,
            queue=QUEUE,
        )
    finally:
        if system is not None:
            system.stop_all()
        connection.close()
        if not args.keep:
            teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
