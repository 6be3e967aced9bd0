"""Events belong to a queue, not to its name: a queue deleted and made again (for another
owner) shows none of the earlier queue's events on any surface (the service, the REST stream,
Armada's GetJobSetEvents), and the earlier events are deleted later in short batches
(``services.event_purge``), also while the new queue's events are being written."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection, connections

from armada.models import Event, EventPurge, Job, Queue
from armada.services.errors import NotFound
from armada.services.event_purge import events_purge
from armada.services.events import events_for_job_set
from armada.services.queues import queue_create, queue_delete
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from tests.api.test_event_stream import _close_stream_thread_connections, basic, stream
from tests.conftest import T0, job, job_file
from tests.wire.event_streams import failure, read_all, request

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["_close_stream_thread_connections"]  # the fixture, autouse, used by name


def cancel(owner, ids: list[str]) -> None:
    jobs_cancel(actor=owner, queue="demo", job_set="set-1", job_ids=ids, reason="done", now=T0)


def deleted_and_made_again_for(new_owner, admin_user, owner) -> list[int]:
    """Queue ``demo`` (``owner``'s) with a finished job set, deleted, then made again for
    ``new_owner``; returns the earlier queue's event ids."""
    ids = job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=T0)
    cancel(owner, ids)
    old = list(Event.objects.filter(queue="demo").values_list("id", flat=True))
    assert old and all(Job.objects.get(id=i).state == "cancelled" for i in ids)
    queue_delete(actor=admin_user, name="demo", now=T0)
    queue_create(actor=admin_user, data={"name": "demo", "owners": [new_owner.username]}, now=T0)
    return old


def test_a_queue_made_again_reads_none_of_the_earlier_queues_events(
    queue, owner, outsider, admin_user
):
    old = deleted_and_made_again_for(outsider, admin_user, owner)
    assert events_for_job_set(queue="demo", job_set="set-1") == []
    # Over REST and Armada's GetJobSetEvents, as the new owner: nothing of the old owner's.
    status, _, body = stream("/api/v1/job-sets/demo/set-1/events", basic("otto", "otto-password"))
    assert status == 200 and "olive" not in body and body.strip() == ""
    assert read_all(outsider, request()) == []
    assert isinstance(failure(outsider, request(errorIfMissing=True)), NotFound)
    # The new queue's own events are read as usual, and only they.
    job_submit(actor=outsider, data=job_file(), now=T0)
    _, _, body = stream("/api/v1/job-sets/demo/set-1/events", basic("otto", "otto-password"))
    rows = [json.loads(line) for line in body.splitlines() if line.strip()]
    assert [r["type"] for r in rows] == ["submitted", "queued"]
    assert all(int(r["id"]) > max(old) for r in rows)
    assert [m.id for m in read_all(outsider, request())] == [str(r["id"]) for r in rows]


def test_a_deleted_queue_has_no_events_to_read(queue, owner, admin_user):
    job_submit(actor=owner, data=job_file(), now=T0)
    cancel(owner, list(Job.objects.values_list("id", flat=True)))
    queue_delete(actor=admin_user, name="demo", now=T0)
    assert events_for_job_set(queue="demo", job_set="set-1") == []


def test_the_earlier_queues_events_are_purged_in_batches_and_only_they(
    queue, owner, outsider, admin_user, monkeypatch
):
    queue_create(actor=admin_user, data={"name": "other", "owners": ["olive"]}, now=T0)
    job_submit(actor=owner, data=job_file(queue="other"), now=T0)
    kept_other = set(Event.objects.filter(queue="other").values_list("id", flat=True))
    old = deleted_and_made_again_for(outsider, admin_user, owner)
    job_submit(actor=outsider, data=job_file(), now=T0)
    new = set(Event.objects.filter(queue="demo").values_list("id", flat=True)) - set(old)
    [purge] = EventPurge.objects.all()
    assert purge.queue == "demo" and purge.upto >= max(old) and purge.upto < min(new)
    # A budget spent after the first batch leaves the rest, and the row, for the next run.
    monkeypatch.setattr("armada.services.event_purge.BATCH", 2)
    ticks = iter([0.0, 0.0, 99.0])
    assert events_purge(budget_seconds=1.0, clock=lambda: next(ticks)) == 2
    assert EventPurge.objects.count() == 1
    assert events_purge() == len(old) - 2
    assert not EventPurge.objects.exists()
    assert set(Event.objects.filter(queue="demo").values_list("id", flat=True)) == new
    assert set(Event.objects.filter(queue="other").values_list("id", flat=True)) == kept_other
    assert events_purge() == 0


def test_purging_while_the_new_queue_is_written_loses_none_of_its_events(
    queue, owner, outsider, admin_user, monkeypatch
):
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL")
    for _ in range(10):  # a few hundred events for the earlier queue
        ids = job_submit(actor=owner, data=job_file(jobs=[job()] * 10), now=T0)
        cancel(owner, ids)
    deleted_and_made_again_for(outsider, admin_user, owner)
    monkeypatch.setattr("armada.services.event_purge.BATCH", 25)
    errors: list[BaseException] = []
    written: list[str] = []
    start = threading.Barrier(2, timeout=60)

    def submitter() -> None:
        try:
            start.wait()
            for _ in range(20):
                written.extend(job_submit(actor=outsider, data=job_file(), now=T0))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    def purger() -> None:
        try:
            start.wait()
            while events_purge():
                pass
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submitter), threading.Thread(target=purger)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads), errors
    events_purge()
    assert not EventPurge.objects.exists()
    rows = list(Event.objects.filter(queue="demo").values_list("job_id", "type"))
    # Every new job's submitted and queued events, and nothing of the earlier queue's.
    assert sorted(rows) == sorted((j, t) for j in written for t in ("submitted", "queued"))
    assert len(events_for_job_set(queue="demo", job_set="set-1", limit=10_000)) == len(rows)


def test_the_admin_deletes_and_makes_queues_through_the_same_rules(
    client, queue, owner, admin_user
):
    """Deleting in the admin is refused while a job is unfinished, and fences the events
    when done; a queue added in the admin starts above every earlier event."""
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    client.force_login(admin_user)
    url = f"/admin/armada/queue/{queue.pk}/delete/"
    response = client.post(url, {"post": "yes"}, follow=True)
    assert "1 unfinished job" in response.content.decode()
    assert Queue.objects.filter(name="demo").exists() and not EventPurge.objects.exists()
    cancel(owner, [job_id])
    client.post(url, {"post": "yes"})
    assert not Queue.objects.filter(name="demo").exists()
    assert EventPurge.objects.get().upto == Event.objects.order_by("-id").first().id
    form = {
        "name": "demo",
        "priority_factor": "1",
        "owners": '["otto"]',
        "group_owners": "[]",
        "permissions": "[]",
        "labels": "{}",
        "retry_policies": "[]",
        "resource_limits_by_priority_class_name": "{}",
    }
    assert client.post("/admin/armada/queue/add/", form).status_code == 302
    assert Queue.objects.get(name="demo").event_floor == EventPurge.objects.get().upto
    assert events_for_job_set(queue="demo", job_set="set-1") == []
