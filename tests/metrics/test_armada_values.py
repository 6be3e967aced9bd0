"""The values of the important Armada metrics after a known scenario, and the pure helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from armada.metrics.families import weighted_median
from armada.metrics.scheduler_metrics import adjusted_shares
from armada.models import Job, Run, SchedulingRound
from armada.services.job_state_metrics import prior_state, whole_resource_seconds
from tests.metrics.scenario import run_scenario
from tests.metrics.scrape import scrape, series, value

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_adjusted_shares_give_what_small_queues_leave_to_the_others_by_weight():
    weights = {"a": 1.0, "b": 1.0, "c": 2.0}
    # a asks for 10%: the 90% left is shared 1:2 between b and c.
    assert adjusted_shares(weights, {"a": 0.1, "b": 1.0, "c": 1.0}) == pytest.approx(
        {"a": 0.1, "b": 0.3, "c": 0.6}
    )
    # Everyone asks for more than their share: the plain weighted shares.
    assert adjusted_shares({"a": 1.0, "b": 1.0}, {"a": 1, "b": 1}) == {"a": 0.5, "b": 0.5}


def test_weighted_median_and_prior_state():
    assert weighted_median({1.0: 3, 4.0: 1}) == 1.0
    assert weighted_median({1.0: 1, 4.0: 3}) == 4.0
    run = SimpleNamespace(
        leased_at=T0 + timedelta(seconds=10), pending_at=T0 + timedelta(seconds=15), running_at=None
    )
    assert prior_state(at=T0 + timedelta(seconds=20), submitted=T0, run=run) == ("pending", 5.0)
    assert prior_state(at=T0 + timedelta(seconds=5), submitted=T0, run=None) == ("queued", 5.0)
    # Memory in bytes, cpu in millicores: 2 cores for 3 s is 6000 millicore-seconds.
    assert whole_resource_seconds("cpu", 2000, 3.0) == 6000
    assert whole_resource_seconds("memory", 1024 * 1000, 2.0) == 2048


@pytest.mark.django_db(transaction=True)
def test_values_after_the_scenario(settings, client, queue, owner, admin_user):
    run_scenario(settings, owner, admin_user)
    values, types = scrape(client)
    running = {q: Job.objects.filter(queue=q, state="running").count() for q in ("demo", "other")}
    queued = {q: Job.objects.filter(queue=q, state="queued").count() for q in ("demo", "other")}
    assert queued["other"] == 1
    for q in ("demo", "other"):
        assert (
            value(values, "armada_queue_size", queueName=q, queue=q, state="validated")
            == (queued[q])
        )
    assert value(values, "armada_queue_priority", queueName="other", queue="other") == 2.0
    assert value(values, "armada_queue_labels", queueName="demo", queue="demo", team="ml") == 1
    base = {"pool": "default", "priorityClass": "armada-default", "priceBand": "None"}
    queued_cpu = {**base, "queueName": "other", "queue": "other", "resourceType": "cpu"}
    assert (
        value(values, "armada_queue_resource_queued", accounting_role="primary", **queued_cpu) == 3
    )
    assert (
        value(values, "armada_queue_resource_queued_count", accounting_role="primary", **queued_cpu)
        == 1
    )

    # Allocation: every active run of demo requests 1 cpu, on cluster "test".
    active = Run.objects.filter(job__queue="demo", state__in=["leased", "pending", "running"])
    assert active.count() == running["demo"] >= 1
    labels = {
        "cluster": "test",
        "queueName": "demo",
        "queue": "demo",
        "resourceType": "cpu",
        "nodeType": "",
        "reservation": "",
        "physical_pool": "default",
        "scalable_unit": "",
        **base,
    }
    assert value(values, "armada_queue_resource_allocated", **labels) == running["demo"]
    pods = series(values, "armada_queue_leased_pod_count")
    assert (
        sum(pods.values()) == Run.objects.filter(state__in=["leased", "pending", "running"]).count()
    )

    # Shares: demo (weight 1) and other (weight 1/2) are both active.
    fair = {
        q: value(values, "armada_scheduler_fair_share", pool="default", queue=q)
        for q in ("demo", "other")
    }
    assert fair == pytest.approx({"demo": 2 / 3, "other": 1 / 3})
    assert value(values, "armada_scheduler_queue_weight", pool="default", queue="other") == 0.5
    actual = value(values, "armada_scheduler_actual_share", pool="default", queue="demo")
    assert actual == pytest.approx(running["demo"] / 4)
    demand = value(values, "armada_scheduler_demand", pool="default", queue="other")
    assert demand == pytest.approx((running["other"] + 3) / 4)

    # Capacity of the one 4-cpu node, and its count.
    cap = {"cluster": "test", "pool": "default", "nodeType": "", "reservation": ""}
    cap |= {"physical_pool": "default", "capacity_class": "dedicated", "scalable_unit": ""}
    assert value(values, "armada_cluster_capacity", resourceType="cpu", **cap) == 4
    assert value(values, "armada_cluster_capacity", resourceType="nodes", **cap) == 1
    assert value(values, "armada_cluster_available_capacity", resourceType="nodes", **cap) == 1

    # Cycle times: as many observations as cycles, in Armada's buckets, cumulative.
    cycles = SchedulingRound.objects.count()  # one record per cycle that ran
    name = "armada_scheduler_schedule_cycle_times"
    count = value(values, f"{name}_count")
    assert count >= 3 and count == cycles
    assert value(values, f"{name}_bucket", le="+Inf") == count
    assert value(values, f"{name}_bucket", le="10.0") <= value(values, f"{name}_bucket", le="11.0")
    pool_count = value(values, "armada_scheduler_pool_scheduling_cycle_times_count", pool="default")
    assert pool_count == count
    assert value(values, "armada_scheduler_schedule_outcome", outcome="success") == count

    # Job state counters: one success and one failure in demo, one cancel in other.
    by_queue = series(values, "armada_scheduler_job_state_counter_by_queue")

    def ended(q: str, state: str) -> float:
        return sum(
            v
            for labels, v in by_queue.items()
            if ("queue", q) in labels and ("state", state) in labels
        )

    assert ended("demo", "succeeded") == 1
    assert ended("demo", "failed") == 1
    assert ended("other", "cancelled") == 1
    leased = ended("demo", "leased") + ended("other", "leased")
    assert leased == Run.objects.count()
    errors = series(values, "armada_scheduler_job_error_classification_by_queue")
    assert sum(v for labels, v in errors.items() if ("queue", "demo") in labels) == 1
    decisions = series(values, "armada_scheduler_retry_policy_decisions_total")
    assert sum(decisions.values()) == 1
    completed = value(
        values,
        "armada_scheduler_job_run_completed_duration_seconds_count",
        queue="demo",
        pool="default",
    )
    assert completed == 2  # the success and the failure
    assert types["armada_scheduler_job_state_counter_by_queue"] == "counter"
