"""Job selectors (reads)."""

from __future__ import annotations

from typing import Any

from armada.models import Job
from armada.services.authz import require_queue_verb
from armada.services.errors import NotFound


def job_get(*, actor: Any, job_id: str) -> Job:
    """One job with its runs; reading it needs the ``watch`` verb on its queue."""
    job = Job.objects.select_related("queue").prefetch_related("runs").filter(id=job_id).first()
    if job is None:
        raise NotFound(f"job {job_id!r} does not exist")
    require_queue_verb(actor, job.queue, "watch")
    return job
