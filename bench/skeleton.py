"""Benchmark of the walking skeleton's batch paths (not a test).

Creates a throw-away test database (SQLite by default, PostgreSQL when DATABASE_URL is set),
then measures, in-process:
- submit: jobs per second through the submit service, in files of --batch jobs;
- schedule: one scheduling cycle over --jobs queued jobs and --nodes nodes;
- executor: one tick that starts every leased run, and one that reports them all finished
  (the agent talks to the executor API's own handler in this process: no sockets).

Usage: ARMADA_DEV=1 [DATABASE_URL=...] .venv/bin/python bench/skeleton.py --jobs 10000 --nodes 500
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--batch", type=int, default=1000)
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
        from armada.services.queues import queue_create
        from armada.services.scheduler import scheduler_cycle
        from armada.services.submit import job_submit
        from tests.executor_api import api_agent  # the agent over the executor API's handler

        settings.ARMADA = parse_config({"scheduling": {"maximumJobsPerRound": args.jobs}})
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        user = get_user_model().objects.create_superuser("bench", "b@example.com", "x")
        queue_create(actor=user, data={"name": "bench"}, now=t0)
        executor = parse_config(
            {
                "executors": [
                    {
                        "id": "bench",
                        "nodes": [
                            {
                                "name": "n",
                                "count": args.nodes,
                                "allocatable": {"cpu": "64", "memory": "256Gi"},
                            }
                        ],
                    }
                ]
            }
        ).executors[0]
        agent = api_agent(executor)
        agent.tick(t0)

        spec = {
            "annotations": {"fake.armadaproject.io/duration": "10s"},
            "podSpec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "x",
                        "resources": {
                            "requests": {"cpu": "1", "memory": "1Gi"},
                            "limits": {"cpu": "1", "memory": "1Gi"},
                        },
                    }
                ]
            },
        }
        start = time.perf_counter()
        for i in range(0, args.jobs, args.batch):
            n = min(args.batch, args.jobs - i)
            job_submit(
                actor=user, data={"queue": "bench", "jobSetId": f"s{i}", "jobs": [spec] * n}, now=t0
            )
        submit_s = time.perf_counter() - start

        start = time.perf_counter()
        report = scheduler_cycle(now=t0 + timedelta(seconds=1))
        schedule_s = time.perf_counter() - start

        start = time.perf_counter()
        agent.tick(t0 + timedelta(seconds=2))
        start_tick_s = time.perf_counter() - start
        start = time.perf_counter()
        agent.tick(t0 + timedelta(seconds=30))
        finish_tick_s = time.perf_counter() - start

        print(
            f"database: {connection.vendor}; jobs: {args.jobs}; nodes: {args.nodes}; leased: {report.leased}"
        )
        print(
            f"submit:   {submit_s:.2f}s  ({args.jobs / submit_s:,.0f} jobs/s, files of {args.batch})"
        )
        print(f"schedule: {schedule_s:.2f}s  (one cycle leasing {report.leased} jobs)")
        print(
            f"executor: {start_tick_s:.2f}s to start {report.leased} runs (pending+running events), "
            f"{finish_tick_s:.2f}s to report them succeeded"
        )
    finally:
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
