"""Benchmark of whole scheduling cycles at scale (not a test).

Creates a throw-away database (PostgreSQL when DATABASE_URL is set), registers --nodes nodes
(32 cpu, 128Gi each) on executors of 100 nodes, loads --jobs queued jobs spread over --queues
queues straight into the job table (COPY on PostgreSQL), then measures:
- cold start: the first cycle after a restart (loading every live job into memory, one round,
  writing the leases);
- --cycles further cycles; before each one, the runs leased by the previous cycle finish
  (rows and ``succeeded`` events written as the executors' reports would) and --submit new
  jobs arrive through the submit service, so each sync has real changes to read.
Prints per-cycle time, p50/p95, leases per second and the process's resident memory.

Usage: ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_bench \\
       .venv/bin/python bench/scheduler_cycle.py --nodes 1000 --queues 100 --jobs 100000
"""

from __future__ import annotations

import argparse
import functools
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


def timed_cycle(scheduler, now: datetime, *, profile: bool):
    """One scheduling cycle; with ``profile``, its cProfile listing (by cumulative time)."""
    if not profile:
        return scheduler.scheduler_cycle(now=now)
    import cProfile
    import pstats

    with cProfile.Profile() as profiler:
        report = scheduler.scheduler_cycle(now=now)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
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
    parser.add_argument("--profile-load", action="store_true", help="profile the cold load")
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
        report = scheduler.scheduler_cycle(now=now)
        cold = time.perf_counter() - start
        print(
            f"cold start: {cold:.2f}s = loading {db.queued_count()} jobs {load:.2f}s + first "
            f"cycle {cold - load:.2f}s (leased {report.leased}, considered {report.considered}); "
            f"rss {rss_mib():.0f} MiB"
        )
        times, leased_total = [], 0
        spec = {"priority": 1, "podSpec": pod_spec("1", "1Gi")}
        for c in range(args.cycles):
            previous = list(
                Run.objects.filter(leased_at=now).values_list("job_id", flat=True).order_by()
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
            start = time.perf_counter()
            report = timed_cycle(scheduler, now, profile=args.profile and c == args.cycles - 1)
            took = time.perf_counter() - start
            times.append(took)
            leased_total += report.leased
            print(
                f"cycle {c + 1}: {took * 1000:.0f} ms, leased {report.leased} "
                f"({report.leased / took:,.0f}/s), finished before it {len(previous)}, "
                f"queued in memory {scheduler._jobdb.queued_count()}"
            )
        times.sort()
        p95 = times[max(0, int(round(0.95 * len(times))) - 1)] if times else 0.0
        print(
            f"cycles: p50 {statistics.median(times or [0]) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
            f"max {max(times or [0]) * 1000:.0f} ms; leases/s over all cycles "
            f"{leased_total / (sum(times) or 1):,.0f}; rss {rss_mib():.0f} MiB"
        )
    finally:
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
