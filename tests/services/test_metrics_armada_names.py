"""Armada's metric names at ``/metrics``, scraped after real scheduling cycles: the queue size,
the cycle-time histogram, the scheduled and preempted job counters with their type, and the
fair and actual shares per pool and queue; our own names are still served."""

from __future__ import annotations

import pytest
from django.utils import timezone

from armada.core.config import parse_config
from armada.core.snapshot import reason_fair_share_preempted, reason_urgency_preempted
from armada.models import Job
from armada.services.cycle_metrics import (
    CYCLE_BUCKETS,
    FAIRSHARE,
    INF,
    URGENCY,
    bucket_of,
    lease_types,
    preemption_type,
)
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import container, job_file
from tests.executor_api import ApiAgent, api_agent
from tests.metrics.scrape import scrape, value

FAKE = "fake.armadaproject.io/"


# --- pure helpers -----------------------------------------------------------------------------


def test_the_buckets_are_armadas():
    # prometheus.ExponentialBuckets(10.0, 1.1, 110), multiplied step by step as in Go.
    assert len(CYCLE_BUCKETS) == 110
    assert CYCLE_BUCKETS[:3] == (10.0, 11.0, 12.100000000000001)
    assert all(b < c for b, c in zip(CYCLE_BUCKETS, CYCLE_BUCKETS[1:], strict=False))


@pytest.mark.parametrize(
    ("ms", "le"),
    [(0, "10.0"), (10, "10.0"), (11, "11.0"), (12, "12.100000000000001"), (10**9, INF)],
)
def test_an_observation_lands_in_the_smallest_bucket_that_holds_it(ms, le):
    assert bucket_of(ms) == le


def test_the_type_comes_from_the_reasons_the_round_writes():
    urgency = reason_urgency_preempted("job-u", 1000)
    fair = reason_fair_share_preempted("greedy", "job-f", "other")
    assert (preemption_type(urgency), preemption_type(fair)) == (URGENCY, FAIRSHARE)
    assert preemption_type("preempted by an operator") == "unknown"
    assert lease_types({"a": urgency, "b": fair, "c": "by hand"}) == {
        "job-u": URGENCY,
        "job-f": FAIRSHARE,
    }


# --- scraped after real cycles ----------------------------------------------------------------


def setup(settings, cpu: str = "4") -> ApiAgent:
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "priorityClasses": {
                    "batch": {"priority": 100, "preemptible": True},
                    "urgent": {"priority": 1000, "preemptible": False},
                    "armada-default": {"priority": 500, "preemptible": False},
                },
            },
            "executors": [
                {
                    "id": "test",
                    "nodes": [{"name": "n", "allocatable": {"cpu": cpu, "memory": "64Gi"}}],
                }
            ],
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(timezone.now())
    return agent


def spec(cpu: str = "1", pc: str = "armada-default") -> dict:
    return {
        "annotations": {FAKE + "duration": "1h"},
        "podSpec": {"priorityClassName": pc, "containers": [container(cpu, "1Gi")]},
    }


def submit(owner, *specs: dict, queue: str = "demo") -> list[str]:
    return job_submit(actor=owner, data=job_file(queue=queue, jobs=list(specs)), now=timezone.now())


def step(agent: ApiAgent) -> None:
    scheduler_cycle(now=timezone.now())
    agent.tick(timezone.now())


@pytest.mark.django_db
def test_queue_size_has_armadas_labels_and_every_queue(settings, client, queue, owner, admin_user):
    agent = setup(settings, cpu="2")
    queue_create(
        actor=admin_user, data={"name": "idle", "owners": [owner.username]}, now=timezone.now()
    )
    submit(owner, *[spec("1")] * 5)
    step(agent)
    values, types = scrape(client)
    assert types["armada_queue_size"] == "gauge"
    assert (
        value(values, "armada_queue_size", queueName="demo", queue="demo", state="validated") == 3
    )
    assert (
        value(values, "armada_queue_size", queueName="demo", queue="demo", state="unvalidated") == 0
    )
    assert (
        value(values, "armada_queue_size", queueName="idle", queue="idle", state="validated") == 0
    )
    # Our own name for the same counts is still served.
    assert value(values, "armada_queue_jobs", queue="demo", state="queued") == 3
    assert value(values, "armada_queue_jobs", queue="demo", state="running") == 2


@pytest.mark.django_db
def test_cycle_times_and_scheduled_jobs_after_cycles(settings, client, queue, owner):
    agent = setup(settings)
    submit(owner, spec("1"), spec("1"), spec("1", "batch"))
    for _ in range(3):
        step(agent)
    values, types = scrape(client)
    assert types["armada_scheduler_schedule_cycle_times"] == "histogram"
    name = "armada_scheduler_schedule_cycle_times"
    assert value(values, f"{name}_count") == 3
    assert value(values, f"{name}_bucket", le="+Inf") == 3
    cumulative = [value(values, f"{name}_bucket", le=le) for le in ("10.0", "11.0")]
    assert cumulative[0] <= cumulative[1] <= 3
    assert value(values, f"{name}_sum") >= 0
    # A counter, under Armada's exact name (see armada.metrics.families.armada_counter).
    assert types["armada_scheduler_scheduled_jobs"] == "counter"
    assert (
        "\n# TYPE armada_scheduler_scheduled_jobs counter\n"
        in client.get("/metrics").content.decode()
    )
    scheduled = "armada_scheduler_scheduled_jobs"
    common = {"pool": "default", "queue": "demo", "type": "no-preemption"}
    assert value(values, scheduled, priority_class="armada-default", **common) == 2
    assert value(values, scheduled, priority_class="batch", **common) == 1
    text = client.get("/metrics").content.decode()
    # Armada's series names exactly: no _total added to its job counters.
    assert "\narmada_scheduler_scheduled_jobs{" in text
    assert "armada_scheduler_scheduled_jobs_total" not in text


@pytest.mark.django_db
def test_urgency_preemption_is_counted_on_both_sides(settings, client, queue, owner):
    agent = setup(settings, cpu="4")
    submit(owner, spec("2", "batch"), spec("2", "batch"))
    step(agent)
    submit(owner, spec("2", "urgent"))
    report = scheduler_cycle(now=timezone.now())
    assert report.preempted == 1 and report.leased == 1
    values, _ = scrape(client)
    labels = {"pool": "default", "queue": "demo", "type": "urgency"}
    assert value(values, "armada_scheduler_preempted_jobs", priority_class="batch", **labels) == 1
    assert value(values, "armada_scheduler_scheduled_jobs", priority_class="urgent", **labels) == 1


@pytest.mark.django_db
def test_fair_share_preemption_and_the_shares(settings, client, queue, owner, admin_user):
    agent = setup(settings, cpu="8")
    queue_create(
        actor=admin_user, data={"name": "other", "owners": [owner.username]}, now=timezone.now()
    )
    submit(owner, *[spec("1", "batch")] * 8)
    step(agent)
    values, _ = scrape(client)
    # Only demo is active: all the fair share is its, and it uses the whole node.
    assert value(values, "armada_scheduler_fair_share", pool="default", queue="demo") == 1.0
    assert value(values, "armada_scheduler_actual_share", pool="default", queue="demo") == 1.0
    assert ("armada_scheduler_fair_share", (("pool", "default"), ("queue", "other"))) not in values

    submit(owner, *[spec("1", "batch")] * 8, queue="other")
    report = scheduler_cycle(now=timezone.now())
    assert report.preempted >= 1
    values, types = scrape(client)
    assert types["armada_scheduler_fair_share"] == types["armada_scheduler_actual_share"] == "gauge"
    fair = {"pool": "default", "priority_class": "batch", "type": "fairshare"}
    assert (
        value(values, "armada_scheduler_preempted_jobs", queue="demo", **fair) == report.preempted
    )
    assert value(values, "armada_scheduler_scheduled_jobs", queue="other", **fair) >= 1
    # Two active queues of equal weight: half each. Demo still holds 8 cpu (its preempted
    # runs are stopping) and other has what it was leased on top.
    assert value(values, "armada_scheduler_fair_share", pool="default", queue="demo") == 0.5
    assert value(values, "armada_scheduler_fair_share", pool="default", queue="other") == 0.5
    running = Job.objects.filter(queue="demo", state__in=["running", "leased"]).count()
    assert (
        value(values, "armada_scheduler_actual_share", pool="default", queue="demo") == running / 8
    )
    assert value(values, "armada_scheduler_actual_share", pool="default", queue="other") > 0
