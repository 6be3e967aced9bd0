"""Benchmark of retry decisions (not a test).

In a throw-away test database (SQLite by default, PostgreSQL when DATABASE_URL is set):
--jobs jobs run out of memory on the fake backend under a policy that retries oom with
memory x1.5. Measured, in-process (the agent talks to the executor API's own handler here:
no sockets): the executor tick that deletes the failed pods and
reports the failures, the scheduler cycle that decides them all (engine, memory mutation,
static-fit probe, events, counters) and leases the retries again.

Usage: ARMADA_DEV=1 [DATABASE_URL=...] .venv/bin/python bench/retries.py --jobs 5000 --nodes 500
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

POLICY = {
    "name": "bench",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        {
            "action": "Retry",
            "onCategory": "oom",
            "mutate": {"resources": {"memory": {"factor": 1.5}}},
        }
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=500)
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
        from armada.services.policies import policy_create
        from armada.services.queues import queue_create
        from armada.services.scheduler import scheduler_cycle
        from armada.services.submit import job_submit
        from tests.executor_api import api_agent  # the agent over the executor API's handler

        settings.ARMADA = parse_config(
            {
                "scheduling": {
                    "maximumJobsPerRound": args.jobs,
                    "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
                },
                "executors": [
                    {
                        "id": "bench",
                        "nodes": [
                            {
                                "name": "n",
                                "count": args.nodes,
                                "allocatable": {"cpu": "64", "memory": "512Gi"},
                            }
                        ],
                        "errorCategories": {
                            "enabled": True,
                            "categories": [
                                {
                                    "name": "oom",
                                    "action": "Delete",
                                    "rules": [{"onConditions": ["OOMKilled"]}],
                                }
                            ],
                        },
                    }
                ],
            }
        )
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        at = lambda s: t0 + timedelta(seconds=s)  # noqa: E731
        user = get_user_model().objects.create_superuser("bench", "b@example.com", "x")
        policy_create(actor=user, data=POLICY, now=t0)
        queue_create(actor=user, data={"name": "bench", "retryPolicies": ["bench"]}, now=t0)
        agent = api_agent(settings.ARMADA.executors[0])
        agent.tick(t0)
        spec = {
            "annotations": {
                "fake.armadaproject.io/condition": "OOMKilled",
                "fake.armadaproject.io/duration": "1s",
            },
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
        for i in range(0, args.jobs, 1000):
            job_submit(
                actor=user,
                data={
                    "queue": "bench",
                    "jobSetId": f"s{i}",
                    "jobs": [spec] * min(1000, args.jobs - i),
                },
                now=t0,
            )
        scheduler_cycle(now=at(1))
        agent.tick(at(2))  # started

        start = time.perf_counter()
        agent.tick(at(10))  # every pod OOM-killed: delete, then report
        report_s = time.perf_counter() - start
        start = time.perf_counter()
        cycle = scheduler_cycle(now=at(11))
        decide_s = time.perf_counter() - start
        print(f"database: {connection.vendor}; jobs: {args.jobs}; nodes: {args.nodes}")
        print(
            f"executor: {report_s:.2f}s to delete {args.jobs} failed pods and report the failures"
        )
        print(
            f"scheduler: {decide_s:.2f}s for one cycle deciding {cycle.decided} failures "
            f"({cycle.decided / decide_s:,.0f}/s including the cycle) and leasing {cycle.leased} retries"
        )
    finally:
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
