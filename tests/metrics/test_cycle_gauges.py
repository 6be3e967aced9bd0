"""Values of the per-cycle families: the round's statistics (a preempting round, gangs), the
queued and run times of jobs of known ages, and pods' usage from utilisation events."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from armada.core.quantity import Resources
from armada.core.reports import RunUtilisation
from armada.core.round_stats import node_preemptibility
from armada.core.scheduling import NodeState, QueuedJob, QueueState, RunningJob, schedule_round
from armada.models import Job, Run
from armada.services.duration_metrics import median_estimate
from armada.services.run_utilisation import runs_record_utilisation
from armada.services.scheduler import scheduler_cycle
from tests.metrics.scenario import configure, spec, step, submit
from tests.metrics.scrape import scrape, series, value

# The labels of queue demo's queued-time series in the default pool.
DEMO_QUEUED = {
    "pool": "default",
    "priorityClass": "armada-default",
    "queueName": "demo",
    "queue": "demo",
    "accounting_role": "primary",
}


def res(cpu: str, memory: str = "1Gi") -> Resources:
    return Resources.parse({"cpu": cpu, "memory": memory})


def test_a_round_reports_gangs_positions_loops_and_evictions_per_queue():
    ticks = iter(range(1000))
    nodes = [
        NodeState(
            id="x/n1",
            executor="x",
            name="n1",
            allocatable=res("4", "8Gi"),
            allocated=res("4", "2Gi"),
        ),
        NodeState(id="x/n2", executor="x", name="n2", allocatable=res("4", "8Gi")),
        NodeState(
            id="x/n3", executor="x", name="n3", allocatable=res("4", "8Gi"), unschedulable=True
        ),
    ]
    running = [
        RunningJob(id="r1", queue="low", node_id="x/n1", requests=res("2"), preemptible=True),
        RunningJob(id="r2", queue="low", node_id="x/n1", requests=res("2"), preemptible=True),
    ]
    gang = [
        QueuedJob(id=f"g{i}", queue="a", requests=res("2"), gang_id="g", gang_cardinality=2)
        for i in range(2)
    ]
    urgent = QueuedJob(id="u1", queue="b", requests=res("2"), urgency=10)
    result = schedule_round(
        nodes=nodes,
        queues=[
            QueueState("a"),
            QueueState("b"),
            QueueState("low", allocated=res("4")),
        ],
        jobs=[*gang, urgent],
        max_leases=10,
        running=running,
        clock=lambda: float(next(ticks)),
    )
    stats = result.stats
    assert {lease.job_id for lease in result.leases} == {"g0", "g1", "u1"}
    a, b = stats.queues["a"], stats.queues["b"]
    assert (a.considered, a.gangs_considered, a.gangs_scheduled) == (2, 1, 1)
    assert (b.considered, b.gangs_considered, b.gangs_scheduled) == (1, 1, 1)
    # Two units in all: each queue's first (and last leased) at its place in the loop.
    assert stats.loops == 2
    assert sorted([a.first_gang_position, b.first_gang_position]) == [0, 1]
    assert a.last_gang_position == a.first_gang_position
    assert a.seconds == b.seconds == 1.0  # one tick of the clock per unit
    low = stats.queues["low"]
    assert low.evicted_jobs == 1
    assert low.evicted == {"cpu": 2000, "memory": 2**30 * 1000}
    assert {(n.node, n.preemptible, n.reason) for n in stats.nodes} == {
        ("n1", True, "all_jobs_preemptible"),
        ("n2", True, "node_empty"),
        ("n3", False, "node_unschedulable"),
    }


def test_node_preemptibility_names_every_reason():
    node = NodeState(id="x/n", executor="x", name="n", allocatable=res("4"), unschedulable=True)
    jobs = [RunningJob(id="r", queue="q", node_id="x/n", requests=res("1"))]
    [found] = node_preemptibility([node], jobs)
    assert (found.preemptible, found.reason) == (False, "job_not_preemptible,node_unschedulable")


def test_the_median_is_interpolated_in_its_bucket_and_held_within_min_and_max():
    counts = [0] * 10
    counts[1] = 3  # three between 60 s and 600 s
    assert median_estimate(counts, 100.0, 500.0) == pytest.approx(300.0)
    one = [0] * 10
    one[0] = 1
    assert median_estimate(one, 42.0, 42.0) == 42.0
    assert median_estimate([0] * 10, 0.0, 0.0) == 0.0


@pytest.mark.django_db(transaction=True)
def test_queued_and_run_times_of_jobs_of_known_ages(settings, client, queue, owner):
    agent = configure(settings, cpu="1")
    submit(owner, spec("1"))
    scheduler_cycle(now=timezone.now())
    agent.tick(timezone.now())
    queued = submit(owner, spec("1"), spec("1"), spec("1"))
    # A cycle reckons the duration gauges again once metrics.refreshInterval (30 s) has passed.
    now = timezone.now() + timedelta(seconds=30)
    for job_id, age in zip(queued, (30, 700, 4000), strict=True):
        Job.objects.filter(id=job_id).update(last_transition_at=now - timedelta(seconds=age))
    Run.objects.update(leased_at=now - timedelta(seconds=90))
    scheduler_cycle(now=now)
    values, types = scrape(client)
    assert types["armada_job_queued_seconds"] == "histogram"
    q = DEMO_QUEUED
    assert value(values, "armada_job_queued_seconds_count", **q) == 3
    assert value(values, "armada_job_queued_seconds_bucket", le="60.0", **q) == 1
    assert value(values, "armada_job_queued_seconds_bucket", le="600.0", **q) == 1
    assert value(values, "armada_job_queued_seconds_bucket", le="1800.0", **q) == 2
    assert value(values, "armada_job_queued_seconds_bucket", le="+Inf", **q) == 3
    assert value(values, "armada_job_queued_seconds_sum", **q) == pytest.approx(4730, abs=1)
    assert value(values, "armada_job_queued_seconds_min", **q) == pytest.approx(30, abs=1)
    assert value(values, "armada_job_queued_seconds_max", **q) == pytest.approx(4000, abs=1)
    median = value(values, "armada_job_queued_seconds_median", **q)
    assert 600 <= median <= 1800  # the middle job waited 700 s: its bucket
    r = {k: v for k, v in q.items() if k != "accounting_role"}
    assert value(values, "armada_job_run_time_seconds_count", **r) == 1
    assert value(values, "armada_job_run_time_seconds_bucket", le="60.0", **r) == 0
    assert value(values, "armada_job_run_time_seconds_bucket", le="600.0", **r) == 1
    for stat in ("min", "max", "median"):
        got = value(values, f"armada_job_run_time_seconds_{stat}", **r)
        assert got == pytest.approx(90, abs=1)
    # The round's statistics of that cycle: three jobs taken up, none leased (no room).
    considered = value(values, "armada_scheduler_considered_jobs", pool="default", queue="demo")
    assert considered == 3
    pq = {"pool": "default", "queue": "demo"}
    assert value(values, "armada_scheduler_gangs_considered", **pq) == 3
    assert value(values, "armada_scheduler_gangs_scheduled", **pq) == 0
    assert value(values, "armada_scheduler_loop_number", pool="default") == 3
    outcome = series(values, "armada_scheduler_pool_scheduling_outcome")
    assert outcome == {
        (("outcome", "success"), ("pool", "default"), ("termination_reason", "completed")): 2
    }


@pytest.mark.django_db(transaction=True)
def test_duration_gauges_are_reckoned_again_once_the_refresh_interval_has_passed(
    settings, client, queue, owner
):
    configure(settings, cpu="1")
    settings.ARMADA = settings.ARMADA.model_copy(
        update={"metrics": settings.ARMADA.metrics.model_copy(update={"refresh_interval": 60.0})}
    )
    q = DEMO_QUEUED
    start = timezone.now()
    submit(owner, spec("2"))  # never fits: stays queued
    scheduler_cycle(now=start)
    values, _ = scrape(client)
    assert value(values, "armada_job_queued_seconds_count", **q) == 1
    submit(owner, spec("2"), spec("2"))
    # Within the interval: the round's gauges are the new cycle's, the durations the first's.
    scheduler_cycle(now=start + timedelta(seconds=59))
    values, _ = scrape(client)
    assert value(values, "armada_job_queued_seconds_count", **q) == 1
    assert value(values, "armada_scheduler_considered_jobs", pool="default", queue="demo") == 3
    scheduler_cycle(now=start + timedelta(seconds=60))
    values, _ = scrape(client)
    assert value(values, "armada_job_queued_seconds_count", **q) == 3
    # With an interval of 0, every cycle reckons them.
    settings.ARMADA = settings.ARMADA.model_copy(
        update={"metrics": settings.ARMADA.metrics.model_copy(update={"refresh_interval": 0.0})}
    )
    submit(owner, spec("2"))
    scheduler_cycle(now=start + timedelta(seconds=61))
    values, _ = scrape(client)
    assert value(values, "armada_job_queued_seconds_count", **q) == 4


@pytest.mark.django_db(transaction=True)
def test_a_preempting_cycle_stores_its_evictions_and_the_next_cycle_replaces_them(
    settings, client, queue, owner
):
    agent = configure(settings, cpu="2")
    low = {**spec("2"), "podSpec": {**spec("2")["podSpec"], "priorityClassName": "batch"}}
    submit(owner, low)
    step(agent)
    submit(owner, spec("2"))  # armada-default: more urgent, evicts the batch job
    scheduler_cycle(now=timezone.now())
    values, _ = scrape(client)
    pq = {"pool": "default", "queue": "demo"}
    assert value(values, "armada_scheduler_evicted_jobs", **pq) == 1
    assert value(values, "armada_scheduler_evicted_resources", resource="cpu", **pq) == 2.0
    nodes = series(values, "armada_scheduler_node_preemptibility")
    assert list(nodes.values()) == [1.0]
    [labels] = nodes
    assert dict(labels)["node"] == "n1" and dict(labels)["cluster"] == "test"
    scheduler_cycle(now=timezone.now())
    values, _ = scrape(client)
    assert series(values, "armada_scheduler_evicted_jobs") == {}


@pytest.mark.django_db(transaction=True)
def test_pods_usage_is_the_latest_utilisation_of_active_runs(settings, client, queue, owner):
    agent = configure(settings, cpu="4")
    submit(owner, spec("1"), spec("1"))
    for _ in range(3):
        step(agent)
    runs = list(Run.objects.filter(state="running").order_by("id"))
    assert len(runs) == 2
    at = timezone.now()
    usage = [
        RunUtilisation(run_id=runs[0].id, at=at, avg_usage={"cpu": 250, "memory": 2**20 * 1000}),
        RunUtilisation(run_id=runs[1].id, at=at, avg_usage={"cpu": 500}),
        # A later period of the first run: it replaces the first's usage.
        RunUtilisation(run_id=runs[0].id, at=at + timedelta(seconds=30), avg_usage={"cpu": 750}),
    ]
    runs_record_utilisation(executor_id="test", reports=usage, period_seconds=10)
    values, _ = scrape(client)
    used = {
        "cluster": "test",
        "pool": "default",
        "queueName": "demo",
        "queue": "demo",
        "nodeType": "",
        "reservation": "",
        "physical_pool": "default",
        "scalable_unit": "",
    }
    assert value(values, "armada_queue_resource_used", resourceType="cpu", **used) == 1.25
    assert ("armada_queue_resource_used", "memory") not in {
        (n, dict(labels).get("resourceType")) for (n, labels) in values
    }
    pod = {"queue": "demo", "phase": "Running", "nodeType": ""}
    assert (
        value(values, "armada_executor_job_pod_resource_usage", resourceType="cpu", **pod) == 1.25
    )
    Run.objects.filter(id=runs[1].id).update(state="succeeded")
    values, _ = scrape(client)
    assert value(values, "armada_queue_resource_used", resourceType="cpu", **used) == 0.75
