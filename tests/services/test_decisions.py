"""Retry decisions end to end inside one process: executor ticks (fake backend) report
failures, scheduler cycles decide them with the retry engine, apply mutations and lease the
retries. Time is passed in; every step commits through the real services."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.executor.agent import ExecutorAgent
from armada.executor.backends.fake import FakeBackend
from armada.models import Event, Job, MetricCounter, RetryPolicy, Run
from armada.services.policies import policy_create, policy_update
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, container, job_file

pytestmark = pytest.mark.django_db

FAKE = "fake.armadaproject.io/"
CATEGORIES = {
    "enabled": True,
    "categories": [
        {"name": "oom", "action": "Delete", "rules": [{"onConditions": ["OOMKilled"]}]},
        {
            "name": "internal",
            "action": "Delete",
            "rules": [{"onPodError": {"pattern": "was lost"}, "subcategory": "node-failure"}],
        },
        {
            "name": "flaky",
            "action": "Retain",
            "rules": [{"onExitCodes": {"operator": "In", "values": [3]}}],
        },
        {
            "name": "user-error",
            "action": "Retain",
            "rules": [{"onExitCodes": {"operator": "In", "values": [1]}}],
        },
    ],
}
POLICY = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "training",
    "retryLimit": 2,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {"action": "Retry", "onCategory": "internal", "onSubcategory": "lease-expired"},
        {
            "action": "Retry",
            "onCategory": "internal",
            "onSubcategory": "node-failure",
            "mutate": {"affinity": {"avoidSameNode": True}},
        },
        {
            "action": "Retry",
            "onCategory": "oom",
            "mutate": {"resources": {"memory": {"factor": 1.5}}},
        },
        {"action": "Retry", "onCategory": "flaky"},
    ],
}


@pytest.fixture(autouse=True)
def fresh_cache():
    policy_cache.__init__()
    yield
    policy_cache.__init__()


def configure(settings, *, enabled=True, cap=5, nodes=2, default_policy=""):
    config = {
        "scheduling": {
            "retryPolicy": {
                "enabled": enabled,
                "globalMaxRetries": cap,
                "defaultPolicyName": default_policy,
            }
        },
        "executors": [
            {
                "id": "test",
                "trackedNodeLabels": ["kubernetes.io/hostname"],
                "nodes": [
                    {"name": "n", "count": nodes, "allocatable": {"cpu": "8", "memory": "32Gi"}}
                ],
                "errorCategories": CATEGORIES,
            }
        ],
    }
    if enabled is False:
        config["scheduling"]["retryPolicy"] = {"enabled": False}
    settings.ARMADA = parse_config(config)
    return ExecutorAgent(settings.ARMADA.executors[0], FakeBackend())


@pytest.fixture
def with_policy(queue, admin_user):
    policy_create(actor=admin_user, data=POLICY, now=at(0))
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["training"]}, now=at(0))


def submit(owner, annotations=None, memory="1Gi", extra_annotations=None) -> str:
    ann = {FAKE + k: v for k, v in (annotations or {}).items()} | (extra_annotations or {})
    spec = {"annotations": ann, "podSpec": {"containers": [container("1", memory)]}}
    return job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(0))[0]


def drive(agent, seconds: range) -> None:
    """A scheduler cycle and an executor tick each second."""
    for t in seconds:
        scheduler_cycle(now=at(t))
        agent.tick(at(t + 0.5))


def runs(job_id: str) -> list[Run]:
    return list(Run.objects.filter(job_id=job_id).order_by("leased_at", "id"))


def failed_events(job_id: str) -> list[dict]:
    return [e.payload for e in Event.objects.filter(job_id=job_id, type="failed").order_by("id")]


def decisions() -> dict[tuple, int]:
    return {
        (c.labels["queue"], c.labels["policy"], c.labels["decision"]): c.value
        for c in MetricCounter.objects.filter(name="armada_scheduler_retry_policy_decisions_total")
    }


def test_flag_off_is_exactly_the_legacy_behaviour(settings, queue, owner, admin_user):
    policy_create(actor=admin_user, data=POLICY, now=at(0))
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["training"]}, now=at(0))
    agent = configure(settings, enabled=False)
    agent.tick(at(0))
    job_id = submit(owner, {"condition": "OOMKilled"})
    drive(agent, range(1, 8))
    job = Job.objects.get(id=job_id)
    assert (job.state, job.terminal_reason, job.failure_category) == ("failed", "OOMKilled", "oom")
    assert len(runs(job_id)) == 1
    assert [e["retryable"] for e in failed_events(job_id)] == [False]
    assert runs(job_id)[0].decision["decision"] == "not_retried"
    assert decisions() == {}


def test_oom_is_retried_with_memory_times_one_and_a_half_until_the_policy_limit(
    settings, with_policy, owner
):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"condition": "OOMKilled"}, memory="1Gi")
    drive(agent, range(1, 12))
    attempts = runs(job_id)
    assert len(attempts) == 3
    gib = 2**30 * 1000
    assert [r.requests["memory"] for r in attempts] == [gib, int(1.5 * gib), int(2.25 * gib)]
    job = Job.objects.get(id=job_id)
    limits = job.pod_spec["containers"][0]["resources"]
    assert limits["requests"]["memory"] == limits["limits"]["memory"]
    assert [e["retryable"] for e in failed_events(job_id)] == [True, True, False]
    assert [r.decision["decision"] for r in attempts] == ["retry", "retry", "fail_policy_limit"]
    assert attempts[0].decision["mutation"]["memory"] == {
        "kind": "factor",
        "before": gib,
        "after": int(1.5 * gib),
    }
    assert (job.state, job.failure_category) == ("failed", "oom")
    # Three runs, three decided failures, two of them retried.
    assert (job.run_count, job.failure_count, job.retry_count) == (3, 3, 2)
    assert job.terminal_reason == "Retry policy: policy retry limit exceeded (2/2)"
    assert decisions() == {
        ("demo", "training", "retry"): 2,
        ("demo", "training", "fail_policy_limit"): 1,
    }


def test_node_failure_is_retried_on_another_node(settings, with_policy, owner):
    agent = configure(settings, nodes=2)
    agent.tick(at(0))
    job_id = submit(owner, {"nodeLost": "true"})
    drive(agent, range(1, 5))
    first, second = runs(job_id)[:2]
    assert first.failure_subcategory == "node-failure"
    assert second.node != first.node
    assert first.decision["mutation"]["avoidNodes"] == [first.node]
    assert Job.objects.get(id=job_id).mutations["avoidNodes"] == [first.node]


def test_a_retry_that_no_node_could_take_fails_as_retry_unschedulable(settings, with_policy, owner):
    agent = configure(settings, nodes=1)
    agent.tick(at(0))
    job_id = submit(owner, {"nodeLost": "true"})
    drive(agent, range(1, 5))
    assert len(runs(job_id)) == 1
    job = Job.objects.get(id=job_id)
    assert job.state == "failed"
    assert runs(job_id)[0].decision["decision"] == "retry_unschedulable"
    assert failed_events(job_id)[-1]["retryable"] is False
    assert decisions() == {("demo", "training", "retry_unschedulable"): 1}


def test_a_user_error_fails_at_once_by_rule(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"exitCode": "1"})
    drive(agent, range(1, 5))
    assert len(runs(job_id)) == 1
    assert runs(job_id)[0].decision["decision"] == "fail_rule"
    job = Job.objects.get(id=job_id)
    assert job.failure_category == "user-error"
    assert (job.failure_count, job.retry_count) == (1, 0)  # failed at once: never retried


def test_the_kill_switch_decides_but_never_retries(settings, with_policy, owner):
    agent = configure(settings, cap=0)
    agent.tick(at(0))
    job_id = submit(owner, {"condition": "OOMKilled"})
    drive(agent, range(1, 5))
    [run] = runs(job_id)
    assert run.decision["decision"] == "fail_global_limit"
    assert failed_events(job_id)[-1]["failureCategory"] == "oom"
    assert decisions() == {("demo", "training", "fail_global_limit"): 1}


def test_a_lease_expiry_is_retried_unchanged(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"duration": "1h"})
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    timeout = settings.ARMADA.executor_timeout
    scheduler_cycle(now=at(3 + timeout))  # expires and decides: retry
    first = runs(job_id)[0]
    assert (first.state, first.failure_subcategory, first.decision["decision"]) == (
        "lease_expired",
        "lease-expired",
        "retry",
    )
    assert first.decision["mutation"] == {}
    job = Job.objects.get(id=job_id)
    assert (job.state, job.failure_count, job.mutations) == ("queued", 1, {})
    assert job.retry_count == 1
    assert [e["retryable"] for e in failed_events(job_id)] == [True]


def test_a_gang_is_never_retried_and_is_counted(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    gang = {"armadaproject.io/gangId": "g1", "armadaproject.io/gangCardinality": "2"}
    members = [submit(owner, {"condition": "OOMKilled"}, extra_annotations=gang) for _ in range(2)]
    drive(agent, range(1, 5))
    for job_id in members:
        assert len(runs(job_id)) == 1
        assert runs(job_id)[0].decision["decision"] == "gang_skipped"
    counter = MetricCounter.objects.get(name="armada_scheduler_retry_policy_gang_skipped_total")
    assert (counter.labels, counter.value) == ({"policy": "training"}, 2)


def test_a_fail_fast_job_is_never_retried(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(
        owner, {"condition": "OOMKilled"}, extra_annotations={"armadaproject.io/failFast": "true"}
    )
    drive(agent, range(1, 5))
    assert len(runs(job_id)) == 1
    assert Job.objects.get(id=job_id).state == "failed"
    assert decisions() == {}


def test_a_retried_category_left_as_retain_collides_until_max_runs_exceeded(
    settings, with_policy, owner
):
    """The spec's warning, reproduced: the failed pod is kept (Retain), the policy retries,
    the retry's pod name is taken, its lease is returned (no budget used), again and again,
    and after scheduling.maxRetries returns the job fails with MaxRunsExceeded, a reason that
    says nothing of the collision."""
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"exitCode": "3", "deletionDuration": "1h"})
    drive(agent, range(1, 12))
    states = [r.state for r in runs(job_id)]
    assert states == ["failed"] + ["lease_returned"] * 4
    job = Job.objects.get(id=job_id)
    assert (job.state, job.terminal_reason) == ("failed", "MaxRunsExceeded")
    assert (job.failure_category, job.failure_subcategory) == ("internal", "max-runs-exceeded")
    assert "exist" not in job.terminal_message and "collision" not in job.terminal_message
    assert job.failure_count == 1  # lease returns used none of the retry budget
    assert [e["retryable"] for e in failed_events(job_id)] == [True, False]


def test_a_policy_update_takes_effect_after_the_cache_refreshes(
    settings, with_policy, owner, admin_user
):
    agent = configure(settings)
    agent.tick(at(0))
    policy_cache.policies(now=at(0))  # loaded: oom is retried
    policy_update(
        actor=admin_user,
        name="training",
        data={**POLICY, "rules": [{"action": "Fail", "onCategory": "oom"}]},
        now=at(0),
    )
    job_id = submit(owner, {"condition": "OOMKilled"})
    drive(agent, range(1, 4))  # within queueRefreshPeriod (10s): the old version decides
    assert runs(job_id)[0].decision["decision"] == "retry"
    assert runs(job_id)[0].decision["policyVersion"] == 1
    later = submit(owner, {"condition": "OOMKilled"})
    drive(agent, range(11, 15))
    assert runs(later)[0].decision["decision"] == "fail_rule"
    assert runs(later)[0].decision["policyVersion"] == 2


def test_an_invalid_stored_policy_is_skipped_and_its_queues_are_legacy(
    settings, with_policy, owner
):
    RetryPolicy.objects.filter(name="training").update(
        rules=[{"action": "Sometimes", "onCategory": "oom"}]
    )
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"condition": "OOMKilled"})
    drive(agent, range(1, 5))
    assert len(runs(job_id)) == 1
    assert runs(job_id)[0].decision["decision"] == "not_retried"


def test_the_default_policy_applies_to_queues_without_one(settings, queue, owner, admin_user):
    policy_create(actor=admin_user, data=POLICY, now=at(0))
    agent = configure(settings, default_policy="training")
    agent.tick(at(0))
    job_id = submit(owner, {"exitCode": "1"})
    drive(agent, range(1, 4))
    assert runs(job_id)[0].decision["policy"] == "training"


def test_decisions_are_on_metrics(settings, with_policy, owner, client):
    agent = configure(settings)
    agent.tick(at(0))
    submit(owner, {"exitCode": "1"})
    drive(agent, range(1, 4))
    text = client.get("/metrics").content.decode()
    assert (
        'armada_scheduler_retry_policy_decisions_total{decision="fail_rule",policy="training",pool="default",queue="demo"} 1.0'
        in text
    )


def test_the_policy_cache_fails_open_on_a_refresh_error(
    settings, with_policy, owner, monkeypatch, caplog
):
    from django.db import DatabaseError

    agent = configure(settings)
    agent.tick(at(0))
    assert set(policy_cache.policies(now=at(0))) == {"training"}

    def broken(*args, **kwargs):
        raise DatabaseError("the database went away")

    monkeypatch.setattr(RetryPolicy.objects, "all", broken)
    job_id = submit(owner, {"condition": "OOMKilled"})
    drive(agent, range(20, 24))  # past queueRefreshPeriod: the refresh fails
    assert runs(job_id)[0].decision["decision"] == "retry"  # the last good policies decided
    assert policy_cache.refresh_failures >= 1
    assert "still serving the 1 policies" in caplog.text


def test_decision_counters_reset_on_the_configured_interval(settings, with_policy, owner):
    from armada.services.counters import counters_reset_if_due

    agent = configure(settings)
    agent.tick(at(0))
    submit(owner, {"exitCode": "1"})
    drive(agent, range(1, 4))
    assert decisions() == {("demo", "training", "fail_rule"): 1}
    # The first cycle (at 1s) started the clock with metrics.jobStateMetricsResetInterval (12h).
    interval = settings.ARMADA.metrics.job_state_metrics_reset_interval
    assert interval == 12 * 3600
    names = ["armada_scheduler_retry_policy_decisions_total"]
    assert counters_reset_if_due(names=names, now=at(interval), interval_seconds=interval) is False
    assert decisions() == {("demo", "training", "fail_rule"): 1}
    scheduler_cycle(now=at(interval + 2))  # the cycle resets them
    assert decisions() == {}
    assert (
        counters_reset_if_due(names=names, now=at(interval + 3), interval_seconds=interval) is False
    )
    assert MetricCounter.objects.filter(name="armada_executor_job_failure_category_total").exists()


def test_a_memory_bump_that_no_node_can_hold_is_retry_unschedulable(settings, with_policy, owner):
    agent = configure(settings, nodes=2)  # nodes of 32Gi
    agent.tick(at(0))
    job_id = submit(owner, {"condition": "OOMKilled"}, memory="24Gi")  # x1.5 = 36Gi
    drive(agent, range(1, 6))
    [run] = runs(job_id)
    assert run.decision["decision"] == "retry_unschedulable"
    assert run.decision["mutation"]["memory"]["after"] == 36 * 2**30 * 1000
    job = Job.objects.get(id=job_id)
    assert job.state == "failed"
    assert "fits no node" in job.terminal_reason


def test_avoid_same_node_without_the_node_id_label_tracked_warns_once_and_avoids_nothing(
    settings, with_policy, owner, caplog
):
    from armada.services import mutations

    mutations._warned_untracked.clear()
    agent = configure(settings, nodes=1)
    untracked = settings.ARMADA.executors[0].model_copy(update={"tracked_node_labels": []})
    settings.ARMADA = settings.ARMADA.model_copy(update={"executors": [untracked]})
    agent = ExecutorAgent(untracked, FakeBackend())
    agent.tick(at(0))
    first = submit(owner, {"nodeLost": "true"})
    second = submit(owner, {"nodeLost": "true"})
    drive(agent, range(1, 4))
    for job_id in (first, second):
        decision = runs(job_id)[0].decision
        assert decision["decision"] == "retry"  # not unschedulable: nothing could be avoided
        assert decision["mutation"]["avoidNodes"] == []
    assert caplog.text.count("does not track the node id label") == 1


def test_a_failure_of_a_job_cancelled_meanwhile_changes_nothing(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"condition": "OOMKilled", "duration": "1s"})
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    agent.tick(at(5))  # failed: awaiting the scheduler's decision
    Job.objects.filter(id=job_id).update(state="cancelled")  # cancelled in between
    scheduler_cycle(now=at(6))
    assert Job.objects.get(id=job_id).state == "cancelled"
    assert runs(job_id)[0].decision["decision"] == "not_retried"
    assert failed_events(job_id) == []
