"""Job selectors for the REST API: a filtered job list, job-set counts and why a job waits.

Every read goes through the permission funnel (``services.authz``) with the ``watch`` verb:
a list names only the queues the caller may watch, and asking for one queue the caller may
not watch is a 403 naming the permission.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max

from armada.core.states import JobState
from armada.models import Job, Queue, SchedulingRound
from armada.services.authz import require_queue_verb, watchable_queues
from armada.services.errors import NotFound, ValidationFailed
from armada.services.jobs import job_get
from armada.services.records import pending_reason, round_summary

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
ROUNDS_SHOWN = 5
JOB_STATES = [s.value for s in JobState]


def _watched_queue(actor: Any, name: str) -> Queue:
    queue = Queue.objects.filter(name=name).first()
    if queue is None:
        raise NotFound(f"queue {name!r} does not exist")
    require_queue_verb(actor, queue, "watch")
    return queue


def parse_page(*, after: Any, limit: Any) -> tuple[str, int]:
    """The keyset cursor (a job id, exclusive; empty for the first page) and the page size."""
    after = after or ""
    if not isinstance(after, str) or len(after) > 26:
        raise ValidationFailed.one("after", "must be a job id (the last id of the previous page)")
    if limit in (None, ""):
        return after, DEFAULT_LIMIT
    try:
        size = int(limit)
    except (TypeError, ValueError):
        raise ValidationFailed.one(
            "limit", f"must be a whole number from 1 to {MAX_LIMIT}"
        ) from None
    if not 1 <= size <= MAX_LIMIT:
        raise ValidationFailed.one("limit", f"must be a whole number from 1 to {MAX_LIMIT}")
    return after, size


def jobs_list(
    *,
    actor: Any,
    queue: str | None,
    job_set: str | None,
    states: list[str],
    after: Any,
    limit: Any,
) -> tuple[list[Job], str | None]:
    """One page of jobs in id order (oldest first) and the cursor of the next page (None on
    the last page). Filters: ``queue`` (403 unless the caller may watch it; without it, only
    the queues the caller may watch), ``job_set`` (needs ``queue``), ``states`` (any of).
    Keyset pagination: ``after`` is the last id of the previous page; no OFFSET scan."""
    cursor, size = parse_page(after=after, limit=limit)
    unknown = [s for s in states if s not in JOB_STATES]
    if unknown:
        raise ValidationFailed.one(
            "state", f"unknown state {', '.join(unknown)}; choose from {', '.join(JOB_STATES)}"
        )
    if job_set and not queue:
        raise ValidationFailed.one("queue", "is required when jobSetId is given")
    qs = Job.objects.all()
    if queue:
        qs = qs.filter(queue=_watched_queue(actor, queue))
    elif (allowed := watchable_queues(actor)) is not None:
        qs = qs.filter(queue_id__in=allowed)
    if job_set:
        qs = qs.filter(job_set=job_set)
    if states:
        qs = qs.filter(state__in=states)
    if cursor:
        qs = qs.filter(id__gt=cursor)
    page = list(qs.select_related("queue").order_by("id")[: size + 1])
    if len(page) > size:
        page = page[:size]
        return page, page[-1].id
    return page, None


def job_sets_list(*, actor: Any, queue: str) -> list[dict[str, Any]]:
    """The job sets of ``queue`` with their job counts per state, by name."""
    queue_row = _watched_queue(actor, queue)
    rows = (
        Job.objects.filter(queue=queue_row)
        .values("job_set", "state")
        .annotate(n=Count("id"), latest=Max("submitted_at"))
        .order_by("job_set")
    )
    sets: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = sets.setdefault(
            row["job_set"],
            {
                "queue": queue,
                "jobSetId": row["job_set"],
                "counts": dict.fromkeys(JOB_STATES, 0),
                "total": 0,
                "latestSubmittedAt": None,
            },
        )
        entry["counts"][row["state"]] = row["n"]
        entry["total"] += row["n"]
        if entry["latestSubmittedAt"] is None or row["latest"] > entry["latestSubmittedAt"]:
            entry["latestSubmittedAt"] = row["latest"]
    for entry in sets.values():
        live = sum(n for s, n in entry["counts"].items() if not JobState(s).terminal)
        entry["active"] = live > 0
    return list(sets.values())


def job_scheduling(*, actor: Any, job_id: str) -> dict[str, Any]:
    """Why a job is (or is not) waiting: its state, the recorded pending reason (None when it
    is not queued or no round has looked at it yet) and the latest scheduling rounds."""
    job = job_get(actor=actor, job_id=job_id)
    rounds = list(SchedulingRound.objects.order_by("-id")[:ROUNDS_SHOWN])
    return {
        "jobId": job.id,
        "queue": job.queue.name,
        "jobSetId": job.job_set,
        "state": job.state,
        "pendingReason": pending_reason(job),
        "latestRounds": [round_summary(r) for r in rounds],
    }
