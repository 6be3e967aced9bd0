"""Job selectors (reads)."""

from __future__ import annotations

from typing import Any

from armada.models import Job, Run, RunLog
from armada.services.authz import require_queue_verb
from armada.services.errors import NotFound
from armada.services.locking import lock


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


def jobs_in_job_set(*, queue: str, job_set: str, job_ids: list[str]) -> set[str]:
    """Which of ``job_ids`` are jobs of the job set ``job_set`` of ``queue`` (in any state)."""
    found = Job.objects.filter(queue_id=queue, job_set=job_set, id__any=job_ids)
    return set(found.values_list("id", flat=True))


def live_jobs_for_update(*, queue: Any, job_set: str, job_ids: list[str] | None) -> list[Job]:
    """The unfinished jobs of a job set, locked for update (call inside a transaction); all of
    them when ``job_ids`` is None, else exactly those, or NotFound naming the missing ones."""
    from armada.core.states import JobState

    live = [s.value for s in JobState if not s.terminal]
    qs = Job.objects.filter(queue=queue, job_set=job_set, state__in=live)
    if job_ids is not None:
        qs = qs.filter(id__in=job_ids)
    jobs = list(lock(qs))
    if job_ids is not None and len(jobs) != len(set(job_ids)):
        found = {j.id for j in jobs}
        missing = [j for j in job_ids if j not in found]
        raise NotFound(
            f"no unfinished job {', '.join(missing)} in queue {queue.name!r}, job set {job_set!r}"
        )
    return jobs
