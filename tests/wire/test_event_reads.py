"""Armada's GetJobSetEvents and Watch, called as the transports call them: a job set's
events in order, cursor semantics, errorIfMissing and refusals."""

from __future__ import annotations

import pytest
from armada_client.armada import event_pb2

from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.services.submit import job_submit
from tests.conftest import T0, job, job_file
from tests.wire.event_streams import (
    WATCH,
    failure,
    read_all,
    request,
    stored_ids,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_close_stream_thread_connections"),
]


def test_the_events_of_a_job_set_in_order_then_the_stream_ends(queue, owner):
    ids = job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=T0)
    job_submit(actor=owner, data=job_file(job_set="other"), now=T0)
    messages = read_all(owner, request())
    assert [m.id for m in messages] == stored_ids()
    kinds = [(m.message.WhichOneof("events"), m.message.submitted.job_id) for m in messages]
    assert [k for k, _ in kinds] == ["submitted", "queued", "submitted", "queued"]
    assert [m.message.queued.job_id for m in messages[1::2]] == ids


def test_from_message_id_is_exclusive(queue, owner):
    job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=T0)
    every = stored_ids()
    assert [m.id for m in read_all(owner, request(from_message_id=every[1]))] == every[2:]
    assert read_all(owner, request(from_message_id=every[-1])) == []


@pytest.mark.parametrize("cursor", ["abc", "-1", "1.5", "1-0", "１"])
def test_a_cursor_that_is_not_an_event_id_is_invalid_argument_naming_the_field(
    queue, owner, cursor
):
    error = failure(owner, request(from_message_id=cursor))
    assert isinstance(error, ValidationFailed)
    assert [e.field for e in error.errors] == ["fromMessageId"]
    error = failure(
        owner, event_pb2.WatchRequest(queue="demo", job_set_id="s", from_id=cursor), WATCH
    )
    assert [e.field for e in error.errors] == ["fromId"]


def test_missing_names_are_invalid_argument(queue, owner):
    assert [e.field for e in failure(owner, request(queue="")).errors] == ["queue"]
    assert [e.field for e in failure(owner, request(id="")).errors] == ["id"]


def test_error_if_missing(queue, owner, outsider):
    # Without the flag an empty job set is an empty stream; with it, NOT_FOUND.
    assert read_all(owner, request()) == []
    error = failure(owner, request(errorIfMissing=True))
    assert isinstance(error, NotFound) and "set-1" in str(error)
    # Watch always asks for it.
    watch = event_pb2.WatchRequest(queue="demo", job_set_id="set-1")
    assert isinstance(failure(owner, watch, WATCH), NotFound)
    # Someone who may not watch the queue learns nothing about its job sets.
    assert isinstance(failure(outsider, request(errorIfMissing=True)), PermissionDenied)
    job_submit(actor=owner, data=job_file(), now=T0)
    assert len(read_all(owner, request(errorIfMissing=True))) == 2


def test_refusals(queue, owner, outsider, member, admin_user):
    job_submit(actor=owner, data=job_file(), now=T0)
    error = failure(owner, request(queue="nope"))
    assert isinstance(error, NotFound) and "nope" in str(error)
    for user in (outsider, member):  # the member may submit, not watch
        error = failure(user, request())
        assert isinstance(error, PermissionDenied) and "watch" in str(error)
    assert len(read_all(admin_user, request())) == 2  # the global watch_all_events


def test_anonymous_callers_may_not_watch(queue, owner):
    from django.contrib.auth.models import AnonymousUser

    job_submit(actor=owner, data=job_file(), now=T0)
    assert isinstance(failure(AnonymousUser(), request()), PermissionDenied)
