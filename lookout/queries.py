"""Lookout reads: keyset pagination over jobs, newest first (never OFFSET)."""

from __future__ import annotations

from armada.models import Job

PAGE_SIZE = 50


def jobs_page(
    *, queue: str = "", job_set: str = "", state: str = "", before: str = ""
) -> tuple[list[Job], str]:
    """One page of jobs with ids below ``before``; returns the page and the next cursor."""
    qs = Job.objects.order_by("-id")
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
