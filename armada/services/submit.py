"""Submitting a job file: all the jobs of a file are written, with their events, or none."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction

from armada.core.errors import ValidationFailed
from armada.core.states import EventType, JobState
from armada.core.submission import parse_job_file
from armada.models import Job, Queue
from armada.services.authz import require_queue_verb
from armada.services.bulk import insert_rows
from armada.services.dbfaults import (
    DATABASE_ERRORS,
    connection_lost,
    connection_reset,
    read_again_if_lost,
)
from armada.services.errors import Unavailable
from armada.services.events import NewEvent, events_append
from armada.services.ids import new_id

MAX_JOBS_PER_SUBMIT = 5000


def job_submit(*, actor: Any, data: Any, now: datetime) -> list[str]:
    """Validate and store a job file; returns the new job ids in file order.

    Each job gets a ``submitted`` and a ``queued`` event in the same transaction as its row,
    so a crash leaves either the whole file or nothing. When the database connection breaks,
    the caller learns which: the ids as usual if the transaction was committed after all,
    else ``Unavailable`` saying that no job was stored.
    """
    config = settings.ARMADA.scheduling
    job_file = parse_job_file(
        data,
        priority_classes=config.priority_classes,
        default_priority_class=config.default_priority_class_name,
        max_jobs=MAX_JOBS_PER_SUBMIT,
    )
    queue = read_again_if_lost(
        lambda: _queue_for_submit(actor, job_file.queue), "a submit's checks"
    )

    owner = actor.get_username()
    rows: list[dict[str, Any]] = []
    events: list[NewEvent] = []
    for spec in job_file.jobs:
        job_id = new_id()
        # Rows as plain dicts: ``insert_rows`` writes them with COPY on PostgreSQL without
        # building a model instance per job (that alone cost more than the write).
        rows.append(
            {
                "id": job_id,
                "queue_id": queue.name,  # the foreign key is to the name
                "job_set": job_file.job_set,
                "owner": owner,
                "namespace": spec.namespace,
                "priority": spec.priority,
                "priority_class": spec.priority_class,
                "pod_spec": spec.pod_spec,
                "annotations": spec.annotations,
                "requests": spec.requests.to_dict(),
                "gang_id": spec.gang_id,
                "gang_cardinality": spec.gang_cardinality,
                "gang_uniformity_label": spec.gang_uniformity_label,
                "fail_fast": spec.fail_fast,
                "state": JobState.QUEUED.value,
                "submitted_at": now,
                "last_transition_at": now,
            }
        )
        common = {
            "queue": queue.name,
            "job_set": job_file.job_set,
            "job_id": job_id,
            "created": now,
        }
        events.append(
            NewEvent(
                EventType.SUBMITTED, payload={"priority": spec.priority, "owner": owner}, **common
            )
        )
        events.append(NewEvent(EventType.QUEUED, **common))
    ids = [r["id"] for r in rows]
    try:
        with transaction.atomic():
            insert_rows(Job, rows)
            events_append(events=events)
    except DATABASE_ERRORS as exc:
        if not connection_lost(exc):
            raise
        if not _stored(ids[0]):
            raise Unavailable(
                f"the database connection was lost: none of the {len(ids)} job(s) was stored; "
                "submit the file again"
            ) from None
    return ids


def _queue_for_submit(actor: Any, name: str) -> Queue:
    """The queue a file goes to, once the caller may submit to it and it takes jobs."""
    queue = Queue.objects.filter(name=name).first()
    if queue is None:
        raise ValidationFailed.one("queue", f"queue {name!r} does not exist; create it first")
    require_queue_verb(actor, queue, "submit")
    if queue.cordoned:
        raise ValidationFailed.one(
            "queue", f"queue {queue.name!r} is cordoned and accepts no new jobs"
        )
    return queue


def _stored(first_id: str) -> bool:
    """Whether a submit whose connection broke was committed after all (the connection can
    break during COMMIT itself). The file is written in one transaction, so its first job
    stands for all of them. Looked up on a fresh connection; if even that fails, nobody can
    tell, and the caller is told which job to look for."""
    connection_reset()
    try:
        return Job.objects.filter(id=first_id).exists()
    except DATABASE_ERRORS:
        connection_reset()
        raise Unavailable(
            "the database connection was lost while the jobs were being stored, and the "
            f"database cannot be reached to tell whether they were: look up job {first_id} "
            "before submitting the file again"
        ) from None
