"""Preemption by hand: the run is stopped on its executor, the job ends preempted, it is
not retried and its retry budget is untouched."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.models import Event, Job, Run
from armada.services.errors import Conflict, PermissionDenied
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import job_preempt, runs_request_preemption
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import api_agent

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"


@pytest.fixture
def agent(settings):
    settings.ARMADA = parse_config(
        {
            "scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": 5}},
            "executors": [
                {
                    "id": "test",
                    "nodes": [{"name": "n", "allocatable": {"cpu": "8", "memory": "32Gi"}}],
                }
            ],
        }
    )
    a = api_agent(settings.ARMADA.executors[0])
    a.tick(at(0))
    return a


def running_job(agent, owner) -> str:
    [job_id] = job_submit(
        actor=owner, data=job_file(jobs=[job(annotations={FAKE + "duration": "1h"})]), now=at(0)
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    assert Job.objects.get(id=job_id).state == "running"
    return job_id


def types_for(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


def test_a_running_job_preempted_by_hand_ends_preempted_and_is_not_retried(
    agent, queue, owner, admin_user
):
    from armada.services.policies import policy_create
    from armada.services.queues import queue_update

    policy = {"name": "all", "retryLimit": 5, "defaultAction": "Retry"}
    policy_create(actor=admin_user, data=policy, now=at(0))
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["all"]}, now=at(0))
    job_id = running_job(agent, owner)
    [run_id] = job_preempt(actor=owner, job_id=job_id, reason="making room for the demo", now=at(3))
    assert types_for(job_id)[-1] == "preempting"
    assert Job.objects.get(id=job_id).state == "running"  # until the pod is gone
    agent.tick(at(4))  # the pod is stopped
    agent.tick(at(5))  # and gone: reported
    scheduler_cycle(now=at(6))
    scheduler_cycle(now=at(7))
    run = Run.objects.get(id=run_id)
    job_row = Job.objects.get(id=job_id)
    assert (run.state, run.reason, run.message, run.retryable) == (
        "preempted",
        "Preempted",
        "making room for the demo",
        False,
    )
    assert (job_row.state, job_row.terminal_reason, job_row.failure_count) == (
        "preempted",
        "Preempted",
        0,
    )
    assert Run.objects.filter(job_id=job_id).count() == 1  # never restarted
    assert types_for(job_id)[-3:] == ["preempting", "preempted", "failed"]
    failed = Event.objects.filter(job_id=job_id, type="failed").get()
    assert (failed.payload["reason"], failed.payload["retryable"]) == ("Preempted", False)
    assert f"armada-{job_id}-0" not in {s.name for s in agent.backend.poll(at(7))}


def test_a_leased_run_without_a_pod_is_preempted_at_once(agent, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    scheduler_cycle(now=at(1))
    runs_request_preemption(job_ids=[job_id], reason="room", now=at(1.5))
    agent.tick(at(2))
    assert Job.objects.get(id=job_id).state == "preempted"
    assert agent.backend.poll(at(2)) == []


def test_preempting_twice_changes_nothing_the_second_time(agent, queue, owner):
    job_id = running_job(agent, owner)
    assert len(runs_request_preemption(job_ids=[job_id], reason="a", now=at(3))) == 1
    assert runs_request_preemption(job_ids=[job_id], reason="b", now=at(3)) == []
    assert types_for(job_id).count("preempting") == 1


def test_preempting_needs_the_preempt_verb_and_a_running_job(agent, queue, owner, member):
    job_id = running_job(agent, owner)
    with pytest.raises(PermissionDenied, match="preempt"):
        job_preempt(actor=member, job_id=job_id, reason="", now=at(3))
    assert Run.objects.get(job_id=job_id).stop_requested_at is None
    job_preempt(actor=owner, job_id=job_id, reason="", now=at(3))
    agent.tick(at(4))
    agent.tick(at(5))
    with pytest.raises(Conflict, match="nothing to preempt"):
        job_preempt(actor=owner, job_id=job_id, reason="", now=at(6))


def test_preempt_through_the_api(agent, queue, owner, api_as):
    job_id = running_job(agent, owner)
    response = api_as(owner).post(
        f"/api/v1/jobs/{job_id}/preempt", {"reason": "maintenance"}, format="json"
    )
    assert response.status_code == 202
    assert len(response.json()["runIds"]) == 1
    assert Run.objects.get(job_id=job_id).stop_reason == "maintenance"
    bad = api_as(owner).post(f"/api/v1/jobs/{job_id}/preempt", {"reason": 5}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "reason"


def test_many_preemptions_with_their_own_reasons_are_one_request(agent, queue, owner):
    from armada.services.stopping import PREEMPT, runs_request_stops

    first, second = running_job(agent, owner), running_job(agent, owner)
    marked = runs_request_stops(
        reasons={first: "for job x", second: "for job y"}, kind=PREEMPT, now=at(3)
    )
    assert len(marked) == 2
    assert {r.job_id: r.stop_reason for r in Run.objects.all()} == {
        first: "for job x",
        second: "for job y",
    }
    for job_id, reason in ((first, "for job x"), (second, "for job y")):
        event = Event.objects.get(job_id=job_id, type="preempting")
        assert event.payload["reason"] == reason
    # Asking again changes nothing: the runs are already being stopped.
    assert runs_request_stops(reasons={first: "again"}, kind=PREEMPT, now=at(4)) == []
