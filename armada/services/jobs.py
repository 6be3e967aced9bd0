"""Job selectors (reads)."""

from __future__ import annotations

from typing import Any

from armada.models import Job, Run, RunLog
from armada.services.authz import require_queue_verb
from armada.services.errors import NotFound


def job_get(*, actor: Any, job_id: str) -> Job:
    """One job with its runs; reading it needs the ``watch`` verb on its queue."""
    job = Job.objects.select_related("queue").prefetch_related("runs").filter(id=job_id).first()
    if job is None:
        raise NotFound(f"job {job_id!r} does not exist")
    require_queue_verb(actor, job.queue, "watch")
    return job


def run_get(*, actor: Any, run_id: str) -> Run:
    """One run with its log; reading it needs the ``watch`` verb on its job's queue."""
    run = Run.objects.select_related("job__queue").filter(id=run_id).first()
    if run is None:
        raise NotFound(f"run {run_id!r} does not exist")
    require_queue_verb(actor, run.job.queue, "watch")
    return run


def run_log_text(*, run: Run) -> RunLog | None:
    return RunLog.objects.filter(run=run).first()
