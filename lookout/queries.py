"""Lookout reads: keyset pagination over jobs, newest first (never OFFSET)."""

from __future__ import annotations

from armada.models import Job

PAGE_SIZE = 50


def watchable_queues(actor) -> list[str] | None:
    """Names of the queues ``actor`` may watch, or None when they may watch every queue."""
    from armada.models import Queue
    from armada.services.authz import can_on_queue, has_global

    if has_global(actor, "watch_all_events"):
        return None
    return [q.name for q in Queue.objects.all() if can_on_queue(actor, q, "watch")]


def jobs_page(
    *, actor, queue: str = "", job_set: str = "", state: str = "", before: str = ""
) -> tuple[list[Job], str]:
    """One page of the jobs ``actor`` may see, ids below ``before``; returns it and the next cursor."""
    qs = Job.objects.order_by("-id")
    allowed = watchable_queues(actor)
    if allowed is not None:
        qs = qs.filter(queue_id__in=allowed)
    if queue:
        qs = qs.filter(queue_id=queue)
    if job_set:
        qs = qs.filter(job_set=job_set)
    if state:
        qs = qs.filter(state=state)
    if before:
        qs = qs.filter(id__lt=before)
    rows = list(
        qs.only(
            "id",
            "queue",
            "job_set",
            "state",
            "owner",
            "priority",
            "submitted_at",
            "failure_category",
            "terminal_reason",
        )[: PAGE_SIZE + 1]
    )
    next_cursor = rows[PAGE_SIZE - 1].id if len(rows) > PAGE_SIZE else ""
    return rows[:PAGE_SIZE], next_cursor


def runs_with_logs(*, job: Job) -> list:
    """The job's runs, newest first, each with its log (or None) attached as ``log_entry``."""
    from armada.models import RunLog

    runs = list(job.runs.order_by("-leased_at", "-id"))
    logs = {entry.run_id: entry for entry in RunLog.objects.filter(run__in=runs)}
    for run in runs:
        run.log_entry = logs.get(run.id)
    return runs
