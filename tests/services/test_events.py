"""The event log's ordering invariant: ids become visible in increasing order."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from armada.core.states import EventType
from armada.models import Event, Queue
from armada.services.events import (
    NewEvent,
    events_append,
    events_append_columns,
    events_for_job_set,
)
from tests.conftest import T0


def event(job_id: str) -> NewEvent:
    return NewEvent(EventType.QUEUED, queue="q", job_set="s", job_id=job_id, created=T0)


@pytest.mark.django_db(transaction=True)
def test_append_outside_a_transaction_is_refused():
    with pytest.raises(RuntimeError, match="transaction.atomic"):
        events_append(events=[event("a")])
    assert Event.objects.count() == 0


@pytest.mark.django_db
def test_events_of_a_job_set_after_a_cursor():
    Queue.objects.create(name="q", created_at=T0, updated_at=T0)  # events are read per queue
    with transaction.atomic():
        events_append(events=[event("a"), event("b"), event("c")])
    first, *rest = events_for_job_set(queue="q", job_set="s")
    assert [e.job_id for e in rest] == ["b", "c"]
    assert [e.job_id for e in events_for_job_set(queue="q", job_set="s", after=first.id)] == [
        "b",
        "c",
    ]
    assert events_for_job_set(queue="q", job_set="other") == []


@pytest.mark.django_db(transaction=True)
def test_a_later_writer_waits_so_no_reader_sees_a_gap():
    """Writer A appends and holds its transaction open; writer B must not commit a visible
    event before A commits, or a watcher that read B's id would skip A's event for ever."""
    a_appended = threading.Event()
    release_a = threading.Event()
    b_done = threading.Event()
    errors: list[BaseException] = []

    def writer_a() -> None:
        try:
            with transaction.atomic():
                events_append(events=[event("a")])
                a_appended.set()
                release_a.wait(10)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    def writer_b() -> None:
        try:
            a_appended.wait(10)
            with transaction.atomic():
                events_append(events=[event("b")])
        except BaseException as exc:
            errors.append(exc)
        finally:
            b_done.set()
            connections.close_all()

    ta, tb = threading.Thread(target=writer_a), threading.Thread(target=writer_b)
    ta.start()
    tb.start()
    a_appended.wait(10)
    b_done.wait(1.0)  # give B the chance to (wrongly) commit first
    seen_while_a_open = [e.id for e in events_for_job_set(queue="q", job_set="s")]
    release_a.set()
    ta.join(15)
    tb.join(15)
    assert not errors, errors
    assert seen_while_a_open == []  # B could not commit ahead of A
    ordered = list(Event.objects.order_by("id").values_list("job_id", flat=True))
    assert ordered == ["a", "b"]


def columns(job_ids: list[str], **changes) -> dict:
    n = len(job_ids)
    given = {
        "type_": EventType.LEASED,
        "created": T0,
        "queues": ["q"] * n,
        "job_sets": ["s"] * n,
        "job_ids": job_ids,
        "run_ids": [f"r-{j}" for j in job_ids],
        "payloads": ['{"k": "v \\" \\\\ {,}"}'] * n,
    }
    return given | changes


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's append")
@pytest.mark.django_db(transaction=True)
def test_events_given_column_by_column_keep_their_order_and_payloads():
    with transaction.atomic():
        assert events_append_columns(**columns(["c", "a", "b"])) == 3
    events = list(Event.objects.order_by("id"))
    assert [(e.job_id, e.run_id, e.type) for e in events] == [
        ("c", "r-c", "leased"),
        ("a", "r-a", "leased"),
        ("b", "r-b", "leased"),
    ]
    assert all(e.payload == {"k": 'v " \\ {,}'} and e.created == T0 for e in events)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's append")
@pytest.mark.django_db(transaction=True)
def test_events_given_column_by_column_are_refused_outside_a_transaction_or_uneven():
    with pytest.raises(RuntimeError, match="transaction.atomic"):
        events_append_columns(**columns(["a"]))
    with transaction.atomic(), pytest.raises(ValueError, match="one value per event"):
        events_append_columns(**columns(["a", "b"], run_ids=["r-a"]))
    assert Event.objects.count() == 0
