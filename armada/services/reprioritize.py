"""Reprioritizing jobs: a new priority for jobs that have not finished.

The priority orders waiting jobs within their queue (lower first, after priority-class
urgency), so it matters while a job is queued; a running job keeps it for its next
attempt. ``reprioritizing`` and ``reprioritized`` events are written with the change, in
one transaction. Finished jobs are left alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from armada.core.states import EventType, JobState
from armada.core.submission import MAX_PRIORITY
from armada.models import Job, Queue
from armada.services.authz import require_queue_verb
from armada.services.errors import NotFound, ValidationFailed
from armada.services.events import NewEvent, events_append
from armada.services.jobs import live_jobs_for_update

LIVE = [s.value for s in JobState if not s.terminal]


def jobs_reprioritize(
    *, actor: Any, queue: str, job_set: str, priority: Any, job_ids: list[str] | None, now: datetime
) -> list[str]:
    """Set ``priority`` on the given jobs of a job set (all its live jobs when ``job_ids`` is
    None); returns the ids changed."""
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not 0 <= priority <= MAX_PRIORITY
    ):
        raise ValidationFailed.one("priority", f"must be a whole number from 0 to {MAX_PRIORITY}")
    queue_row = Queue.objects.filter(name=queue).first()
    if queue_row is None:
        raise NotFound(f"queue {queue!r} does not exist")
    require_queue_verb(actor, queue_row, "reprioritize")
    with transaction.atomic():
        jobs = live_jobs_for_update(queue=queue_row, job_set=job_set, job_ids=job_ids)
        events = []
        payload = {"newPriority": priority, "requestor": actor.get_username()}
        for job in jobs:
            common = {"queue": queue, "job_set": job_set, "job_id": job.id, "created": now}
            events.append(NewEvent(EventType.REPRIORITIZING, payload=payload, **common))
            events.append(NewEvent(EventType.REPRIORITIZED, payload=payload, **common))
        Job.objects.filter(id__in=[j.id for j in jobs]).update(priority=priority)
        events_append(events=events)
    return [j.id for j in jobs]
