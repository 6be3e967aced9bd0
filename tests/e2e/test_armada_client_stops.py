"""Stopping jobs with Armada's own Python client, unmodified, against real processes (see
``test_armada_client_flows`` for the system): cancel by id and by state (``cancel_jobset``
with a state filter), reprioritize a waiting job (the ``reprioritized`` event), preempt a
running one (``preempting`` then ``preempted``), and cancel and preempt across a queue
through ``QueueService`` (the client's ``queue_stub``), an outsider refused.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.typings import JobState

from tests.e2e.wire_system import (
    ADMIN,
    NOWHERE,
    OUTSIDER,
    Flows,
    denied,
    item,
    kinds,
    make_queue,
    module_database,
    module_system,
    of_job,
    seen,
    status,
    submit,
    wait_for_state,
    watch,
)

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def transactional_db(django_db_setup, django_db_blocker) -> Iterator[None]:
    """One database for the module's tests, flushed at its end (``module_database``)."""
    yield from module_database(django_db_blocker)


@pytest.fixture(scope="module")
def flows(transactional_db, tmp_path_factory) -> Iterator[Flows]:
    yield from module_system(tmp_path_factory, "client-stops")


def test_cancel_by_id_and_by_state(flows):
    admin = flows.client()
    make_queue(admin, "cancelling")
    runner, single = submit(
        admin, "cancelling", "c", [item(admin, duration="1h"), item(admin, duration="1h")]
    )
    (waiter,) = submit(admin, "cancelling", "c", [item(admin, required_node_labels=NOWHERE)])
    for job_id in (runner, single):
        wait_for_state(flows, admin, job_id, submit_pb2.RUNNING)
    assert status(admin, waiter) == submit_pb2.QUEUED

    assert list(admin.cancel_jobs("cancelling", "c", job_id=single).cancelled_ids) == [single]
    # The queued ones only: the running job goes on.
    admin.cancel_jobset("cancelling", "c", [JobState.QUEUED])
    events = watch(
        flows, admin, "cancelling", "c", seen((single, "cancelled"), (waiter, "cancelled"))
    )
    assert status(admin, runner) == submit_pb2.RUNNING
    assert "cancelled" not in kinds(events, runner)
    cancelled = of_job(events, waiter)[-1].message
    assert cancelled.requestor == ADMIN
    assert kinds(events, single)[-2:] == ["cancelling", "cancelled"]

    # A finished state cannot be a filter; then the running ones (PENDING with RUNNING).
    refused = denied(lambda: admin.cancel_jobset("cancelling", "c", [JobState.SUCCEEDED]))
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "filter.states[0]" in refused.details()
    admin.cancel_jobset("cancelling", "c", [JobState.PENDING, JobState.RUNNING])
    watch(flows, admin, "cancelling", "c", seen((runner, "cancelled")))
    assert status(admin, runner) == submit_pb2.CANCELLED
    detail = admin.get_job_details([single]).job_details[single]
    assert detail.state == submit_pb2.CANCELLED and detail.cancel_user == ADMIN
    # Nothing is left to cancel: the answer lists nothing.
    assert list(admin.cancel_jobs("cancelling", "c", job_id=single).cancelled_ids) == []


def test_reprioritize_a_waiting_job(flows):
    admin = flows.client()
    make_queue(admin, "reprioritizing")
    (job_id,) = submit(admin, "reprioritizing", "r", [item(admin, required_node_labels=NOWHERE)])
    response = admin.reprioritize_jobs(7, [job_id], "r", "reprioritizing")
    assert dict(response.reprioritization_results) == {job_id: ""}
    events = watch(flows, admin, "reprioritizing", "r", seen((job_id, "reprioritized")))
    reprioritized = of_job(events, job_id)[-1].message
    assert reprioritized.new_priority == 7.0 and reprioritized.requestor == ADMIN
    assert admin.get_job_details([job_id]).job_details[job_id].state == submit_pb2.QUEUED
    # Armada's priority is a double; ours a whole number, and the field is named.
    fraction = denied(lambda: admin.reprioritize_jobs(2.5, [job_id], "r", "reprioritizing"))
    assert fraction.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "newPriority" in fraction.details()
    # Without ids: every unfinished job of the job set.
    everything = admin.reprioritize_jobs(3, None, "r", "reprioritizing")
    assert dict(everything.reprioritization_results) == {job_id: ""}
    admin.cancel_jobset("reprioritizing", "r", [])


def test_preempt_a_running_job(flows):
    admin = flows.client()
    make_queue(admin, "preempting")
    (job_id,) = submit(admin, "preempting", "p", [item(admin, duration="1h")])
    wait_for_state(flows, admin, job_id, submit_pb2.RUNNING)
    result = admin.preempt_jobs("preempting", "p", job_id)
    assert dict(result.preemption_results) == {job_id: ""}
    events = watch(flows, admin, "preempting", "p", seen((job_id, "preempted")))
    assert kinds(events, job_id)[-2:] == ["preempting", "preempted"]
    preempted = of_job(events, job_id)[-1].message
    assert preempted.requestor == ADMIN and preempted.cluster_id == "e2e"
    latest = admin.get_job_details([job_id]).job_details[job_id]
    assert preempted.run_id == latest.latest_run_id
    assert latest.state == submit_pb2.PREEMPTED
    assert status(admin, job_id) == submit_pb2.PREEMPTED
    # A job that is not running any more is not preempted again: the answer says why.
    again = admin.preempt_jobs("preempting", "p", job_id)
    assert "not running" in again.preemption_results[job_id]


def test_cancel_and_preempt_across_a_queue(flows):
    admin = flows.client()
    make_queue(admin, "wide")
    (running,) = submit(admin, "wide", "long", [item(admin, duration="1h")])
    (waiting,) = submit(admin, "wide", "stuck", [item(admin, required_node_labels=NOWHERE)])
    wait_for_state(flows, admin, running, submit_pb2.RUNNING)

    outsider = flows.client(OUTSIDER)
    everything = submit_pb2.QueueCancelRequest(name="wide", jobStates=[submit_pb2.QUEUED])
    error = denied(lambda: outsider.queue_stub.CancelOnQueue(everything))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    # Only the queued jobs of every job set of the queue.
    admin.queue_stub.CancelOnQueue(everything)
    watch(flows, admin, "wide", "stuck", seen((waiting, "cancelled")))
    assert status(admin, running) == submit_pb2.RUNNING
    admin.queue_stub.PreemptOnQueue(submit_pb2.QueuePreemptRequest(name="wide"))
    events = watch(flows, admin, "wide", "long", seen((running, "preempted")))
    assert kinds(events, running)[-2:] == ["preempting", "preempted"]
    assert status(admin, running) == submit_pb2.PREEMPTED
