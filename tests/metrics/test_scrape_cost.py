"""A scrape of ``/metrics`` costs a fixed number of queries, whatever the size of the database:
measured on 20,000 jobs in 50 queues with 2,000 active runs on 100 nodes."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from armada.models import Executor, Job, MetricGauge, Node, Queue, Run, RunUsage
from armada.services.ids import new_id
from tests.metrics.scenario import configure
from tests.metrics.scrape import parse, value

# stored counters, queues, jobs, runs, executors, nodes, the last cycle's gauges, pods' usage
# (docs/metrics.md)
SCRAPE_QUERIES = 8


def _fill(*, queues: int, jobs: int, runs: int, nodes: int) -> None:
    now = timezone.now()
    Queue.objects.bulk_create(
        [Queue(name=f"q{i:02}", created_at=now, updated_at=now) for i in range(queues)]
    )
    Executor.objects.filter(id="test").update(last_heartbeat=now)
    Node.objects.bulk_create(
        [
            Node(
                executor_id="test",
                name=f"node-{i}",
                pool="default",
                allocatable={"cpu": 64000, "memory": 256 * 2**30 * 1000},
                last_seen=now,
            )
            for i in range(nodes)
        ]
    )
    rows = []
    for i in range(jobs):
        state = "running" if i < runs else "queued"
        rows.append(
            Job(
                id=new_id(),
                queue_id=f"q{i % queues:02}",
                job_set="s",
                owner="o",
                priority_class=("batch", "armada-default")[i % 2],
                pod_spec={},
                requests={"cpu": 1000 * (1 + i % 4), "memory": 2**30 * 1000},
                state=state,
                submitted_at=now,
                last_transition_at=now,
            )
        )
    Job.objects.bulk_create(rows, batch_size=2000)
    Run.objects.bulk_create(
        [
            Run(
                id=new_id(),
                job=job,
                executor="test",
                node=f"node-{k % nodes}",
                pool="default",
                state="running",
                requests=job.requests,
                leased_at=now,
                running_at=now,
            )
            for k, job in enumerate(rows[:runs])
        ],
        batch_size=2000,
    )
    runs_made = Run.objects.filter(state="running").values_list("id", flat=True)
    RunUsage.objects.bulk_create(
        [
            RunUsage(run_id=run_id, resource=r, value=v)
            for run_id in runs_made
            for r, v in (("cpu", 500), ("memory", 2**29 * 1000))
        ],
        batch_size=2000,
    )
    # A cycle's gauges: one row per queue and name, as a cycle over 50 queues stores them.
    MetricGauge.objects.bulk_create(
        [
            MetricGauge(
                name=name,
                labels_key=f"pool=default,queue=q{i:02}",
                labels={"pool": "default", "queue": f"q{i:02}"},
                value=1.0,
            )
            for i in range(queues)
            for name in ("armada_scheduler_considered_jobs", "armada_scheduler_gangs_considered")
        ]
    )


def _scrape(client) -> tuple[int, float, dict]:
    started = time.perf_counter()
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/metrics")
    elapsed = time.perf_counter() - started
    assert response.status_code == 200
    values, _ = parse(response.content.decode())
    return len(queries), elapsed, values


@pytest.mark.django_db
def test_a_scrape_is_a_fixed_number_of_queries_on_a_large_database(settings, client, capsys):
    configure(settings)
    small, _, _ = _scrape(client)
    _fill(queues=50, jobs=20_000, runs=2_000, nodes=100)
    count, elapsed, values = _scrape(client)
    assert small == count == SCRAPE_QUERIES
    # The numbers are right on the large database too.
    assert value(values, "armada_queue_size", queueName="q07", queue="q07", state="validated") == (
        Job.objects.filter(queue_id="q07", state="queued").count()
    )
    pods = {"cluster": "test", "pool": "default", "phase": "Running", "nodeType": ""}
    total = sum(
        value(values, "armada_queue_leased_pod_count", queueName=q, queue=q, reservation="", **pods)
        for q in (f"q{i:02}" for i in range(50))
    )
    assert total == 2_000
    used = sum(
        value(
            values,
            "armada_queue_resource_used",
            cluster="test",
            pool="default",
            queueName=q,
            queue=q,
            resourceType="cpu",
            nodeType="",
            reservation="",
            physical_pool="default",
            scalable_unit="",
        )
        for q in (f"q{i:02}" for i in range(50))
    )
    assert used == pytest.approx(2_000 * 0.5)
    with capsys.disabled():
        print(f"\nscrape of 20,000 jobs / 50 queues / 2,000 runs: {count} queries, {elapsed:.3f}s")
