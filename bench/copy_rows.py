"""Benchmark of ``services.bulk.insert_rows`` on PostgreSQL: event rows written with COPY
(not a test).

Creates a throw-away database (``test_<name>`` of DATABASE_URL, through ``setup_databases``)
and writes ``--rows`` event rows (``submitted`` and ``failed`` events whose payloads hold
numbers, text with tabs and newlines, nested lists) in one transaction, ``--repeat`` times;
then as many job rows (JSON pod specs, timestamps, integers, booleans). Rows are built
beforehand; only the transaction is timed. Prints each time and the median, and the median
CPU time of this process (building COPY's data; the rest is the database's).

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_bench \\
    .venv/bin/python bench/copy_rows.py [--rows 50000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")


def event_rows(count: int, now) -> list[dict]:
    rows = []
    for i in range(count):
        common = {"created": now, "queue": "bench", "job_set": f"set-{i // 1000}"}
        job_id = f"job-{i // 2:08d}"
        if i % 2:
            payload = {
                "clusterId": "cluster-1",
                "nodeName": f"node-{i % 50}",
                "exitCodes": {"main": 137},
                "reason": "OOMKilled",
                "message": "line one\nline\ttwo \\ end",
                "failureCategory": "oom",
                "retryable": True,
            }
            rows.append(
                {
                    **common,
                    "job_id": job_id,
                    "run_id": f"run-{i}",
                    "type": "failed",
                    "payload": payload,
                }
            )
        else:
            rows.append(
                {
                    **common,
                    "job_id": job_id,
                    "run_id": "",
                    "type": "submitted",
                    "payload": {"priority": i % 10, "owner": "bench"},
                }
            )
    return rows


def job_rows(count: int, now) -> list[dict]:
    pod_spec = {
        "containers": [
            {
                "name": "main",
                "image": "busybox:latest",
                "command": ["sh", "-c", "echo hello"],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            }
        ]
    }
    stamp = time.time_ns()
    return [
        {
            "id": f"{stamp:020d}{i:06d}",
            "queue_id": "bench",
            "job_set": "copy",
            "client_id": "",
            "owner": "bench",
            "namespace": "default",
            "priority": i % 10,
            "priority_class": "armada-default",
            "pod_spec": pod_spec,
            "annotations": {"bench/index": str(i)},
            "requests": {"cpu": 100, "memory": 67108864},
            "gang_id": "",
            "gang_cardinality": 1,
            "gang_uniformity_label": "",
            "fail_fast": bool(i % 2),
            "state": "queued",
            "submitted_at": now,
            "last_transition_at": now,
        }
        for i in range(count)
    ]


def timed(model, rows: list[dict]) -> tuple[float, float]:
    """Seconds of the transaction writing ``rows``, and of this process's CPU in it."""
    from django.db import transaction

    from armada.services.bulk import insert_rows

    started, cpu_started = time.perf_counter(), time.process_time()
    with transaction.atomic():
        insert_rows(model, rows)
    return time.perf_counter() - started, time.process_time() - cpu_started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from django.utils import timezone

    from armada.models import Event, Job
    from armada.services.queues import queue_create

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    old = setup_databases(verbosity=0, interactive=False)
    try:
        now = timezone.now()
        admin = get_user_model().objects.create_superuser("bench", "bench@example.com", "x")
        queue_create(actor=admin, data={"name": "bench"}, now=now)
        for what, model, build in (("event", Event, event_rows), ("job", Job, job_rows)):
            times, cpu = [], []
            for _ in range(args.repeat):
                rows = build(args.rows, now)
                elapsed, used = timed(model, rows)
                times.append(elapsed)
                cpu.append(used)
                model.objects.all().delete()
            median = statistics.median(times)
            print(
                f"COPY of {args.rows} {what} rows: "
                + ", ".join(f"{t:.2f}" for t in times)
                + f" s; median {median:.2f} s = {args.rows / median:,.0f} rows/s"
                + f" (this process's CPU: median {statistics.median(cpu):.2f} s)"
            )
    finally:
        connection.close()
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
