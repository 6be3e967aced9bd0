"""Submitting a job file: all the jobs of a file are written, with their events, or none.

Idempotent submits: a job may carry a ``clientId`` (Armada's deduplication key). A job whose
clientId is already taken in the same queue and job set is not created again: the submit
answers with the original job's id in its place and writes nothing for it (no row, no event),
while the file's other jobs are created as usual, all in one transaction. The key holds for as
long as the original job's row exists, whatever its state.

Two submits racing with the same clientId cannot both insert: a partial unique index on
(queue, job_set, client_id) makes the second wait for the first and then fail (on PostgreSQL
the whole COPY fails). The second then rolls back, finds the first's jobs and tries again,
so every caller gets the same id. Rows with a clientId are inserted in clientId order, so two
such submits wait for each other's keys in one order and never deadlock.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from armada.core.errors import FieldError, ValidationFailed
from armada.core.states import EventType, JobState
from armada.core.submission import JobFile, parse_job_file
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
from armada.services.ids import new_ids
from armada.services.submit_metrics import submit_check_count

MAX_JOBS_PER_SUBMIT = 5000
# How many times a submit whose clientIds clashed with a concurrent submit's looks again.
# Each clash means the other submit committed those keys, so a retry only repeats while other
# submits keep committing keys of this file.
MAX_CLIENT_ID_ATTEMPTS = 5
_LOOKUP_CHUNK = 1000


def job_submit(*, actor: Any, data: Any, now: datetime) -> list[str]:
    """Validate and store a job file; returns the job ids in file order: new ones, or the
    original job's id for a job whose clientId is already taken (see the module docstring).

    Each new job gets a ``submitted`` and a ``queued`` event in the same transaction as its
    row, so a crash leaves either the whole file or nothing. When the database connection
    breaks, the caller learns which: the ids as usual if the transaction was committed after
    all, else ``Unavailable`` saying that no job was stored.
    """
    started = time.perf_counter()
    job_file = _parse(data)
    checked = time.perf_counter() - started  # armada_scheduler_submit_check_times
    queue = read_again_if_lost(
        lambda: _queue_for_submit(actor, job_file.queue), "a submit's checks"
    )
    keyed = [spec.client_id for spec in job_file.jobs if spec.client_id]
    for attempt in range(1, MAX_CLIENT_ID_ATTEMPTS + 1):
        seen: dict[str, str] = {}
        try:
            return _store(
                actor=actor, queue=queue, job_file=job_file, now=now, known=seen, checked=checked
            )
        except IntegrityError:
            # Rolled back. Worth another attempt only if another submit has committed some of
            # this file's clientIds since this attempt looked.
            if (
                not keyed
                or attempt == MAX_CLIENT_ID_ATTEMPTS
                or len(_known_client_ids(queue.name, job_file.job_set, keyed)) <= len(seen)
            ):
                raise
    raise AssertionError("unreachable")


def job_file_problems(data: Any) -> list[FieldError]:
    """The problems ``job_submit`` would find in the fields of ``data`` (none when they are
    right), for a caller that has found others of its own and reports them all together."""
    try:
        _parse(data)
    except ValidationFailed as exc:
        return exc.errors
    return []


def _parse(data: Any) -> JobFile:
    config = settings.ARMADA.scheduling
    return parse_job_file(
        data,
        priority_classes=config.priority_classes,
        default_priority_class=config.default_priority_class_name,
        max_jobs=MAX_JOBS_PER_SUBMIT,
    )


def _store(
    *,
    actor: Any,
    queue: Queue,
    job_file: JobFile,
    now: datetime,
    known: dict[str, str],
    checked: float = 0.0,
) -> list[str]:
    """One attempt at writing the file's new jobs; returns the ids of all its jobs. Fills
    ``known`` with the clientIds found taken (and their jobs) before writing. ``checked``:
    the seconds the file's check took, counted with the jobs (``services.submit_metrics``)."""
    owner = actor.get_username()
    keyed = [spec.client_id for spec in job_file.jobs if spec.client_id]
    ids: list[str] = []
    rows: list[dict[str, Any]] = []
    events: list[NewEvent] = []
    try:
        with transaction.atomic():
            if keyed:
                known.update(_known_client_ids(queue.name, job_file.job_set, keyed))
            fresh = iter(new_ids(sum(1 for spec in job_file.jobs if spec.client_id not in known)))
            for spec in job_file.jobs:
                if spec.client_id in known:
                    ids.append(known[spec.client_id])
                    continue
                job_id = next(fresh)
                ids.append(job_id)
                # Rows as plain dicts: ``insert_rows`` writes them with COPY on PostgreSQL
                # without building a model instance per job (that alone cost more than the
                # write).
                rows.append(
                    {
                        "id": job_id,
                        "queue_id": queue.name,  # the foreign key is to the name
                        "job_set": job_file.job_set,
                        "client_id": spec.client_id,
                        "owner": owner,
                        "namespace": spec.namespace,
                        "priority": spec.priority,
                        "priority_class": spec.priority_class,
                        "pod_spec": spec.pod_spec,
                        "annotations": spec.annotations,
                        "services": spec.services,
                        "ingress": spec.ingress,
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
                        EventType.SUBMITTED,
                        payload={"priority": spec.priority, "owner": owner},
                        **common,
                    )
                )
                events.append(NewEvent(EventType.QUEUED, **common))
            if rows:
                if keyed:  # one order of keys for every submit: see the module docstring
                    rows.sort(key=lambda r: r["client_id"])
                insert_rows(Job, rows)
                events_append(events=events)
                submit_check_count(queue=queue.name, seconds=checked)
    except DATABASE_ERRORS as exc:
        if not connection_lost(exc):
            raise
        if not rows:  # nothing was to be written: look the known jobs up again
            raise Unavailable(
                "the database connection was lost while the submit was being checked; "
                "nothing was stored, submit the file again"
            ) from None
        if not _stored(rows[0]["id"]):
            raise Unavailable(
                f"the database connection was lost: none of the {len(rows)} job(s) was stored; "
                "submit the file again"
            ) from None
    return ids


def _known_client_ids(queue: str, job_set: str, client_ids: list[str]) -> dict[str, str]:
    """The jobs of a queue and job set that already hold any of ``client_ids``, by clientId."""
    known: dict[str, str] = {}
    for start in range(0, len(client_ids), _LOOKUP_CHUNK):
        chunk = client_ids[start : start + _LOOKUP_CHUNK]
        known.update(
            Job.objects.filter(queue_id=queue, job_set=job_set, client_id__any=chunk)
            .exclude(client_id="")
            .values_list("client_id", "id")
        )
    return known


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
