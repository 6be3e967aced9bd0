"""Who preempted whom: when the scheduler preempts a job to make room for another, the
``preempting`` and ``preempted`` events name that job and its new run (Armada's
``preemptingJobId`` and ``preemptiveRunId``); a preemption by hand names none."""

from __future__ import annotations

import pytest

from armada.models import Event, Job, Run
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import job_preempt
from armada.services.submit import job_submit
from armada.wire.event_messages import event_messages
from tests.conftest import at, job_file
from tests.services.test_preemption_and_gangs import setup, spec, states

pytestmark = pytest.mark.django_db


def payload(job_id: str, type_: str) -> dict:
    return Event.objects.get(job_id=job_id, type=type_).payload


def preempted_message(job_id: str):
    [message] = event_messages([Event.objects.get(job_id=job_id, type="preempted")])
    return message.message.preempted


def test_an_urgency_preemption_names_the_urgent_job_and_its_run(settings, queue, owner):
    agent = setup(settings, nodes=1, cpu="4")
    batch = job_submit(
        actor=owner, data=job_file(jobs=[spec("2", "batch"), spec("2", "batch")]), now=at(0)
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    [urgent] = job_submit(
        actor=owner, data=job_file(job_set="urgent", jobs=[spec("2", "urgent")]), now=at(3)
    )
    assert scheduler_cycle(now=at(4)).preempted == 1
    agent.tick(at(5))
    agent.tick(at(6))
    victim = batch[states(batch).index("preempted")]
    urgent_run = Run.objects.get(job_id=urgent).id
    expected = {"preemptingJobId": urgent, "preemptiveRunId": urgent_run}
    for type_ in ("preempting", "preempted"):
        got = payload(victim, type_)
        assert {k: got.get(k) for k in expected} == expected, type_
    message = preempted_message(victim)
    assert (message.preempting_job_id, message.preemptive_run_id) == (urgent, urgent_run)
    assert message.run_id == Run.objects.get(job_id=victim).id
    assert message.cluster_id == "test" and "higher urgency" in message.reason


def test_a_fair_share_preemption_names_the_job_of_the_waiting_queue(
    settings, queue, owner, admin_user
):
    agent = setup(settings, nodes=1, cpu="8")
    queue_create(actor=admin_user, data={"name": "other", "owners": [owner.username]}, now=at(0))
    greedy = job_submit(actor=owner, data=job_file(jobs=[spec("1", "batch")] * 8), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    waiting = job_submit(
        actor=owner, data=job_file(queue="other", jobs=[spec("1", "batch")] * 8), now=at(3)
    )
    assert scheduler_cycle(now=at(4)).preempted >= 1
    agent.tick(at(5))
    agent.tick(at(6))
    victims = [j for j in greedy if Job.objects.get(id=j).state == "preempted"]
    assert victims
    runs = dict(Run.objects.filter(job_id__in=waiting).values_list("job_id", "id"))
    for victim in victims:
        message = preempted_message(victim)
        assert message.preempting_job_id in waiting
        assert message.preemptive_run_id == runs[message.preempting_job_id]
        assert f"room for job {message.preempting_job_id}" in message.reason


def test_a_preemption_by_hand_names_no_preempting_job(settings, queue, owner):
    agent = setup(settings, nodes=1, cpu="4")
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec("2", "batch")]), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    job_preempt(actor=owner, job_id=job_id, reason="by hand", now=at(3))
    agent.tick(at(4))
    agent.tick(at(5))
    assert "preemptingJobId" not in payload(job_id, "preempted")
    message = preempted_message(job_id)
    assert (message.preempting_job_id, message.preemptive_run_id) == ("", "")
    assert (message.requestor, message.reason) == (owner.username, "by hand")
