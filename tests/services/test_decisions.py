"""Retry decisions end to end inside one process: executor ticks (fake backend) report
failures, scheduler cycles decide them with the retry engine, apply mutations and lease the
retries. Time is passed in; every step commits through the real services."""

from __future__ import annotations

import pytest

from armada.models import Job, MetricCounter
from armada.services.policies import policy_create
from armada.services.queues import queue_update
from armada.services.scheduler import scheduler_cycle
from tests.conftest import at
from tests.executor_api import api_agent
from tests.services.decision_world import (
    POLICY,
    configure,
    decisions,
    drive,
    failed_events,
    runs,
    submit,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_policy_cache")]


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
    agent = api_agent(untracked)
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
