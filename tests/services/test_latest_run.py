"""The job's copy of its latest run (``services.latest_run``) after every kind of change:
leases, reports, decisions, re-leases, lease expiry, preemption and cancellation."""

from __future__ import annotations

import pytest

from armada.models import Job, Run
from armada.services import latest_run
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import job_preempt, jobs_cancel
from tests.conftest import at
from tests.services.decision_world import configure, drive, runs, submit

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_policy_cache")]

COPIED = latest_run.FIELDS


def copied(job_id: str) -> tuple:
    return tuple(Job.objects.values_list(*COPIED).get(id=job_id))


def test_a_queued_job_has_no_latest_run(settings, with_policy, owner):
    configure(settings)
    job_id = submit(owner)
    assert copied(job_id) == ("", "", "", "", None, None, "")
    assert latest_run.drifted() == []


def test_a_lease_copies_where_the_run_is_and_clears_the_outcome(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"condition": "OOMKilled", "duration": "1s"})
    scheduler_cycle(now=at(1))
    [run] = runs(job_id)
    assert copied(job_id) == (run.id, "test", run.node, run.pool, None, None, "")
    agent.tick(at(1.5))  # the pod starts
    agent.tick(at(3))  # and fails: its exit code is known, it is not decided yet
    assert runs(job_id)[0].state == "failed"
    assert copied(job_id)[4:] == (137, None, "")
    scheduler_cycle(now=at(4))  # decided: retried
    scheduler_cycle(now=at(5))  # leased again (at the latest): a new latest run
    first, second = runs(job_id)
    assert (first.exit_code, first.retryable, first.decision["decision"]) == (137, True, "retry")
    assert copied(job_id) == (second.id, "test", second.node, second.pool, None, None, "")
    assert first.id < second.id
    assert latest_run.drifted() == []


def test_a_job_failed_for_good_keeps_its_last_verdict(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"exitCode": "1"})
    drive(agent, range(1, 5))
    assert Job.objects.get(id=job_id).state == "failed"
    assert copied(job_id)[4:] == (1, False, "fail_rule")
    assert latest_run.drifted() == []


def test_a_lease_expiry_is_copied(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"duration": "1h"})
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    scheduler_cycle(now=at(3 + settings.ARMADA.executor_timeout))  # expires; retried
    assert copied(job_id)[4:] == (None, True, "retry")
    assert latest_run.drifted() == []


def test_preemption_and_cancellation_are_copied(settings, with_policy, owner, admin_user):
    agent = configure(settings)
    agent.tick(at(0))
    preempted = submit(owner, {"duration": "1h"})
    cancelled = submit(owner, {"duration": "1h"})
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    job_preempt(actor=admin_user, job_id=preempted, reason="", now=at(3))
    jobs_cancel(
        actor=admin_user, queue="demo", job_set="set-1", job_ids=[cancelled], reason="", now=at(3)
    )
    drive(agent, range(4, 8))
    assert Job.objects.get(id=preempted).state == "preempted"
    assert copied(preempted)[5] is False  # a preempted run is never retried
    assert Job.objects.get(id=cancelled).state == "cancelled"
    assert latest_run.drifted() == []


def test_an_older_run_never_overwrites_a_later_one():
    job = Job(latest_run_id="01B", latest_node="new", latest_decision="")
    older = Run(id="01A", node="old", executor="x", pool="p", decision={"decision": "retry"})
    latest_run.copy_to_job(older, job)
    assert (job.latest_run_id, job.latest_node, job.latest_decision) == ("01B", "new", "")
    newer = Run(id="01C", node="n2", executor="x", pool="p", exit_code=3, retryable=True)
    latest_run.copy_to_job(newer, job)
    assert (job.latest_run_id, job.latest_node, job.latest_exit_code) == ("01C", "n2", 3)


def test_drifted_names_a_job_whose_copy_is_stale(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"duration": "1h"})
    scheduler_cycle(now=at(1))
    Job.objects.filter(id=job_id).update(latest_node="elsewhere")
    assert latest_run.drifted() == [job_id]
