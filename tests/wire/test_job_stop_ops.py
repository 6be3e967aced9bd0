"""Armada's calls that stop or change submitted jobs (CancelJobs, CancelJobSet,
ReprioritizeJobs, PreemptJobs), called as the transports call them (the registered function
with a ``Call`` and a message): each call's success, its refusals (permission, not found,
invalid argument naming the field in Armada's spelling) and that a refused call writes
nothing."""

from __future__ import annotations

import pytest
from armada_client.armada import submit_pb2
from google.protobuf import empty_pb2

from armada.models import Event, Job, Run
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file
from tests.wire.job_calls import call, fields_of

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"


# --- CancelJobs, CancelJobSet ---------------------------------------------------------------


@pytest.fixture
def running_and_queued(settings, owner, queue):
    """Job set ``set-1``: one running job (the node has room for one), one queued; and one
    queued job in ``set-2``."""
    from armada.services.scheduler import scheduler_cycle

    agent = fake_agent(settings, cpu="1")
    running, queued = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={FAKE + "duration": "1h"}), job()]),
        now=at(0),
    )
    [other] = job_submit(actor=owner, data=job_file(job_set="set-2"), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    assert Job.objects.get(id=running).state == "running"
    return running, queued, other


def states() -> dict[str, str]:
    return dict(Job.objects.values_list("id", "state"))


def stop_requested(job_id: str) -> bool:
    return Run.objects.filter(job_id=job_id, stop_requested_at__isnull=False).exists()


def test_cancel_jobs_cancels_the_listed_jobs(owner, running_and_queued):
    running, queued, other = running_and_queued
    result = call(
        "CancelJobs",
        owner,
        submit_pb2.JobCancelRequest(
            queue="demo", job_set_id="set-1", job_ids=[queued], job_id=running, reason="done"
        ),
    )
    assert list(result.cancelled_ids) == [queued, running]
    assert states()[queued] == "cancelled"
    assert stop_requested(running)
    assert states()[other] == "queued"


def test_cancel_jobs_without_ids_cancels_the_job_set(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobCancelRequest(queue="demo", job_set_id="set-1")
    assert sorted(call("CancelJobs", owner, request).cancelled_ids) == sorted([running, queued])
    assert states()[other] == "queued"


def test_cancel_jobs_lists_only_the_jobs_really_cancelled(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobCancelRequest(
        queue="demo", job_set_id="set-1", job_ids=["ghost", queued, other]
    )
    assert list(call("CancelJobs", owner, request).cancelled_ids) == [queued]
    assert states()[queued] == "cancelled"
    assert states()[other] == "queued"  # of another job set
    # Cancelling it again: it is finished, so nothing is cancelled and nothing fails.
    request = submit_pb2.JobCancelRequest(queue="demo", job_set_id="set-1", job_ids=[queued])
    assert list(call("CancelJobs", owner, request).cancelled_ids) == []


def test_cancel_jobs_refusals_change_nothing(member, owner, running_and_queued):
    running, queued, _ = running_and_queued
    before = (states(), Event.objects.count())
    ok = {"queue": "demo", "job_set_id": "set-1", "job_ids": [queued]}
    with pytest.raises(PermissionDenied, match="cancel"):
        call("CancelJobs", member, submit_pb2.JobCancelRequest(**ok))
    with pytest.raises(NotFound, match="ghost"):
        call("CancelJobs", owner, submit_pb2.JobCancelRequest(**{**ok, "queue": "ghost"}))
    for bad, field in [
        ({"queue": ""}, "queue"),
        ({"job_set_id": ""}, "jobSetId"),
        ({"reason": "x" * 256}, "reason"),
    ]:
        with pytest.raises(ValidationFailed) as raised:
            call("CancelJobs", owner, submit_pb2.JobCancelRequest(**{**ok, **bad}))
        assert fields_of(raised.value) == [field]
    assert (states(), Event.objects.count()) == before


def test_cancel_job_set_with_a_state_filter(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobSetCancelRequest(
        queue="demo",
        job_set_id="set-1",
        filter=submit_pb2.JobSetFilter(states=[submit_pb2.QUEUED]),
    )
    assert call("CancelJobSet", owner, request) == empty_pb2.Empty()
    assert states()[queued] == "cancelled"
    assert not stop_requested(running)
    assert states()[other] == "queued"  # another job set
    request.filter.states[:] = [submit_pb2.PENDING, submit_pb2.RUNNING]
    call("CancelJobSet", owner, request)
    assert stop_requested(running)


def test_cancel_job_set_without_a_filter_cancels_every_unfinished_job_of_the_set(
    owner, running_and_queued
):
    running, queued, other = running_and_queued
    call("CancelJobSet", owner, submit_pb2.JobSetCancelRequest(queue="demo", job_set_id="set-1"))
    assert states()[queued] == "cancelled" and stop_requested(running)
    assert states()[other] == "queued"


@pytest.mark.parametrize(
    ("filter_states", "field"),
    [
        ([submit_pb2.PENDING], "filter.states"),
        ([submit_pb2.QUEUED, submit_pb2.SUCCEEDED], "filter.states[1]"),
        ([submit_pb2.CANCELLED], "filter.states[0]"),
    ],
)
def test_cancel_job_set_refuses_a_filter_it_cannot_honour(
    owner, running_and_queued, filter_states, field
):
    before = (states(), Event.objects.count())
    request = submit_pb2.JobSetCancelRequest(
        queue="demo", job_set_id="set-1", filter=submit_pb2.JobSetFilter(states=filter_states)
    )
    with pytest.raises(ValidationFailed) as raised:
        call("CancelJobSet", owner, request)
    assert fields_of(raised.value) == [field]
    assert (states(), Event.objects.count()) == before


def test_cancel_job_set_refusals(member, owner, running_and_queued):
    before = (states(), Event.objects.count())
    with pytest.raises(PermissionDenied):
        call("CancelJobSet", member, submit_pb2.JobSetCancelRequest(queue="demo", job_set_id="s"))
    with pytest.raises(NotFound):
        call("CancelJobSet", owner, submit_pb2.JobSetCancelRequest(queue="ghost", job_set_id="s"))
    with pytest.raises(ValidationFailed) as raised:
        call("CancelJobSet", owner, submit_pb2.JobSetCancelRequest(queue="demo"))
    assert fields_of(raised.value) == ["jobSetId"]
    assert (states(), Event.objects.count()) == before


# --- ReprioritizeJobs -----------------------------------------------------------------------


def priorities() -> dict[str, int]:
    return dict(Job.objects.values_list("id", "priority"))


def test_reprioritize_jobs_maps_each_job_to_its_outcome(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobReprioritizeRequest(
        queue="demo", job_set_id="set-1", job_ids=[queued, running], new_priority=7
    )
    result = call("ReprioritizeJobs", owner, request)
    assert dict(result.reprioritization_results) == {queued: "", running: ""}
    assert priorities()[queued] == priorities()[running] == 7
    # Some cannot be changed: the others still are.
    Job.objects.filter(id=running).update(state="succeeded")
    request = submit_pb2.JobReprioritizeRequest(
        queue="demo", job_set_id="set-1", job_ids=[queued, running, other], new_priority=3
    )
    result = dict(call("ReprioritizeJobs", owner, request).reprioritization_results)
    assert result[queued] == ""
    assert running in result[running] and "no unfinished job" in result[running]
    assert other in result[other]
    assert (priorities()[queued], priorities()[running], priorities()[other]) == (3, 7, 0)


def test_reprioritize_jobs_without_ids_changes_the_whole_job_set(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobReprioritizeRequest(queue="demo", job_set_id="set-1", new_priority=4)
    result = call("ReprioritizeJobs", owner, request)
    assert dict(result.reprioritization_results) == {running: "", queued: ""}
    assert priorities()[other] == 0


def test_reprioritize_jobs_refusals_change_nothing(member, owner, running_and_queued):
    _, queued, _ = running_and_queued
    before = (priorities(), Event.objects.count())
    ok = {"queue": "demo", "job_set_id": "set-1", "job_ids": [queued], "new_priority": 2}
    with pytest.raises(PermissionDenied, match="reprioritize"):
        call("ReprioritizeJobs", member, submit_pb2.JobReprioritizeRequest(**ok))
    with pytest.raises(NotFound):
        call("ReprioritizeJobs", owner, submit_pb2.JobReprioritizeRequest(**{**ok, "queue": "x"}))
    for bad, field in [
        ({"new_priority": 1.5}, "newPriority"),
        ({"new_priority": -2}, "newPriority"),
        ({"new_priority": float("inf")}, "newPriority"),
        ({"job_set_id": ""}, "jobSetId"),
    ]:
        with pytest.raises(ValidationFailed) as raised:
            call("ReprioritizeJobs", owner, submit_pb2.JobReprioritizeRequest(**{**ok, **bad}))
        assert fields_of(raised.value) == [field]
    assert (priorities(), Event.objects.count()) == before


# --- PreemptJobs ----------------------------------------------------------------------------


def test_preempt_jobs_maps_each_job_to_its_outcome(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobPreemptRequest(
        queue="demo", job_set_id="set-1", job_ids=[running, queued, other], reason="make room"
    )
    result = dict(call("PreemptJobs", owner, request).preemption_results)
    assert result[running] == ""
    assert "not running" in result[queued]
    assert result[other] == f"job {other!r} is not in queue 'demo', job set 'set-1'"
    run = Run.objects.get(job_id=running)
    assert (run.stop_kind, run.stop_reason) == ("preempt", "make room")
    assert not stop_requested(queued) and states()[queued] == "queued"


def test_preempt_jobs_refusals_change_nothing(member, owner, running_and_queued):
    running, _, _ = running_and_queued
    before = Event.objects.count()
    ok = {"queue": "demo", "job_set_id": "set-1", "job_ids": [running]}
    with pytest.raises(PermissionDenied, match="preempt"):
        call("PreemptJobs", member, submit_pb2.JobPreemptRequest(**ok))
    with pytest.raises(NotFound):
        call("PreemptJobs", owner, submit_pb2.JobPreemptRequest(**{**ok, "queue": "ghost"}))
    with pytest.raises(ValidationFailed) as raised:
        call("PreemptJobs", owner, submit_pb2.JobPreemptRequest(**{**ok, "job_set_id": ""}))
    assert fields_of(raised.value) == ["jobSetId"]
    assert not stop_requested(running)
    assert Event.objects.count() == before
