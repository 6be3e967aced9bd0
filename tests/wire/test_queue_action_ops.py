"""Armada's calls that act on a whole queue (CordonQueue, UncordonQueue, CancelOnQueue,
PreemptOnQueue), called as the transports call them (the registered function with a ``Call``
and a message): each call's success and its refusals, which change nothing."""

from __future__ import annotations

import pytest
from armada_client.armada import submit_pb2

from armada.models import Job, Queue, Run
from armada.services.errors import (
    NotFound,
    PermissionDenied,
    ValidationFailed,
)
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file
from tests.wire.queue_calls import call, fields_of

pytestmark = pytest.mark.django_db


# --- cordon, uncordon -------------------------------------------------------------------------


def test_cordon_and_uncordon_queue(admin_user, queue):
    call("CordonQueue", admin_user, submit_pb2.QueueCordonRequest(name="demo"))
    assert Queue.objects.get(name="demo").cordoned
    call("UncordonQueue", admin_user, submit_pb2.QueueUncordonRequest(name="demo"))
    assert not Queue.objects.get(name="demo").cordoned


def test_cordon_refusals(admin_user, owner, queue):
    with pytest.raises(NotFound, match="ghost"):
        call("CordonQueue", admin_user, submit_pb2.QueueCordonRequest(name="ghost"))
    with pytest.raises(PermissionDenied, match="cordon_queue"):
        call("CordonQueue", owner, submit_pb2.QueueCordonRequest(name="demo"))
    with pytest.raises(ValidationFailed) as raised:
        call("UncordonQueue", admin_user, submit_pb2.QueueUncordonRequest())
    assert fields_of(raised.value) == {"name"}
    assert not Queue.objects.get(name="demo").cordoned


# --- cancel and preempt on a queue ------------------------------------------------------------


@pytest.fixture
def running_and_queued(settings, queue, owner):
    """Job 0 running on the fake executor's node, job 1 queued (it does not fit beside it)."""
    from armada.services.scheduler import scheduler_cycle

    agent = fake_agent(settings, cpu="1")
    ids = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={"fake.armadaproject.io/duration": "1h"}), job()]),
        now=at(1),
    )
    scheduler_cycle(now=at(2))
    agent.tick(at(3))
    assert Job.objects.get(id=ids[0]).state == "running"
    assert Job.objects.get(id=ids[1]).state == "queued"
    return ids


def _states(ids):
    return [Job.objects.get(id=i).state for i in ids]


def test_cancel_on_queue_cancels_the_jobs_in_the_states_given(admin_user, running_and_queued):
    running, queued = running_and_queued
    call(
        "CancelOnQueue",
        admin_user,
        submit_pb2.QueueCancelRequest(name="demo", jobStates=[submit_pb2.QUEUED]),
    )
    assert _states([running, queued]) == ["running", "cancelled"]
    call(
        "CancelOnQueue",
        admin_user,
        submit_pb2.QueueCancelRequest(
            name="demo", jobStates=[submit_pb2.RUNNING, submit_pb2.PENDING]
        ),
    )
    assert Run.objects.get(job_id=running).stop_kind == "cancel"


def test_cancel_on_queue_filters_by_priority_class_and_pool(admin_user, running_and_queued):
    every = [submit_pb2.QUEUED, submit_pb2.RUNNING]
    call(
        "CancelOnQueue",
        admin_user,
        submit_pb2.QueueCancelRequest(
            name="demo", jobStates=every, priorityClasses=["armada-preemptible"]
        ),
    )
    assert _states(running_and_queued) == ["running", "queued"]  # both are armada-default


BAD_CANCELS = [
    ("no-states", submit_pb2.QueueCancelRequest(name="demo"), "jobStates"),
    (
        "terminal-state",
        submit_pb2.QueueCancelRequest(
            name="demo", jobStates=[submit_pb2.QUEUED, submit_pb2.SUCCEEDED]
        ),
        "jobStates[1]",
    ),
    (
        "unknown-enum-number",
        submit_pb2.QueueCancelRequest(name="demo", jobStates=[42]),
        "jobStates[0]",
    ),
    (
        "unknown-priority-class",
        submit_pb2.QueueCancelRequest(
            name="demo", jobStates=[submit_pb2.QUEUED], priorityClasses=["gold"]
        ),
        "priorityClasses[0]",
    ),
    (
        "unknown-pool",
        submit_pb2.QueueCancelRequest(name="demo", jobStates=[submit_pb2.QUEUED], pools=["", "x"]),
        "pools",
    ),
    ("no-name", submit_pb2.QueueCancelRequest(jobStates=[submit_pb2.QUEUED]), "name"),
]


@pytest.mark.parametrize(
    ("message", "field"), [b[1:] for b in BAD_CANCELS], ids=[b[0] for b in BAD_CANCELS]
)
def test_a_bad_cancel_on_queue_names_the_field_and_cancels_nothing(
    admin_user, running_and_queued, message, field
):
    with pytest.raises(ValidationFailed) as raised:
        call("CancelOnQueue", admin_user, message)
    assert field in fields_of(raised.value)
    assert _states(running_and_queued) == ["running", "queued"]
    assert not Run.objects.filter(stop_requested_at__isnull=False).exists()


def test_cancel_on_queue_refusals(member, running_and_queued):
    with pytest.raises(PermissionDenied, match="'demo'"):
        call(
            "CancelOnQueue",
            member,
            submit_pb2.QueueCancelRequest(name="demo", jobStates=[submit_pb2.QUEUED]),
        )
    with pytest.raises(NotFound, match="ghost"):
        call(
            "CancelOnQueue",
            member,
            submit_pb2.QueueCancelRequest(name="ghost", jobStates=[submit_pb2.QUEUED]),
        )
    assert _states(running_and_queued) == ["running", "queued"]


def test_preempt_on_queue_stops_the_running_jobs_only(owner, running_and_queued):
    running, queued = running_and_queued
    call("PreemptOnQueue", owner, submit_pb2.QueuePreemptRequest(name="demo", pools=["default"]))
    run = Run.objects.get(job_id=running)
    assert (run.stop_kind, run.stop_reason) == ("preempt", "preempted by an operator")
    assert _states([queued]) == ["queued"]


def test_preempt_on_queue_refusals(admin_user, member, running_and_queued):
    with pytest.raises(PermissionDenied):
        call("PreemptOnQueue", member, submit_pb2.QueuePreemptRequest(name="demo"))
    with pytest.raises(NotFound):
        call("PreemptOnQueue", admin_user, submit_pb2.QueuePreemptRequest(name="ghost"))
    with pytest.raises(ValidationFailed) as raised:
        call(
            "PreemptOnQueue",
            admin_user,
            submit_pb2.QueuePreemptRequest(name="demo", priorityClasses=["x"]),
        )
    assert fields_of(raised.value) == {"priorityClasses[0]"}
    assert not Run.objects.filter(stop_requested_at__isnull=False).exists()
