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
The report gives the recovery time after each (until submits succeed, watchers receive
events, and jobs are leased and run again, all after the fault) and the 5xx answers outside
``--fault-window`` seconds of a fault.

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
import json
import multiprocessing
import os
import pickle
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")

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


# -- measuring ---------------------------------------------------------------------------


class Sampler:
    """Every ``period`` seconds: connections to the database, open and not idle, on a
    connection of its own (reopened after a termination)."""

    def __init__(self, dsn: str, db_name: str, period: float = 0.25):
        self.dsn, self.db_name, self.period = dsn, db_name, period
        self.samples: list[tuple[float, int, int]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psycopg

        conn = None
        while not self.stop.wait(self.period):
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self.dsn, autocommit=True)
                row = conn.execute(
                    "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') "
                    "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    (self.db_name,),
                ).fetchone()
                self.samples.append((time.time(), row[0], row[1]))
            except psycopg.Error:
                conn = None

    def max_open(self) -> int:
        return max((s[1] for s in self.samples), default=0)

    def max_busy(self) -> int:
        return max((s[2] for s in self.samples), default=0)


def sql(dsn: str, query: str, params: tuple = ()) -> list[tuple]:
    """One query on a fresh connection (the benchmark's own pooled one may have been
    terminated by a fault)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


def terminate_connections(dsn: str, db_name: str) -> tuple[float, int]:
    at = time.time()
    rows = sql(
        dsn,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = %s AND pid <> pg_backend_pid()",
        (db_name,),
    )
    return at, len(rows)


def percentiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)

    def at(share: float) -> float:
        return 1000 * ordered[int(share * (len(ordered) - 1))]

    return f"{at(0.5):.0f} / {at(0.95):.0f} / {at(0.99):.0f} ms"


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


def recovery(
    fault_at: float,
    submits_ok: list[float],
    arrivals: list[float],
    leased: list[float],
    running: list[float],
) -> dict[str, float | None]:
    """Seconds from the fault to the first submit answered 201, the first event received by
    a watcher, the first lease and the first running pod, each after the fault."""

    def first_after(times: list[float]) -> float | None:
        later = [t for t in times if t > fault_at]
        return round(min(later) - fault_at, 2) if later else None

    parts = {
        "submit": first_after(submits_ok),
        "watch": first_after(arrivals),
        "lease": first_after(leased),
        "run": first_after(running),
    }
    known = [v for v in parts.values() if v is not None]
    parts["recovered"] = max(known) if len(known) == len(parts) else None
    return parts


# -- the run -----------------------------------------------------------------------------


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
        )
    finally:
        if system is not None:
            system.stop_all()
        connection.close()
        if not args.keep:
            teardown_databases(old, verbosity=0)


def _statuses(requests_: list) -> str:
    """``503 x5, 500 x2``: how many of each status, most first."""
    counts = Counter(r[2] for r in requests_)
    return ", ".join(f"{status} x{n}" for status, n in counts.most_common()) or "none"


def report(
    args,
    work: Path,
    dsn: str,
    started: float,
    load_ended: float,
    drained_in: float,
    faults: list,
    sampler: Sampler,
    pool_bound: int,
    deadlocks_before: int,
    db_name: str,
    system,
    cpu: dict[str, float],
) -> None:
    watch = pickle.loads((work / "watchers.pickle").read_bytes())
    load = pickle.loads((work / "load.pickle").read_bytes())
    requests_ = load.requests + watch.requests
    deadlocks = (
        sql(dsn, "SELECT deadlocks FROM pg_stat_database WHERE datname = %s", (db_name,))[0][0]
        - deadlocks_before
    )

    def in_fault_window(at: float, seconds: float) -> bool:
        """Whether a request from ``at`` lasting ``seconds`` overlaps a fault's window (one
        sent just before a fault can be cut by it)."""
        return any(at + seconds >= f_at and at <= f_at + args.fault_window for _, f_at, _ in faults)

    by_kind: dict[str, list[tuple[float, int, float]]] = defaultdict(list)
    for at, kind, status, seconds in requests_:
        by_kind[kind].append((at, status, seconds))
    fives = [r for r in requests_ if r[2] >= 500]
    fives_outside = [r for r in fives if not in_fault_window(r[0], r[3])]

    # Jobs: every acknowledged id stored once; the states they reached.
    acknowledged = [i for ids in load.job_ids for i in ids]
    stored = dict(sql(dsn, "SELECT id, state FROM armada_job WHERE queue = %s", (QUEUE,)))
    lost = [i for i in acknowledged if i not in stored]
    duplicated_acks = len(acknowledged) - len(set(acknowledged))
    states = Counter(stored.values())

    # Events: each watcher against the job set's events in the database.
    events = defaultdict(set)
    for job_set, event_id in sql(
        dsn, "SELECT job_set, id FROM armada_event WHERE queue = %s", (QUEUE,)
    ):
        events[job_set].add(event_id)
    delivered = missing = duplicates = unexpected = 0
    for w in watch.watchers:
        got = set(w.ids)
        delivered += len(got)
        missing += len(events[w.job_set] - got)
        unexpected += len(got - events[w.job_set])
        duplicates += w.duplicates
    reconnects = sum(max(0, w.connects - 1) for w in watch.watchers)
    drops = sum(w.drops for w in watch.watchers)
    watched = {w.job_set for w in watch.watchers}
    expected = sum(len(ids) for js, ids in events.items() if js in watched)

    # Recovery after each fault.
    submits_ok = [
        at + s for at, kind, status, s in load.requests if kind == "submit" and status == 201
    ]
    leased, running = [], []
    for kind, created in sql(
        dsn,
        "SELECT type, extract(epoch FROM created) FROM armada_event "
        "WHERE queue = %s AND type IN ('leased', 'running') AND created > to_timestamp(%s)",
        (QUEUE, started),
    ):
        (leased if kind == "leased" else running).append(float(created))
    recoveries = [
        (
            kind,
            round(at - started, 1),
            detail,
            recovery(at, submits_ok, watch.arrivals, leased, running),
        )
        for kind, at, detail in faults
    ]

    elapsed = load_ended - started
    submitted_ok = sum(
        1 for _, kind, status, _ in load.requests if kind == "submit" and status == 201
    )
    print()
    print(f"== {elapsed:.0f} s of load, drained in {drained_in:.0f} s ==")
    print(
        f"jobs acknowledged {len(acknowledged)} ({len(acknowledged) / elapsed:.0f}/s; goal "
        f"{args.clients * args.rate:.0f}/s), in {submitted_ok} requests; clients behind "
        f"schedule at the end: {', '.join(f'{b:.1f} s' for b in load.behind)}"
    )
    print(
        f"jobs stored {len(stored)}; acknowledged but missing {len(lost)}; acknowledged twice "
        f"{duplicated_acks}; stored but not acknowledged {len(set(stored) - set(acknowledged))}"
    )
    print(f"job states after the drain: {dict(sorted(states.items()))}")
    print(
        "requests per kind: count, 5xx, other errors (status 0 = refused/timeout, 4xx), p50/p95/p99"
    )
    for kind in sorted(by_kind):
        rows = by_kind[kind]
        errors = Counter(status for _, status, _ in rows if status >= 400 or status == 0)
        n5 = sum(n for status, n in errors.items() if status >= 500)
        others = {status: n for status, n in errors.items() if status < 500}
        ok_times = [s for _, status, s in rows if 0 < status < 400]
        print(f"  {kind:20} {len(rows):7} {n5:5}  {others or '-'}  {percentiles(ok_times)}")
    print(
        f"5xx: {len(fives)} in all ({_statuses(fives)}), {len(fives_outside)} outside"
        f" {args.fault_window:.0f} s of a fault"
    )
    print(
        f"watchers {len(watch.watchers)}: events expected {expected}, delivered once {delivered}, "
        f"missing {missing}, duplicated {duplicates}, unexpected {unexpected}; "
        f"streams broken {drops}, reopened {reconnects}"
    )
    lags = [lag for per_type in watch.lags.values() for lag in per_type]
    print(
        f"watcher lag (event created to received) p50/p95/p99: {percentiles(lags)}; "
        f"max {1000 * max(lags, default=0):.0f} ms; per event type: "
        + ", ".join(f"{kind} {percentiles(v)}" for kind, v in sorted(watch.lags.items()))
    )
    print(
        f"database connections: at most {sampler.max_open()} open and {sampler.max_busy()} "
        f"busy at once (pools' bound {pool_bound}: ARMADA_DB_POOL_SIZE x processes); "
        f"deadlocks during the run: {deadlocks}"
    )
    restarts = {
        name: len(s.unexpected_exits) for name, s in system.services.items() if s.unexpected_exits
    }
    print(
        "CPU during the load, share of the machine's "
        f"{cpu['machine_total']:.0f} cpu-seconds: busy {100 * cpu['machine'] / cpu['machine_total']:.0f}%; "
        + ", ".join(
            f"{name} {100 * cpu[name] / cpu['machine_total']:.0f}%"
            for name in system.services
            if not args.faults  # a restarted process starts counting again
        )
        + f"; benchmark clients: watchers {100 * watch.cpu_seconds / cpu['machine_total']:.0f}%, "
        f"submitters and Lookout users {100 * load.cpu_seconds / cpu['machine_total']:.0f}% "
        "(the rest: PostgreSQL, Redis and whatever else runs on the machine)"
    )
    print(f"processes that died unasked and were restarted: {restarts or 'none'}")
    for kind, at, detail, parts in recoveries:
        print(f"  fault {kind:9} at {at:5.1f} s ({detail}): recovered in {parts}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "duration_s": elapsed,
                    "jobs_acknowledged": len(acknowledged),
                    "jobs_stored": len(stored),
                    "jobs_lost": len(lost),
                    "job_states": states,
                    "fives": len(fives),
                    "fives_by_status": dict(Counter(r[2] for r in fives)),
                    "fives_outside_faults": len(fives_outside),
                    "events_expected": expected,
                    "events_delivered": delivered,
                    "events_missing": missing,
                    "events_duplicated": duplicates,
                    "lag_p50_ms": 1000 * statistics.median(lags) if lags else None,
                    "db_max_open": sampler.max_open(),
                    "db_max_busy": sampler.max_busy(),
                    "pool_bound": pool_bound,
                    "deadlocks": deadlocks,
                    "recoveries": recoveries,
                    "cpu_seconds": cpu,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
