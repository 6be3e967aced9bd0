"""The world ``bench/scheduler_cycle.py`` schedules in (not a test): nodes, queues and queued
jobs written straight into the database, the raw write limit of the rows a lease writes, and
the executors' reports that finish runs between cycles; one cycle timed (or profiled), and the
job database compared with a fresh load."""

from __future__ import annotations

import functools
import time
from datetime import datetime, timedelta
from pathlib import Path

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
    """Write ``n`` leases' rows and nothing else: the claiming ``UPDATE`` of the job rows
    (``scheduler_leases._claim_queued``, the very statement, without the runs' insert that
    PostgreSQL's cycle adds to it), the runs and the ``leased`` events by COPY
    (``bulk.insert_rows``), then the deferred foreign-key checks (``SET CONSTRAINTS ALL IMMEDIATE``, which a commit would run); in a transaction
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
        claimed = _claim_queued(new_runs, now, {}, with_runs=False)  # the UPDATE alone
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
