"""Event payloads in Armada's spelling (``clusterId``, ``nodeName``, ``failureCategory``,
``failureSubcategory``, ``newPriority``, ``requestor``), and events stored before the rename
read with the new names."""

from __future__ import annotations

import pytest

from armada.core.states import EventType
from armada.models import Event, Job
from armada.services.events import current_payload, event_as_dict, events_for_job_set
from armada.services.reprioritize import jobs_reprioritize
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import job_preempt, jobs_cancel, runs_request_preemption
from armada.services.submit import job_submit
from tests.conftest import T0, at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"
OLD_NAMES = {"cluster", "node", "failure_category", "failure_subcategory"}


@pytest.fixture
def agent(settings):
    return fake_agent(settings, cpu="4", memory="16Gi")


def payloads(job_id: str, type_: str) -> list[dict]:
    return [e.payload for e in Event.objects.filter(job_id=job_id, type=type_).order_by("id")]


def submit_running(agent, owner, **annotations: str) -> str:
    [job_id] = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={FAKE + k: v for k, v in annotations.items()})]),
        now=at(0),
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    return job_id


def test_lifecycle_events_are_written_with_armadas_names(agent, queue, owner):
    job_id = submit_running(agent, owner, duration="1s")
    for t in (3, 4, 5):
        agent.tick(at(t))
    [leased] = payloads(job_id, "leased")
    assert leased == {"clusterId": "test", "nodeName": "n", "pool": "default"}
    [running] = payloads(job_id, "running")
    assert running["clusterId"] == "test" and running["nodeName"] == "n"
    assert running["podName"] == f"armada-{job_id}-0" and running["podNamespace"] == "default"
    assert running["pool"] == "default"
    [succeeded] = payloads(job_id, "succeeded")
    assert succeeded["exitCodes"] == {"main": 0}
    every = Event.objects.filter(job_id=job_id).values_list("payload", flat=True)
    assert not any(OLD_NAMES & set(p) for p in every)


def test_a_failed_event_carries_the_category_in_armadas_names(agent, queue, owner):
    job_id = submit_running(agent, owner, duration="1s", exitCode="3")
    for t in (3, 4, 5):
        agent.tick(at(t))
    scheduler_cycle(now=at(6))
    [failed] = payloads(job_id, "failed")
    assert {"failureCategory", "failureSubcategory", "retryable"} <= set(failed)
    assert failed["clusterId"] == "test" and failed["nodeName"] == "n"
    assert failed["exitCodes"] == {"main": 3} and failed["retryable"] is False
    assert not OLD_NAMES & set(failed)


def test_cancel_events_name_who_asked_queued_and_running(agent, queue, owner):
    running = submit_running(agent, owner, duration="1h")
    [waiting] = job_submit(actor=owner, data=job_file(), now=at(3))
    jobs_cancel(actor=owner, queue="demo", job_set="set-1", job_ids=None, reason="", now=at(4))
    for job_id in (waiting, running):
        [cancelling] = payloads(job_id, "cancelling")
        assert cancelling == {"reason": "cancelled by olive", "requestor": "olive"}
    assert payloads(waiting, "cancelled") == [
        {"reason": "cancelled by olive", "requestor": "olive"}
    ]
    agent.tick(at(5))
    agent.tick(at(6))  # the pod is gone: the executor reports the run cancelled
    [cancelled] = payloads(running, "cancelled")
    assert cancelled["requestor"] == "olive"


def test_preemption_by_hand_names_who_asked_and_the_schedulers_names_nobody(agent, queue, owner):
    by_hand = submit_running(agent, owner, duration="1h")
    job_preempt(actor=owner, job_id=by_hand, reason="room", now=at(3))
    agent.tick(at(4))
    agent.tick(at(5))
    assert payloads(by_hand, "preempting")[0]["requestor"] == "olive"
    [preempted] = payloads(by_hand, "preempted")
    assert (preempted["requestor"], preempted["clusterId"], preempted["nodeName"]) == (
        "olive",
        "test",
        "n",
    )

    [by_scheduler] = job_submit(
        actor=owner, data=job_file(jobs=[job(annotations={FAKE + "duration": "1h"})]), now=at(6)
    )
    scheduler_cycle(now=at(7))
    agent.tick(at(8))
    runs_request_preemption(job_ids=[by_scheduler], reason="fair share", now=at(9))
    agent.tick(at(10))
    agent.tick(at(11))
    assert payloads(by_scheduler, "preempting")[0]["requestor"] == ""
    assert payloads(by_scheduler, "preempted")[0]["requestor"] == ""


def test_reprioritize_events_carry_the_new_priority_and_who_asked(queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    jobs_reprioritize(
        actor=owner, queue="demo", job_set="set-1", priority=7, job_ids=None, now=at(1)
    )
    expected = {"newPriority": 7, "requestor": "olive"}
    assert payloads(job_id, "reprioritizing") == [expected]
    assert payloads(job_id, "reprioritized") == [expected]
    assert payloads(job_id, "submitted")[0]["priority"] == 0  # the job's, not renamed


def old_event(type_: EventType, payload: dict) -> Event:
    return Event.objects.create(
        created=T0, queue="demo", job_set="set-1", job_id="01old", type=type_, payload=payload
    )


@pytest.mark.parametrize(
    ("type_", "stored", "shown"),
    [
        (
            EventType.FAILED,
            {
                "cluster": "c",
                "node": "n",
                "failure_category": "oom",
                "failure_subcategory": "memory",
                "retryable": True,
            },
            {
                "clusterId": "c",
                "nodeName": "n",
                "failureCategory": "oom",
                "failureSubcategory": "memory",
                "retryable": True,
            },
        ),
        (EventType.LEASED, {"cluster": "c", "node": "n", "pool": "p"}, None),
        (EventType.REPRIORITIZED, {"priority": 3}, {"newPriority": 3}),
        (EventType.REPRIORITIZING, {"priority": 3}, {"newPriority": 3}),
        (EventType.SUBMITTED, {"priority": 3, "owner": "olive"}, None),
    ],
)
def test_events_stored_with_the_old_names_are_read_with_the_new_ones(queue, type_, stored, shown):
    if shown is None:
        shown = {"cluster": "clusterId", "node": "nodeName"}
        shown = {shown.get(k, k): v for k, v in stored.items()}
    event = old_event(type_, stored)
    as_dict = event_as_dict(events_for_job_set(queue="demo", job_set="set-1")[0])
    assert {k: as_dict[k] for k in shown} == shown
    assert not OLD_NAMES & set(as_dict)
    assert Event.objects.get(id=event.id).payload == stored  # the row is left as it was


def test_a_payload_in_the_new_names_is_read_without_a_copy():
    payload = {"clusterId": "c", "nodeName": "n", "priority": 1}
    assert current_payload("leased", payload) is payload
    assert current_payload("queued", {}) == {}
    assert current_payload("queued", None) == {}


def test_the_lookout_timeline_shows_old_events_with_the_new_names(queue, owner):
    from lookout.queries import job_events

    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    Event.objects.create(
        created=T0,
        queue="demo",
        job_set="set-1",
        job_id=job_id,
        type=EventType.FAILED,
        payload={"node": "n7", "failure_category": "oom", "retryable": True},
    )
    [*_, failed] = job_events(job=Job.objects.get(id=job_id))
    assert failed["highlights"] == [
        ("nodeName", "n7"),
        ("retryable", "yes"),
        ("failureCategory", "oom"),
    ]
