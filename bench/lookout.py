"""Benchmark of Lookout at a million jobs (not a test).

1. Creates a throw-away PostgreSQL database (``test_<name>`` of DATABASE_URL, through
   ``setup_databases``; ``--keep`` keeps it between runs so the seeding is done once) and
   seeds ``--jobs`` jobs with their runs and some events with ``COPY``: ~100 queues of very
   different sizes, ~10,000 job sets ``team-N/exp-M`` submitted in bursts, mostly succeeded
   or failed jobs (failed ones with a category and subcategory), queued and running ones
   among the newest, runs with nodes, clusters, exit codes, retryable flags and decision
   trails, retried jobs with several runs, and a few jobs with many runs and events.
2. Starts the web server (``uvicorn armada.asgi:application --workers N``) on that database
   and logs ``--users`` users in through the admin login form (Lookout takes sessions only).
3. For ``--duration`` seconds, each user (a thread with its own session) requests, at
   random: jobs table first pages and deep pages (a cursor 50 pages in) filtered by queue,
   queue and state, failure category, job-set prefix (broad and narrow); counts grouped by
   queue, state, failure category and job set; and job pages. Meanwhile another process
   appends ``--events-per-s`` events through ``services.events.events_append`` and moves
   jobs between states.
4. Prints count, p50, p95, p99 and max latency per request kind, then calls the views
   in-process once per kind with ``CaptureQueriesContext``, runs ``EXPLAIN ANALYZE`` on every
   query they issue, and prints the slowest query of each kind and every query over 1 s.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_hlk \\
    .venv/bin/python bench/lookout.py [--jobs 1000000] [--duration 60] [--users 8] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/armada_hlk")

QUEUES = 100
JOB_SETS = 10_000
BATCH = 50_000
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SPAN = timedelta(days=60)
PASSWORD = "bench-password"  # noqa: S105 - a throw-away database

CATEGORIES = {
    "oom": ["container-oom", "node-oom"],
    "user-error": ["exit-1", "python-exception", "bad-arguments", "segfault"],
    "gpu": ["xid-79", "ecc-error", "nccl-timeout"],
    "internal": ["image-pull", "pod-deleted", "executor-lost"],
    "network": ["dns", "connection-reset"],
    "node-failure": ["node-not-ready", "disk-pressure"],
}
CATEGORY_WEIGHTS = {
    "oom": 30,
    "user-error": 35,
    "gpu": 10,
    "internal": 12,
    "network": 6,
    "node-failure": 7,
}
# State of a job by age: live states only among the newest jobs.
OLD_STATES = (["succeeded"] * 66) + (["failed"] * 26) + (["cancelled"] * 5) + (["preempted"] * 3)
NEW_STATES = (
    (["queued"] * 40) + (["running"] * 25) + (["leased"] * 3) + (["pending"] * 2) + OLD_STATES[::3]
)
CLUSTERS = [f"cluster-{i}" for i in range(10)]


# --- ids ---------------------------------------------------------------------------------


def ulid_at(moment: datetime, rnd: random.Random) -> str:
    from armada.services.ids import _encode

    millis = int(moment.timestamp() * 1000)
    return _encode((millis << 80) | rnd.getrandbits(80))


# --- seeding -----------------------------------------------------------------------------


def seed(n_jobs: int, rnd: random.Random) -> dict:
    """Fill the database; returns what the load needs (ids of some jobs)."""
    from django.db import connection, transaction

    from armada.models import Event, Job, Queue, Run
    from armada.services.bulk import insert_rows

    t_start = time.perf_counter()
    Queue.objects.bulk_create(
        [
            Queue(name=f"queue-{i:03d}", created_at=NOW - SPAN, updated_at=NOW - SPAN)
            for i in range(QUEUES)
        ]
    )
    # Team i submits to queue i; team sizes follow a Zipf-like law (queue-000 is the largest).
    team_weights = [1 / (i + 1) ** 0.9 for i in range(QUEUES)]
    teams = rnd.choices(range(QUEUES), weights=team_weights, k=JOB_SETS)
    per_team: dict[int, int] = defaultdict(int)
    sets = []
    for team in teams:
        sets.append(
            (
                team,
                f"team-{team}/exp-{per_team[team]}",
                NOW - SPAN + timedelta(seconds=rnd.random() * SPAN.total_seconds()),
            )
        )
        per_team[team] += 1
    sets.sort(key=lambda s: s[2])
    sizes = [rnd.paretovariate(1.5) for _ in sets]
    scale = n_jobs / sum(sizes)
    counts = [max(1, int(s * scale)) for s in sizes]
    counts[-1] += n_jobs - sum(counts)  # exactly n_jobs (the last set absorbs the rounding)
    if counts[-1] < 1:
        counts[-1] = 1
    new_after = NOW - timedelta(days=2)
    categories = list(CATEGORY_WEIGHTS)
    cat_weights = list(CATEGORY_WEIGHTS.values())
    pod_spec = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example/train:1.4",
                "resources": {"requests": {"cpu": "2", "memory": "8Gi"}},
            }
        ]
    }
    samples: list[str] = []
    heavy: list[str] = []
    jobs: list[dict] = []
    runs: list[dict] = []
    events: list[dict] = []
    total_jobs = total_runs = total_events = 0

    def flush() -> None:
        nonlocal total_jobs, total_runs, total_events
        with transaction.atomic():
            insert_rows(Job, jobs)
            insert_rows(Run, runs)
            insert_rows(Event, events)
        total_jobs += len(jobs)
        total_runs += len(runs)
        total_events += len(events)
        jobs.clear()
        runs.clear()
        events.clear()
        print(
            f"  seeded {total_jobs:,} jobs, {total_runs:,} runs, {total_events:,} events "
            f"({time.perf_counter() - t_start:.0f} s)",
            flush=True,
        )

    for (team, job_set, start), count in zip(sets, counts, strict=True):
        queue = f"queue-{team:03d}"
        owner = f"user-{team}-{rnd.randrange(5)}"
        moment = start
        for _ in range(count):
            moment += timedelta(milliseconds=rnd.randrange(1, 200))
            job_id = ulid_at(moment, rnd)
            state = rnd.choice(NEW_STATES if moment > new_after else OLD_STATES)
            cat = sub = ""
            n_runs = 0 if state == "queued" else 1
            if state == "failed":
                cat = rnd.choices(categories, weights=cat_weights)[0]
                sub = rnd.choice(CATEGORIES[cat])
                n_runs = rnd.choice((1, 1, 2, 3, 4))
            elif state == "succeeded" and rnd.random() < 0.08:
                n_runs = 2  # succeeded on a retry
            elif state == "cancelled" and rnd.random() < 0.5:
                n_runs = 0
            is_heavy = len(heavy) < 20 and rnd.random() < 0.0001
            if is_heavy:
                n_runs, state = 20, "failed"
                cat, sub = "gpu", "xid-79"
                heavy.append(job_id)
            if rnd.random() < 0.01 and len(samples) < 20_000:
                samples.append(job_id)
            transition = moment
            run_moment = moment
            memory = 8 * 1024**3 * 1000
            for r in range(n_runs):
                last = r == n_runs - 1
                run_moment += timedelta(seconds=rnd.randrange(1, 120))
                run_id = ulid_at(run_moment, rnd)
                cluster = rnd.choice(CLUSTERS)
                running_at = run_moment + timedelta(seconds=rnd.randrange(2, 60))
                finished_at = running_at + timedelta(seconds=rnd.randrange(30, 7200))
                if last:
                    run_state = {"cancelled": "cancelled", "preempted": "preempted"}.get(
                        state, state
                    )
                else:
                    run_state = "failed"
                live = run_state in ("leased", "pending", "running")
                failed = run_state == "failed"
                rcat = (
                    (cat if last else rnd.choices(categories, weights=cat_weights)[0])
                    if failed
                    else ""
                )
                rsub = (sub if last else rnd.choice(CATEGORIES[rcat])) if failed else ""
                decision: dict = {}
                retryable = None
                if failed:
                    retryable = (not last) or rnd.random() < 0.3
                    decision = {
                        "decision": "retry"
                        if not last
                        else rnd.choice(("fail", "fail", "give_up")),
                        "policy": "gpu-retry" if rcat == "gpu" else "default",
                        "policyVersion": rnd.randint(1, 4),
                        "ruleIndex": rnd.choice((0, 1, None)),
                        "retriesUsed": r,
                        "retryLimit": 3,
                        "reason": f"{rcat}/{rsub}",
                    }
                    if rcat == "oom":
                        decision["mutation"] = {
                            "memory": {"before": memory, "after": memory * 3 // 2, "kind": "x1.5"}
                        }
                        memory = memory * 3 // 2
                runs.append(
                    {
                        "id": run_id,
                        "job_id": job_id,
                        "executor": cluster,
                        "node": f"{cluster}-node-{rnd.randrange(500):03d}",
                        "pool": "gpu" if team % 4 == 0 else "cpu",
                        "state": run_state,
                        "requests": {"cpu": 2000, "memory": memory},
                        "pod_name": f"armada-{job_id}-{r}",
                        "leased_at": run_moment,
                        "pending_at": run_moment + timedelta(seconds=1),
                        "running_at": running_at if run_state != "leased" else None,
                        "finished_at": None if live else finished_at,
                        "exit_code": None
                        if live or run_state in ("cancelled", "preempted")
                        else (0 if run_state == "succeeded" else rnd.choice((1, 1, 2, 137, 139))),
                        "reason": "" if not failed else {"oom": "OOMKilled"}.get(rcat, "Error"),
                        "message": "" if not failed else f"{rsub}: see the log",
                        "failure_category": rcat,
                        "failure_subcategory": rsub,
                        "retryable": retryable,
                        "decision": decision,
                        "decided_at": finished_at if failed else None,
                    }
                )
                if is_heavy or (moment > new_after) or rnd.random() < 0.02:
                    repeat = 100 if is_heavy else 1
                    for k in range(repeat):
                        for etype in ("leased", "pending", "running", run_state):
                            if (
                                etype in ("leased", "pending", "running")
                                and k
                                and etype != "running"
                            ):
                                continue
                            events.append(
                                {
                                    "created": run_moment,
                                    "queue": queue,
                                    "job_set": job_set,
                                    "job_id": job_id,
                                    "run_id": run_id,
                                    "type": etype,
                                    "payload": {
                                        "clusterId": cluster,
                                        "nodeName": f"{cluster}-node-1",
                                        "reason": rsub,
                                        "failureCategory": rcat,
                                    },
                                }
                            )
                transition = finished_at if not live else running_at
            jobs.append(
                {
                    "id": job_id,
                    "queue_id": queue,
                    "job_set": job_set,
                    "owner": owner,
                    "priority": rnd.choice((0, 0, 0, 1, 2, 5)),
                    "priority_class": rnd.choice(("armada-default", "armada-preemptible")),
                    "pod_spec": pod_spec,
                    "annotations": {"team": f"team-{team}", "experiment": job_set},
                    "requests": {"cpu": 2000, "memory": memory},
                    "state": state,
                    "submitted_at": moment,
                    "last_transition_at": transition,
                    "failure_count": max(0, n_runs - 1) + (1 if state == "failed" else 0),
                    "run_count": n_runs,
                    "terminal_reason": {"failed": "failed", "cancelled": "cancelled by user"}.get(
                        state, ""
                    ),
                    "failure_category": cat,
                    "failure_subcategory": sub,
                }
            )
            if len(jobs) >= BATCH:
                flush()
    if jobs:
        flush()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE armada_job")
        cursor.execute("VACUUM ANALYZE armada_run")
        cursor.execute("VACUUM ANALYZE armada_event")
    print(f"seeded and analysed in {time.perf_counter() - t_start:.0f} s", flush=True)
    return {"samples": samples, "heavy": heavy}


def sample_jobs() -> dict:
    """Job ids to visit, from a database seeded earlier (``--keep``)."""
    from django.db import connection

    from armada.models import Job

    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM armada_job TABLESAMPLE SYSTEM (2) LIMIT 20000")
        samples = [r[0] for r in cursor.fetchall()]
    heavy = list(Job.objects.filter(run_count=20).values_list("id", flat=True)[:20])
    return {"samples": samples, "heavy": heavy}


# --- the load ----------------------------------------------------------------------------


def free_port() -> int:
    from submit_api import free_port as submit_free_port  # bench/ is on the path

    return submit_free_port()


def start_server(db_name: str, workers: int, port: int) -> subprocess.Popen:
    """The web server as production starts it (see ``submit_api.start_server``)."""
    from submit_api import start_server as submit_start_server

    return submit_start_server(db_name, workers, port)


def login(base: str, username: str):
    import requests

    s = requests.Session()
    page = s.get(f"{base}/admin/login/?next=/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    r = s.post(
        f"{base}/admin/login/?next=/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": token,
            "next": "/",
        },
        headers={"Referer": f"{base}/admin/login/"},
        allow_redirects=False,
    )
    if r.status_code != 302:
        raise RuntimeError(f"login failed: {r.status_code}")
    return s


def table_filters(rnd: random.Random) -> dict[str, list[str]]:
    """Kind -> query strings of that kind (first pages); deep pages add a cursor."""
    big = [f"queue-{i:03d}" for i in range(5)]
    queues = big + [f"queue-{i:03d}" for i in range(5, QUEUES, 7)]
    return {
        "table:all": [""],
        "table:queue": [f"queue={q}" for q in queues],
        "table:queue+state": [
            f"queue={q}&state={s}" for q in queues for s in ("failed", "running", "succeeded")
        ],
        "table:category": [f"category={c}" for c in CATEGORIES],
        "table:jobset-prefix-broad": ["job_set=team-", "job_set=team-1"],
        "table:jobset-prefix-narrow": [f"job_set=team-{i}/" for i in (0, 3, 17, 42, 77)],
    }


GROUP_KINDS = {
    "group:queue": "group=queue",
    "group:state": "group=state",
    "group:category": "group=category",
    "group:job_set": "group=job_set",
    "group:state(queue)": "group=state&queue=queue-000",
}


def deep_cursors(filters: dict[str, list[str]], depth: int) -> dict[str, list[str]]:
    """The ``after`` cursor of page ``depth`` of each filter (newest first), plus a cursor at the
    middle of the whole table (a far position). Found here with OFFSET, which Lookout never
    uses: it only follows cursors."""
    from django.http import QueryDict

    from armada.models import Job
    from lookout.grid.cursors import encode_cursor
    from lookout.grid.filters import JobFilters
    from lookout.grid.filters import apply_filters as jobs_filter

    deep: dict[str, list[str]] = {}
    for kind, queries in filters.items():
        out = []
        for q in queries:
            f = JobFilters.from_query(QueryDict(q))
            ids = list(
                jobs_filter(Job.objects.all(), f)
                .order_by("-id")
                .values_list("id", flat=True)[depth * 50 - 1 : depth * 50]
            )
            if ids:
                out.append(f"{q}&after={encode_cursor(ids[0], ids[0])}".lstrip("&"))
        deep[kind] = out
    total = Job.objects.count()
    mid = Job.objects.order_by("-id").values_list("id", flat=True)[total // 2]
    deep["table:all"].append(f"after={encode_cursor(mid, mid)}")
    return deep


def run_load(base: str, args, filters, deep, jobs_info) -> dict[str, list[float]]:
    kinds: list[tuple[str, float]] = []
    for kind in filters:
        kinds.append((kind, 1.0))
        kinds.append((kind.replace("table:", "deep:"), 0.6))
    for kind in GROUP_KINDS:
        kinds.append((kind, 0.6))
    kinds.append(("job", 3.0))
    if jobs_info["heavy"]:
        kinds.append(("job:heavy", 0.3))
    names = [k for k, _ in kinds]
    weights = [w for _, w in kinds]
    results: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    lock = threading.Lock()
    # A few seconds not counted first: each web worker's first requests load code and
    # templates and open its database connections.
    record_from = time.time() + args.warmup
    stop_at = record_from + args.duration

    def url_for(kind: str, rnd: random.Random) -> str:
        if kind.startswith("table:"):
            return "/?" + rnd.choice(filters[kind])
        if kind.startswith("deep:"):
            return "/?" + rnd.choice(deep[kind.replace("deep:", "table:")])
        if kind.startswith("group:"):
            return "/?" + GROUP_KINDS[kind]
        if kind == "job:heavy":
            return f"/jobs/{rnd.choice(jobs_info['heavy'])}"
        return f"/jobs/{rnd.choice(jobs_info['samples'])}"

    def user(i: int) -> None:
        rnd = random.Random(1000 + i)
        session = login(base, "bench")
        # Warm-up: each grouping once on this user's connection (so on each web worker),
        # so the timed part sees the steady state: large counts kept, refreshed in the
        # background. The first count of a grouping in a process is reported in-process.
        for query in GROUP_KINDS.values():
            session.get(f"{base}/?{query}", timeout=60)
        while time.time() < stop_at:
            kind = rnd.choices(names, weights=weights)[0]
            url = url_for(kind, rnd)
            t0 = time.perf_counter()
            try:
                r = session.get(base + url, timeout=60)
                ok = r.status_code == 200
            except Exception:  # noqa: BLE001 - counted as an error
                ok = False
            elapsed = time.perf_counter() - t0
            with lock:
                if time.time() - elapsed < record_from:
                    continue
                if ok:
                    results[kind].append(elapsed)
                else:
                    errors[kind] += 1
            if args.think:
                time.sleep(rnd.uniform(0, 2 * args.think))

    threads = [threading.Thread(target=user, args=(i,)) for i in range(args.users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print("errors:", dict(errors))
    return results


def ingest_worker(args) -> None:
    """A separate process: appends events and moves jobs between states until told to stop."""
    import django

    django.setup()
    from django.db import transaction

    from armada.core.states import EventType
    from armada.models import Job
    from armada.services.events import NewEvent, events_append

    rnd = random.Random(7)
    queued = list(
        Job.objects.filter(state="queued").values_list("id", "queue_id", "job_set")[:20000]
    )
    running = list(
        Job.objects.filter(state="running").values_list("id", "queue_id", "job_set")[:20000]
    )
    recent = list(Job.objects.order_by("-id").values_list("id", "queue_id", "job_set")[:50000])
    tick = 0.2
    per_tick = max(1, int(args.events_per_s * tick))
    sent = moved = 0
    t_start = time.time()
    while time.time() - t_start < args.duration:
        t0 = time.time()
        now = datetime.fromtimestamp(time.time(), UTC)
        with transaction.atomic():
            # A few state changes a tick: queued -> running, running -> succeeded.
            start = [queued.pop() for _ in range(min(4, len(queued)))]
            done = [running.pop() for _ in range(min(4, len(running)))]
            if start:
                Job.objects.filter(id__in=[j[0] for j in start]).update(
                    state="running", last_transition_at=now
                )
            if done:
                Job.objects.filter(id__in=[j[0] for j in done]).update(
                    state="succeeded", last_transition_at=now
                )
            running.extend(start)
            moved += len(start) + len(done)
            batch = [
                NewEvent(EventType.RUNNING, q, s, j, now, payload={"nodeName": "n"})
                for j, q, s in start
            ] + [NewEvent(EventType.SUCCEEDED, q, s, j, now) for j, q, s in done]
            while len(batch) < per_tick:
                j, q, s = rnd.choice(recent)
                batch.append(
                    NewEvent(
                        rnd.choice((EventType.PENDING, EventType.RUNNING, EventType.LEASED)),
                        q,
                        s,
                        j,
                        now,
                        payload={"clusterId": "cluster-1", "nodeName": "cluster-1-node-001"},
                    )
                )
            events_append(events=batch)
            sent += len(batch)
        time.sleep(max(0.0, tick - (time.time() - t0)))
    elapsed = time.time() - t_start
    print(f"ingest: {sent:,} events ({sent / elapsed:,.0f}/s), {moved:,} state changes", flush=True)


# --- in-process queries ------------------------------------------------------------------


def explain_views(filters, deep, jobs_info, threshold_s: float, show_plans: bool) -> None:
    """Calls each kind's view once in-process, EXPLAIN ANALYZEs every query it issued and
    prints the slowest per kind, and any over ``threshold_s``."""
    from django.contrib.auth import get_user_model
    from django.contrib.messages.storage.fallback import FallbackStorage
    from django.contrib.sessions.backends.db import SessionStore
    from django.db import connection
    from django.test import RequestFactory
    from django.test.utils import CaptureQueriesContext

    from lookout import views

    user = get_user_model().objects.get(username="bench")
    factory = RequestFactory()
    cases: list[tuple[str, str]] = []
    for kind, queries in filters.items():
        cases += [(kind, "/?" + q) for q in queries[:3]]
        cases += [(kind.replace("table:", "deep:"), "/?" + q) for q in deep[kind][:3]]
    cases += [(kind, "/?" + q) for kind, q in GROUP_KINDS.items()]
    cases += [("job", f"/jobs/{j}") for j in jobs_info["samples"][:5]]
    cases += [("job:heavy", f"/jobs/{j}") for j in jobs_info["heavy"][:2]]
    print()
    print("in-process (one request at a time, no load): view time, SQL time, slowest query")
    over: list[tuple[float, str, str]] = []
    for kind, url in cases:
        request = factory.get(url)
        request.user = user
        request.session = SessionStore()
        request._messages = FallbackStorage(request)
        with CaptureQueriesContext(connection) as ctx:
            t0 = time.perf_counter()
            if url.startswith("/jobs/"):
                response = views.job_detail(request, url.rsplit("/", 1)[1])
            else:
                response = views.jobs(request)
            elapsed = time.perf_counter() - t0
        assert response.status_code == 200, (url, response.status_code)
        sql_s = sum(float(q["time"]) for q in ctx.captured_queries)
        worst = (0.0, "", "")
        for q in ctx.captured_queries:
            if not q["sql"].lstrip().upper().startswith("SELECT"):
                continue
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + q["sql"])
                plan = "\n".join(r[0] for r in cursor.fetchall())
            ms = float(re.search(r"Execution Time: ([\d.]+) ms", plan).group(1))
            if ms > worst[0]:
                worst = (ms, q["sql"], plan)
            if ms > threshold_s * 1000:
                over.append((ms, url, q["sql"]))
        print(
            f"  {kind:28} {elapsed * 1000:7.1f} ms view, {sql_s * 1000:7.1f} ms SQL "
            f"({len(ctx.captured_queries)} queries); slowest {worst[0]:7.1f} ms  {url[:70]}"
        )
        if show_plans and worst[0] > args_plan_ms:
            print("    " + worst[1][:400])
            print("    " + worst[2].replace("\n", "\n    "))
    print(f"queries over {threshold_s:g} s: {len(over)}")
    for ms, url, sql in sorted(over, reverse=True):
        print(f"  {ms:8.1f} ms  {url}\n    {sql[:500]}")


args_plan_ms = 50.0


def report(results: dict[str, list[float]], duration: float) -> None:
    def pct(values: list[float], p: float) -> float:
        if len(values) == 1:
            return values[0]
        return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]

    total = sum(len(v) for v in results.values())
    print()
    print(f"{total:,} requests in {duration:.0f} s ({total / duration:.1f}/s)")
    print(f"| {'request':28} | count | p50 ms | p95 ms | p99 ms | max ms |")
    print(f"|{'-' * 30}|------:|-------:|-------:|-------:|-------:|")
    for kind in sorted(results):
        v = sorted(results[kind])
        print(
            f"| {kind:28} | {len(v):5} | {pct(v, 50) * 1000:6.0f} | {pct(v, 95) * 1000:6.0f} "
            f"| {pct(v, 99) * 1000:6.0f} | {v[-1] * 1000:6.0f} |"
        )


def main() -> None:
    global args_plan_ms
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warmup", type=float, default=5, help="seconds not counted first")
    parser.add_argument("--think", type=float, default=0.0, help="mean pause between requests")
    parser.add_argument("--events-per-s", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the seeded database")
    parser.add_argument("--explain-only", action="store_true", help="skip the HTTP load")
    parser.add_argument("--skip-explain", action="store_true", help="skip the in-process part")
    parser.add_argument("--show-plans", action="store_true")
    parser.add_argument("--plan-ms", type=float, default=50.0)
    parser.add_argument("--ingest-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args_plan_ms = args.plan_ms
    if args.ingest_worker:
        ingest_worker(args)
        return

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    # serialized_aliases=(): do not copy the whole database into a string (minutes at 1M jobs).
    old = setup_databases(verbosity=0, interactive=False, keepdb=args.keep, serialized_aliases=())
    server = ingest = None
    try:
        db_name = settings.DATABASES["default"]["NAME"]
        rnd = random.Random(42)
        from armada.models import Job

        if Job.objects.exists():
            print(f"database {db_name}: kept from an earlier run", flush=True)
            jobs_info = sample_jobs()
        else:
            print(f"database {db_name}: seeding {args.jobs:,} jobs", flush=True)
            jobs_info = seed(args.jobs, rnd)
        users = get_user_model()
        if not users.objects.filter(username="bench").exists():
            users.objects.create_superuser("bench", "bench@example.com", PASSWORD)
        filters = table_filters(rnd)
        t0 = time.perf_counter()
        deep = deep_cursors(filters, depth=50)
        print(f"deep cursors found in {time.perf_counter() - t0:.1f} s", flush=True)
        if not args.explain_only:
            port = free_port()
            server = start_server(db_name, args.workers, port)
            base = f"http://127.0.0.1:{port}"
            from django.conf import settings as s

            db = s.DATABASES["default"]
            ingest = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--ingest-worker",
                    "--duration",
                    str(args.warmup + args.duration + 5),
                    "--events-per-s",
                    str(args.events_per_s),
                ],
                env={
                    **os.environ,
                    "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db_name}",
                },
            )
            time.sleep(2)
            print(
                f"load: {args.users} users, {args.workers} web workers, {args.duration:.0f} s, "
                f"{args.events_per_s} events/s, think {args.think:g} s; "
                f"load average {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            results = run_load(base, args, filters, deep, jobs_info)
            print(f"load average after: {os.getloadavg()[0]:.2f}")
            report(results, args.duration)
            ingest.wait(timeout=120)
            ingest = None
        if not args.skip_explain:
            explain_views(filters, deep, jobs_info, 1.0, args.show_plans)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if ingest is not None:
            ingest.terminate()
            ingest.wait(timeout=30)
        connection.close()
        teardown_databases(old, verbosity=0, keepdb=args.keep)


if __name__ == "__main__":
    main()
