"""A Retry rule's ``backoff`` (our extension) through the real services: the decision sets
``Job.retry_not_before`` and the run's trail, the scheduler leaves the job alone until the
cycle's ``now`` reaches it (also after a restart), the job blocks none of its queue's other
jobs, why-pending says what it waits for, and a policy without backoff is unchanged."""

from __future__ import annotations

from datetime import timedelta

import pytest

from armada.core.config import parse_config
from armada.models import Job, SchedulingReason
from armada.services.policies import policy_create
from armada.services.queues import queue_update
from armada.services.records import forget_written, pending_reason
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from armada.services.scheduling_reports import pending_reasons
from armada.services.stopping import jobs_cancel
from tests.conftest import at
from tests.executor_api import ApiAgent, api_agent
from tests.services.decision_world import CATEGORIES, runs, submit

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_policy_cache")]

DELAYED = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "delayed",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        # an OOM kill is "oom" in the test executor's categories (its pod is deleted, so the
        # retry's pod name is free); exit code 3 is "flaky"
        {
            "action": "Retry",
            "onCategory": "oom",
            "backoff": {"initial": "30s", "factor": 2, "max": "10m"},
        },
        {"action": "Retry", "onCategory": "flaky"},  # no backoff
    ],
}


def configure(settings, *, lookback: int = 10000) -> ApiAgent:
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "maxQueueLookback": lookback,
                "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
            },
            "executors": [
                {
                    "id": "test",
                    "trackedNodeLabels": ["kubernetes.io/hostname"],
                    "nodes": [
                        {"name": "n", "count": 1, "allocatable": {"cpu": "8", "memory": "32Gi"}}
                    ],
                    "errorCategories": CATEGORIES,
                }
            ],
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(at(0))
    return agent


@pytest.fixture
def delayed_policy(queue, admin_user):
    policy_create(actor=admin_user, data=DELAYED, now=at(0))
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["delayed"]}, now=at(0))


def fail_once(agent, owner, annotations=None) -> tuple[str, float]:
    """Submit a job that fails, lease it, let it fail and decide it; returns the job id and
    the second (of ``at``) at which the failure was decided."""
    job_id = submit(owner, annotations or {"condition": "OOMKilled"})
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    agent.tick(at(3))
    scheduler_cycle(now=at(4))  # decides the failure
    assert runs(job_id)[0].decided_at == at(4)
    return job_id, 4.0


def test_a_retry_by_a_rule_with_backoff_waits_for_its_delay(settings, delayed_policy, owner):
    agent = configure(settings)
    job_id, t = fail_once(agent, owner)
    job = Job.objects.get(id=job_id)
    assert job.state == "queued"
    assert job.retry_not_before == at(t + 30)
    [first] = runs(job_id)
    assert first.decision["retryDelaySeconds"] == 30.0
    assert first.decision["retryNotBefore"] == at(t + 30).isoformat()
    assert first.decision["reason"] == "retry 1 of 3 (rule 1), after a retry delay of 30s"

    # One cycle a second: nothing is leased before the delay has passed.
    for s in range(int(t) + 1, int(t) + 30):
        report = scheduler_cycle(now=at(s))
        assert report.leased == 0, s
    assert len(runs(job_id)) == 1
    expected = "waiting for its retry delay until " + at(t + 30).isoformat(timespec="seconds")
    assert pending_reason(Job.objects.get(id=job_id))["reason"] == expected

    report = scheduler_cycle(now=at(t + 30))  # the delay ends exactly now: leased
    assert report.leased == 1
    job = Job.objects.get(id=job_id)
    assert (job.state, job.retry_not_before) == ("leased", None)
    assert pending_reason(job) is None
    assert not SchedulingReason.objects.filter(job_id=job_id).exists()


def test_the_second_retry_waits_twice_as_long(settings, delayed_policy, owner):
    agent = configure(settings)
    job_id, t = fail_once(agent, owner)
    scheduler_cycle(now=at(t + 30))
    agent.tick(at(t + 31))
    agent.tick(at(t + 32))
    scheduler_cycle(now=at(t + 33))  # decides the second failure
    job = Job.objects.get(id=job_id)
    assert job.retry_not_before == at(t + 33 + 60)
    second = runs(job_id)[1]
    assert (second.decision["retriesUsed"], second.decision["retryDelaySeconds"]) == (1, 60.0)


def test_the_delay_survives_a_scheduler_restart(settings, delayed_policy, owner):
    agent = configure(settings)
    job_id, t = fail_once(agent, owner)
    # A new scheduler process: no job database, nothing remembered of the reasons written.
    scheduler_state_reset()
    forget_written()
    assert scheduler_cycle(now=at(t + 29)).leased == 0
    assert Job.objects.get(id=job_id).state == "queued"
    scheduler_state_reset()
    assert scheduler_cycle(now=at(t + 30)).leased == 1
    assert Job.objects.get(id=job_id).state == "leased"


def test_a_delayed_job_does_not_block_its_queues_other_jobs(settings, delayed_policy, owner):
    """With a lookback of one job, a delayed job at the head of its queue would take the
    queue's only place in the round if it were in the queue's order."""
    agent = configure(settings, lookback=1)
    job_id, t = fail_once(agent, owner)
    other = submit(owner, {"duration": "1h"})
    assert other > job_id  # the delayed job comes first in the queue's order
    report = scheduler_cycle(now=at(t + 1))
    assert report.leased == 1
    assert Job.objects.get(id=other).state == "leased"
    assert Job.objects.get(id=job_id).state == "queued"


def test_the_lease_itself_refuses_a_job_whose_delay_runs(settings, delayed_policy, owner):
    """The column is the truth: a delay the job database has not seen (written without an
    event, so no sync reads it) still stops the lease."""
    configure(settings)
    job_id = submit(owner, {"duration": "1h"})
    scheduler_state_reset()
    Job.objects.filter(id=job_id).update(retry_not_before=at(100))
    db_report = scheduler_cycle(now=at(1))  # the cold load sees the delay
    assert db_report.leased == 0
    # Forget it again in memory only: the claim's guard refuses the lease.
    from armada.services import scheduler as scheduler_module

    db = scheduler_module._jobdb
    db.release_due(at(1000))
    assert job_id in db.queued
    assert scheduler_cycle(now=at(2)).leased == 0
    assert Job.objects.get(id=job_id).state == "queued"


def test_why_pending_groups_the_jobs_waiting_for_a_delay(settings, delayed_policy, owner):
    agent = configure(settings)
    job_id, t = fail_once(agent, owner)
    scheduler_cycle(now=at(t + 1))
    [entry] = [r for r in pending_reasons(queues=["demo"], verbosity=1)]
    assert entry["reason"].startswith("waiting for its retry delay until ")
    assert entry["jobs"] == 1
    assert entry["jobIds"] == [job_id]
    assert entry["until"] == at(t + 30)


def test_cancelling_a_delayed_job_clears_its_delay(settings, delayed_policy, owner):
    agent = configure(settings)
    job_id, t = fail_once(agent, owner)
    jobs_cancel(
        actor=owner, queue="demo", job_set="set-1", job_ids=[job_id], reason="", now=at(t + 1)
    )
    job = Job.objects.get(id=job_id)
    assert (job.state, job.retry_not_before) == ("cancelled", None)


def test_a_rule_without_backoff_retries_at_once_exactly_as_before(settings, delayed_policy, owner):
    agent = configure(settings)
    job_id, t = fail_once(agent, owner, {"exitCode": "3"})
    # Decided and leased again in the same cycle, as without the extension.
    job = Job.objects.get(id=job_id)
    assert (job.state, job.retry_not_before) == ("leased", None)
    first, second = runs(job_id)
    assert second.leased_at == at(t)
    assert first.decision["retryDelaySeconds"] is None
    assert first.decision["retryNotBefore"] is None
    assert first.decision["reason"] == "retry 1 of 3 (rule 2)"


def test_a_failure_that_is_not_retried_has_no_delay(settings, delayed_policy, owner):
    agent = configure(settings)
    job_id, _ = fail_once(agent, owner, {"exitCode": "1"})  # user-error: defaultAction Fail
    job = Job.objects.get(id=job_id)
    assert (job.state, job.retry_not_before) == ("failed", None)
    assert runs(job_id)[0].decision["retryNotBefore"] is None


def test_decision_time_plus_delay_is_kept_to_the_microsecond(settings, queue, admin_user, owner):
    policy = {**DELAYED, "rules": [{"action": "Retry", "onCategory": "oom",
                                    "backoff": {"initial": "1.5s"}}]}  # fmt: skip
    policy_create(actor=admin_user, data=policy, now=at(0))
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["delayed"]}, now=at(0))
    agent = configure(settings)
    job_id, t = fail_once(agent, owner)
    assert Job.objects.get(id=job_id).retry_not_before == at(t) + timedelta(seconds=1.5)
    assert scheduler_cycle(now=at(t + 1)).leased == 0
    assert scheduler_cycle(now=at(t + 1.5)).leased == 1


# --- the job database itself ------------------------------------------------------------------


def job_db(settings):
    from armada.services.jobdb import JobDb

    return JobDb(classes=settings.ARMADA.scheduling.priority_classes)


def test_the_job_db_sets_delayed_jobs_aside_until_their_time(settings, queue, owner):
    configure(settings)
    waiting, ready = submit(owner), submit(owner)
    Job.objects.filter(id=waiting).update(retry_not_before=at(60))
    db = job_db(settings)
    db.sync(now=at(10))  # a cold load, as a new process makes it
    assert set(db.queued) == {ready}
    assert db.delayed_until() == {waiting: at(60)}
    assert [j.id for j in db.queue_jobs("demo", lookback=10)] == [ready]
    assert db.queued_count() == 2
    db.sync(now=at(59.999))
    assert waiting not in db.queued
    db.sync(now=at(60))  # no event needed: time alone releases it
    assert set(db.queued) == {waiting, ready}
    assert db.delayed_until() == {}
    assert [j.id for j in db.queue_jobs("demo", lookback=10)] == [waiting, ready]


def test_a_job_db_that_was_never_given_a_time_keeps_every_delay(settings, queue, owner):
    configure(settings)
    waiting = submit(owner)
    Job.objects.filter(id=waiting).update(retry_not_before=at(60))
    db = job_db(settings)
    db.sync()
    assert db.delayed_until() == {waiting: at(60)}
    assert db.release_due(at(30)) == 0
    assert db.release_due(at(61)) == 1
    assert waiting in db.queued


def test_a_reloaded_delayed_job_keeps_only_its_new_time(settings, queue, owner):
    configure(settings)
    waiting = submit(owner)
    Job.objects.filter(id=waiting).update(retry_not_before=at(60))
    db = job_db(settings)
    db.sync(now=at(0))
    Job.objects.filter(id=waiting).update(retry_not_before=at(120))
    db.reload([waiting])
    assert db.release_due(at(100)) == 0  # the old time's heap entry is skipped
    assert db.delayed_until() == {waiting: at(120)}
    assert db.release_due(at(120)) == 1
