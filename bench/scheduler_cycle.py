"""Benchmark of whole scheduling cycles at scale (not a test).

Creates a throw-away database (PostgreSQL when DATABASE_URL is set), registers --nodes nodes
(32 cpu, 128Gi each) on executors of 100 nodes, loads --jobs queued jobs spread over --queues
queues straight into the job table (COPY on PostgreSQL), then measures:
- cold start: the first cycle after a restart (loading every live job into memory, one round,
  writing the leases);
- --cycles further cycles; before each one, the runs leased by the previous cycle finish
  (rows and ``succeeded`` events written as the executors' reports would) and --submit new
  jobs arrive through the submit service, so each sync has real changes to read.
Before the cycles it measures the raw write limit of the same rows (``raw_write_limit``):
--raw-leases leases' job updates, run rows and ``leased`` events written with the cycle's own
statements and nothing else, in a transaction that is rolled back.
Prints per-cycle time, p50/p95 (over every timed cycle, and over the cycles after the one in
which the pool first fills), leases per second against that raw limit, and the process's
resident memory.

With --write-behind each cycle's writes run on the writer thread behind the next cycle's
round (``services.lease_pipeline``). Between two cycles the benchmark itself finishes runs
and submits jobs, time in which the writer goes on unmeasured; so that this gap gives the
writer nothing for free, a cycle's time is then counted as the longer of the cycle itself
and the previous cycle's writes (timed on the writer thread), as in a loop of cycles with
no gap at all; the last cycle's time adds its own writes, which nothing overlaps.

Usage: ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_bench \\
       .venv/bin/python bench/scheduler_cycle.py --nodes 1000 --queues 100 --jobs 100000
"""

from __future__ import annotations

import argparse
import functools
import gc
import math
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")

# (cpu, memory): requests are stored in milli-units (cpu in millicores, memory in milli-bytes).
SHAPES = [("1", "1Gi"), ("2", "4Gi"), ("4", "8Gi")]
GIB_MILLI = (1 << 30) * 1000


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pod_spec(cpu: str, memory: str) -> dict:
    resources = {"cpu": cpu, "memory": memory}
    return {
        "containers": [
            {
                "name": "main",
                "image": "busybox:latest",
                "resources": {"requests": resources, "limits": resources},
            }
        ]
    }


def seed(*, nodes: int, queues: int, jobs: int, now: datetime) -> None:

    from armada.models import Executor, Node, Queue
    from armada.services.ids import new_id

    Queue.objects.bulk_create(
        [
            Queue(name=f"q{i:03d}", priority_factor=1.0, created_at=now, updated_at=now)
            for i in range(queues)
        ]
    )
    per_executor = 100
    for e in range(0, nodes, per_executor):
        ex = Executor.objects.create(
            id=f"ex{e // per_executor:03d}",
            pool="default",
            backend="fake",
            registered_at=now,
            last_heartbeat=now + timedelta(days=1),
        )
        Node.objects.bulk_create(
            [
                Node(
                    executor=ex,
                    name=f"node-{i:05d}",
                    pool="default",
                    labels={"kubernetes.io/hostname": f"node-{i:05d}"},
                    allocatable={"cpu": 32000, "memory": 128 * GIB_MILLI},
                    last_seen=now,
                )
                for i in range(e, min(nodes, e + per_executor))
            ]
        )
    insert_jobs(
        job_row(new_id(), f"q{i % queues:03d}", SHAPES[i % len(SHAPES)], now, priority=i % 3)
        for i in range(jobs)
    )


@functools.cache
def shape_spec(shape: tuple) -> tuple[dict, dict]:
    from armada.core.submission import pod_requests

    spec = pod_spec(*shape)
    return spec, pod_requests(spec).to_dict()


def job_row(job_id: str, queue: str, shape: tuple, now: datetime, **extra) -> dict:
    spec, requests = shape_spec(shape)
    return {
        "id": job_id,
        "queue_id": queue,
        "job_set": extra.pop("job_set", "bench"),
        "owner": "bench",
        "priority_class": extra.pop("priority_class", "armada-default"),
        "pod_spec": spec,
        "requests": requests,
        "state": extra.pop("state", "queued"),
        "submitted_at": now,
        "last_transition_at": now,
        **extra,
    }


def insert_jobs(rows) -> None:
    from django.db import transaction

    from armada.models import Job
    from armada.services.bulk import insert_rows

    batch: list[dict] = []
    with transaction.atomic():
        for row in rows:
            batch.append(row)
            if len(batch) >= 50_000:
                insert_rows(Job, batch)
                batch = []
        insert_rows(Job, batch)


def raw_write_limit(n: int, now: datetime, *, explain: bool = False) -> tuple[int, float, dict]:
    """Write ``n`` leases' rows as the cycle does and nothing else: the claiming ``UPDATE``
    of the job rows (``scheduler_leases._claim_queued``, the very statement), the runs and
    the ``leased`` events by COPY (``bulk.insert_rows``), then the deferred foreign-key
    checks (``SET CONSTRAINTS ALL IMMEDIATE``, which a commit would run); in a transaction
    that is rolled back, so the cycles that follow find the tables as they were (bar dead
    row versions, as after any cycle). Jobs are taken evenly over the queued ones, runs
    spread over the nodes. The rows are built before the clock starts; COPY's own encoding
    is timed. Returns (leases written, seconds, seconds per step)."""
    from django.db import connection, transaction

    from armada.models import Event, Job, Node, Run
    from armada.services.bulk import insert_rows
    from armada.services.ids import new_id
    from armada.services.scheduler_leases import _claim_queued, pod_name

    queued = list(
        Job.objects.filter(state="queued").order_by("id").values_list("id", "queue", "job_set")
    )
    stride = max(1, len(queued) // n)
    picked = queued[::stride][:n]
    nodes = list(Node.objects.order_by("name").values_list("executor_id", "name", "pool"))
    new_runs = {
        job_id: (new_id(), *nodes[i % len(nodes)]) for i, (job_id, _, _) in enumerate(picked)
    }
    requests = dict(Job.objects.filter(id__any=list(new_runs)).values_list("id", "requests"))
    runs, events = [], []
    for job_id, queue, job_set in picked:
        run_id, executor, node, pool = new_runs[job_id]
        runs.append(
            {
                "id": run_id,
                "job_id": job_id,
                "executor": executor,
                "node": node,
                "pool": pool,
                "state": "leased",
                "requests": requests[job_id],
                "pod_name": pod_name(job_id),
                "leased_at": now,
            }
        )
        events.append(
            {
                "created": now,
                "queue": queue,
                "job_set": job_set,
                "job_id": job_id,
                "run_id": run_id,
                "type": "leased",
                "payload": {"clusterId": executor, "nodeName": node, "pool": pool},
            }
        )
    steps: dict[str, float] = {}
    with transaction.atomic():
        if explain and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_current_wal_lsn()")
                (wal_before,) = cursor.fetchone()
        start = time.perf_counter()
        claimed = _claim_queued(new_runs, now)
        steps["update jobs"] = time.perf_counter() - start
        insert_rows(Run, runs)
        steps["copy runs"] = time.perf_counter() - start - sum(steps.values())
        insert_rows(Event, events)
        steps["copy events"] = time.perf_counter() - start - sum(steps.values())
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        steps["constraint checks"] = time.perf_counter() - start - sum(steps.values())
        took = time.perf_counter() - start
        if explain and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", [wal_before])
                (wal,) = cursor.fetchone()
            print(f"raw write: WAL {int(wal) / len(claimed):,.0f} bytes per lease")
        transaction.set_rollback(True)
    if len(claimed) != len(picked):
        raise RuntimeError(f"raw write claimed {len(claimed)} of {len(picked)} jobs")
    return len(claimed), took, steps


def finish_runs(job_ids: list[str], now: datetime) -> None:
    """What the executors' reports would write: the runs succeeded, jobs succeeded, events."""
    from django.db import transaction

    from armada.core.states import EventType
    from armada.models import Job, Run
    from armada.services.events import NewEvent, events_append

    with transaction.atomic():
        for start in range(0, len(job_ids), 5000):
            chunk = job_ids[start : start + 5000]
            Run.objects.filter(job_id__in=chunk).update(
                state="succeeded", running_at=now, finished_at=now
            )
            Job.objects.filter(id__in=chunk).update(state="succeeded", last_transition_at=now)
        events_append(
            events=[
                NewEvent(EventType.SUCCEEDED, queue="q", job_set="s", job_id=j, created=now)
                for j in job_ids
            ]
        )


STEP_TIMES: dict[str, float] = {}
WRITES: list[float] = []  # with --write-behind: each cycle's writes, seconds, in order


def time_writes() -> None:
    """Time each cycle's writes on the writer thread (``lease_pipeline.write_plan``)."""
    from armada.services import lease_pipeline

    inner = lease_pipeline.write_plan

    def timed(plan):
        start = time.perf_counter()
        try:
            return inner(plan)
        finally:
            WRITES.append(time.perf_counter() - start)

    lease_pipeline.write_plan = timed


def time_steps() -> None:
    """Time the cycle's steps (cumulative seconds by name in ``STEP_TIMES``) by wrapping the
    functions ``services.scheduler`` and ``services.scheduler_leases`` call."""
    from armada.services import cycle_writes, jobdb, scheduler, scheduler_leases

    def wrap(module, name: str, label: str) -> None:
        inner = getattr(module, name)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                took = time.perf_counter() - start
                STEP_TIMES[label] = STEP_TIMES.get(label, 0.0) + took

        setattr(module, name, timed)

    for name in (
        "counters_reset_if_due",
        "runs_expire",
        "failures_decide",
        "load_nodes",
        "schedule_round",
    ):
        wrap(scheduler, name, name)
    for name in (
        "write_leases",
        "runs_request_stops",
        "records_write",
        "duration_gauge_rows",
        "cycle_metrics_write",
    ):  # on the writer thread with --write-behind, overlapping the next cycle
        wrap(cycle_writes, name, name)
    wrap(jobdb.JobDb, "sync", "sync")
    wrap(jobdb.JobDb, "note_leased", "note_leased")
    wrap(jobdb.JobDb, "settle", "settle")
    started: list[float] = []

    def collector(phase: str, info: dict) -> None:
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif started:
            label = f"gc gen{info['generation']}"
            STEP_TIMES[label] = STEP_TIMES.get(label, 0.0) + time.perf_counter() - started[0]

    gc.callbacks.append(collector)
    for name in ("_claim_queued", "insert_rows", "events_append", "job_state_leases_count"):
        wrap(scheduler_leases, name, f"write_leases: {name}")


def timed_cycle(scheduler, now: datetime, *, profile: bool, write_behind: bool = False):
    """One scheduling cycle; with ``profile``, its cProfile listing (by cumulative time)."""
    if not profile:
        return scheduler.scheduler_cycle(now=now, write_behind=write_behind)
    import cProfile
    import pstats

    with cProfile.Profile() as profiler:
        report = scheduler.scheduler_cycle(now=now, write_behind=write_behind)
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats("armada/", 40)
    stats.sort_stats("tottime").print_stats(15)
    return report


def gangs_scenario(args, now: datetime) -> None:
    """Queue ``a``'s preemptible 1-cpu jobs run on every cpu of --nodes nodes; queue ``b``
    (same priority factor) has --gangs gangs of 32 one-cpu members queued (with
    --uniform, each gang must stay on one of 10 racks). Each cycle is timed; between
    cycles the executors finish the preemptions that were asked for. Prints each queue's
    share of the pool's cpu (leased and running runs not being stopped)."""
    from django.db import transaction

    from armada.core.states import EventType
    from armada.models import Job, Node, Queue, Run
    from armada.services import scheduler
    from armada.services.bulk import insert_rows
    from armada.services.events import NewEvent, events_append
    from armada.services.ids import new_id

    seed(nodes=args.nodes, queues=0, jobs=0, now=now)
    for name in "ab":
        Queue.objects.create(name=name, priority_factor=1.0, created_at=now, updated_at=now)
    if args.uniform:
        for node in Node.objects.all():
            node.labels = {**node.labels, "rack": f"r{int(node.name[-5:]) % 10}"}
            node.save(update_fields=["labels"])
    nodes = list(Node.objects.order_by("name").values_list("executor_id", "name"))
    fill, runs = [], []
    for executor, node in nodes:
        for _ in range(32):
            job_id = new_id()
            fill.append(
                job_row(
                    job_id,
                    "a",
                    ("1", "1Gi"),
                    now,
                    state="running",
                    priority_class="armada-preemptible",
                )
            )
            runs.append(
                {
                    "id": new_id(),
                    "job_id": job_id,
                    "executor": executor,
                    "node": node,
                    "pool": "default",
                    "state": "running",
                    "requests": fill[-1]["requests"],
                    "leased_at": now,
                    "running_at": now,
                }
            )
    gangs = []
    for g in range(args.gangs):
        extra = {"gang_id": f"g{g}", "gang_cardinality": 32}
        if args.uniform:
            extra["gang_uniformity_label"] = "rack"
        gangs.extend(job_row(new_id(), "b", ("1", "1Gi"), now, **extra) for _ in range(32))
    insert_jobs(fill)
    insert_jobs(gangs)
    with transaction.atomic():
        insert_rows(Run, runs)
    capacity = 32 * len(nodes)
    print(f"running in a: {len(fill)}; queued gang members in b: {len(gangs)}; cpu {capacity}")
    scheduler.scheduler_state_reset()
    for c in range(args.cycles):
        now = now + timedelta(seconds=1)
        start = time.perf_counter()
        report = timed_cycle(scheduler, now, profile=args.profile and c == 0)
        took = time.perf_counter() - start
        shares = {}
        for queue in "ab":
            used = Run.objects.filter(
                job__queue=queue,
                state__in=["leased", "pending", "running"],
                stop_requested_at__isnull=True,
            ).count()
            shares[queue] = used / capacity
        print(
            f"cycle {c + 1}: {took * 1000:.0f} ms; leased {report.leased}, preempted "
            f"{report.preempted}; cpu share a {shares['a']:.1%}, b {shares['b']:.1%} "
            f"(ideal: b gets all it asks, {len(gangs) / capacity:.1%})"
        )
        # The executors stop what was preempted: those runs end, their jobs end preempted.
        with transaction.atomic():
            stopped = list(
                Run.objects.filter(
                    stop_requested_at__isnull=False, state__in=["leased", "pending", "running"]
                ).values_list("id", "job_id")
            )
            Run.objects.filter(id__in=[r for r, _ in stopped]).update(
                state="preempted", finished_at=now
            )
            Job.objects.filter(id__in=[j for _, j in stopped]).update(state="preempted")
            events_append(
                events=[
                    NewEvent(EventType.PREEMPTED, queue="a", job_set="bench", job_id=j, created=now)
                    for _, j in stopped
                ]
            )


def check_jobdb(db, config) -> None:
    """The scheduler's job database, synced once more, against a fresh load: the same
    queued jobs in the same order and the same active runs."""
    from armada.services.jobdb import JobDb

    db.sync()
    fresh = JobDb(classes=config.scheduling.priority_classes)
    fresh.sync()

    def view(d) -> tuple:
        order = {q: [j.id for j in jobs] for q, jobs in d.by_queue.items() if jobs}
        runs = {
            k: (r.id, r.pool, r.executor, r.node, dict(r.requests), r.stopping)
            for k, r in d.runs.items()
        }
        return order, runs

    same = view(db) == view(fresh)
    print(f"job database against a fresh load: {'the same' if same else 'DIFFERENT'}")
    if not same:
        raise SystemExit(1)


def summary(name: str, times: list[float], leased: list[int], raw) -> str:
    """p50, p95 (nearest rank) and max of ``times``, and their leases/s against ``raw``."""
    if not times:
        return f"{name}: none"
    ordered = sorted(times)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    rate = sum(leased) / sum(times)
    text = (
        f"{name} ({len(times)}): p50 {statistics.median(times) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms; leases/s {rate:,.0f}"
    )
    if raw is not None:
        n, took, _ = raw
        text += f" = {rate / (n / took):.0%} of the raw write limit"
    return text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", choices=["backlog", "gangs"], default="backlog")
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--uniform", action="store_true", help="gangs keep to one rack")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=100000)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--submit", type=int, default=5000)
    parser.add_argument("--max-per-round", type=int, default=10000)
    parser.add_argument("--lookback", type=int, default=10000)
    parser.add_argument("--profile", action="store_true", help="profile the last cycle")
    parser.add_argument(
        "--raw-leases",
        type=int,
        default=0,
        help="leases written for the raw write limit (default: --max-per-round; 0 skips it)",
    )
    parser.add_argument("--no-raw", action="store_true", help="skip the raw write limit")
    parser.add_argument("--explain", action="store_true", help="WAL per lease of the raw write")
    parser.add_argument("--steps", action="store_true", help="time each cycle's steps")
    parser.add_argument(
        "--check", action="store_true", help="compare the job database with a fresh load"
    )
    parser.add_argument("--profile-load", action="store_true", help="profile the cold load")
    parser.add_argument(
        "--write-behind",
        action="store_true",
        help="each cycle's writes run behind the next cycle's round (scheduling.writeBehind)",
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    old = setup_databases(verbosity=0, interactive=False)
    try:
        from armada.core.config import parse_config
        from armada.models import Run
        from armada.services import scheduler
        from armada.services.lease_pipeline import lease_pipeline_drain
        from armada.services.submit import job_submit

        settings.ARMADA = parse_config(
            {
                "scheduling": {
                    "maximumJobsPerRound": args.max_per_round,
                    "maxQueueLookback": args.lookback,
                }
            }
        )
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        if args.scenario == "gangs":
            if args.uniform:
                settings.ARMADA = parse_config({"scheduling": {"indexedNodeLabels": ["rack"]}})
            gangs_scenario(args, t0)
            return
        user = get_user_model().objects.create_superuser("bench", "b@example.com", "x")
        start = time.perf_counter()
        seed(nodes=args.nodes, queues=args.queues, jobs=args.jobs, now=t0)
        print(
            f"database: {connection.vendor}; nodes: {args.nodes}; queues: {args.queues}; "
            f"queued jobs: {args.jobs}; seeded in {time.perf_counter() - start:.1f}s; "
            f"rss before: {rss_mib():.0f} MiB"
        )
        raw = None
        if not args.no_raw:
            raw = raw_write_limit(
                args.raw_leases or args.max_per_round,
                t0 + timedelta(seconds=1),
                explain=args.explain,
            )
            n, took, steps = raw
            print(
                f"raw write limit: {n} leases ({3 * n} rows: job updates, runs, events) in "
                f"{took * 1000:.0f} ms = {3 * n / took:,.0f} rows/s, {n / took:,.0f} leases/s ("
                + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in steps.items())
                + ")"
            )
        if args.steps:
            time_steps()
        if args.write_behind:
            time_writes()
        scheduler.scheduler_state_reset()
        now = t0 + timedelta(seconds=1)
        start = time.perf_counter()
        db, _ = scheduler.scheduler_state(settings.ARMADA)
        if args.profile_load:
            import cProfile
            import pstats

            with cProfile.Profile() as profiler:
                db.sync()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
        else:
            db.sync()
        load = time.perf_counter() - start
        loaded = db.queued_count()
        report = scheduler.scheduler_cycle(now=now)
        cold = time.perf_counter() - start
        print(
            f"cold start: {cold:.2f}s = loading {loaded} jobs {load:.2f}s + first "
            f"cycle {cold - load:.2f}s (leased {report.leased}, considered {report.considered}); "
            f"rss {rss_mib():.0f} MiB"
        )
        # The cycle in which the pool first fills: the first whose round stopped short of its
        # lease limit (it then examines every queued job up to the lookback and records a
        # reason for each, once). Cycles after it are the steady state.
        fill = 0 if not report.limit_reached else None
        times, leased_total, leased_each = [], 0, []
        spec = {"priority": 1, "podSpec": pod_spec("1", "1Gi")}
        for c in range(args.cycles):
            # The runs leased so far and not finished: the previous cycle's (with
            # --write-behind, those of its writes that have landed; the rest next time).
            previous = list(
                Run.objects.filter(state="leased").values_list("job_id", flat=True).order_by()
            )
            now = now + timedelta(seconds=1)
            finish_runs(previous, now)
            for b in range(0, args.submit, 1000):
                job_submit(
                    actor=user,
                    data={
                        "queue": f"q{(c * 7 + b) % args.queues:03d}",
                        "jobSetId": f"new-{c}",
                        "jobs": [spec] * min(1000, args.submit - b),
                    },
                    now=now,
                )
            STEP_TIMES.clear()
            start = time.perf_counter()
            report = timed_cycle(
                scheduler,
                now,
                profile=args.profile and c == args.cycles - 1,
                write_behind=args.write_behind,
            )
            took = time.perf_counter() - start
            if args.write_behind:
                # The previous cycle's writes, settled by this one: no cycle of a loop
                # without gaps comes round sooner than the writes it waits for.
                took = max(took, WRITES[c - 1] if c > 0 else 0.0)
                if c == args.cycles - 1:  # and the last writes, which nothing overlaps
                    lease_pipeline_drain()
                    took += WRITES[c]
            if args.steps:
                print(
                    "  steps (ms): "
                    + ", ".join(f"{k} {v * 1000:.0f}" for k, v in STEP_TIMES.items())
                )
            times.append(took)
            leased_each.append(report.leased)
            leased_total += report.leased
            if fill is None and not report.limit_reached:
                fill = c + 1
            print(
                f"cycle {c + 1}: {took * 1000:.0f} ms, leased {report.leased} "
                f"({report.leased / took:,.0f}/s), finished before it {len(previous)}, "
                f"queued in memory {scheduler._jobdb.queued_count()}, "
                f"reasons {len(report.unschedulable)}"
                + (" (the pool's first fill)" if fill == c + 1 else "")
            )
        print(summary("all cycles", times, leased_each, raw))
        if fill is not None:
            after = slice(fill, None)
            print(
                f"pool first filled in cycle {fill} (0: the cold start); "
                + summary(f"cycles {fill + 1}-{len(times)}", times[after], leased_each[after], raw)
            )
        print(f"rss {rss_mib():.0f} MiB")
        if args.write_behind:
            written = Run.objects.filter(leased_at__gt=t0 + timedelta(seconds=1)).count()
            print(
                f"write-behind: {sum(leased_each):,} leases planned after the cold start, "
                f"{written:,} written"
            )
            scheduler.lease_pipeline(1.0).settle(scheduler._jobdb)
        if args.check:
            check_jobdb(scheduler._jobdb, settings.ARMADA)
    finally:
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
