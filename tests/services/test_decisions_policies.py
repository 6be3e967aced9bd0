"""Retry decisions and the policies behind them: a policy update takes effect after the cache
refreshes, an invalid stored policy is skipped, the default policy, the cache failing open,
and the decision counters (on /metrics, reset on the configured interval). Same world as
test_decisions (tests/services/decision_world.py)."""

from __future__ import annotations

import pytest

from armada.models import MetricCounter, RetryCostBucket, RetryPolicy
from armada.services.policies import policy_create, policy_update
from armada.services.policy_cache import policy_cache
from armada.services.scheduler import scheduler_cycle
from tests.conftest import at
from tests.services.decision_world import (
    POLICY,
    configure,
    decisions,
    drive,
    runs,
    submit,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_policy_cache")]


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
    assert MetricCounter.objects.filter(name="armada_scheduler_retry_cost_runs_total").exists()
    scheduler_cycle(now=at(interval + 2))  # the cycle resets them
    assert decisions() == {}
    assert (
        counters_reset_if_due(names=names, now=at(interval + 3), interval_seconds=interval) is False
    )
    assert MetricCounter.objects.filter(name="armada_executor_job_failure_category_total").exists()
    # What retries cost is zeroed with them (the rollups Lookout reads are not).
    assert not MetricCounter.objects.filter(
        name__startswith="armada_scheduler_retry_cost_"
    ).exists()
    assert RetryCostBucket.objects.filter(decision="fail_rule").exists()
