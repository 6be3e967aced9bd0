"""Job and run selectors by id, many at a time (Armada's ``Jobs`` service reads with these).

Every read goes through the permission funnel with the ``watch`` verb, as our REST job reads
do: asking for a job of a queue the caller may not watch is PermissionDenied naming the
queue, and nothing is answered (all or nothing). Ids that match nothing are simply absent
from the answer; the caller decides what that means (Armada answers ``UNKNOWN`` for a job
status, and leaves such ids out of its other answers).

A request names at most ``MAX_ITEMS`` ids, as Armada's ``maxQueryItems`` default; each read
is one query for the rows, plus one for the queues' permissions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import Max

from armada.core.states import EventType, JobState, RunState
from armada.models import Event, Job, Queue, Run
from armada.services.authz import require_queue_verb, watchable_queues
from armada.services.errors import NotFound, ValidationFailed

MAX_ITEMS = 500
ACTIVE_RUN_STATES = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
_ACTIVE_JOB_STATES = [s.value for s in JobState if s.active]


def _ids(ids: Sequence[str], field: str) -> list[str]:
    if len(ids) > MAX_ITEMS:
        raise ValidationFailed.one(field, f"at most {MAX_ITEMS} ids in one request")
    return list(dict.fromkeys(ids))


def _require_watch(actor: Any, queues: Iterable[str]) -> None:
    names = sorted(set(queues))
    if not names:
        return
    for queue in Queue.objects.filter(name__in=names).order_by("name"):
        require_queue_verb(actor, queue, "watch")


def jobs_by_ids(*, actor: Any, job_ids: Sequence[str], field: str = "jobIds") -> dict[str, Job]:
    """The jobs among ``job_ids`` that exist, by id."""
    wanted = _ids(job_ids, field)
    jobs = {j.id: j for j in Job.objects.filter(id__in=wanted)} if wanted else {}
    _require_watch(actor, (j.queue_id for j in jobs.values()))
    return jobs


def runs_by_ids(*, actor: Any, run_ids: Sequence[str], field: str = "runIds") -> dict[str, Run]:
    """The runs among ``run_ids`` that exist, by id (each with its job's queue name)."""
    wanted = _ids(run_ids, field)
    runs = (
        {r.id: r for r in Run.objects.filter(id__in=wanted).select_related("job")} if wanted else {}
    )
    _require_watch(actor, (r.job.queue_id for r in runs.values()))
    return runs


def runs_of_jobs(job_ids: Iterable[str]) -> dict[str, list[Run]]:
    """Every run of the given jobs (already read through ``jobs_by_ids``), newest first."""
    by_job: dict[str, list[Run]] = {}
    for run in Run.objects.filter(job_id__in=list(job_ids)).order_by("-leased_at", "-id"):
        by_job.setdefault(run.job_id, []).append(run)
    return by_job


def latest_run_ids(job_ids: Iterable[str]) -> dict[str, str]:
    """The id of each job's latest run (run ids sort by creation), for jobs that have one."""
    rows = (
        Run.objects.filter(job_id__in=list(job_ids))
        .values("job_id")
        .annotate(latest=Max("id"))
        .values_list("job_id", "latest")
    )
    return dict(rows)


def cancellations(job_ids: Iterable[str]) -> dict[str, str]:
    """Who cancelled each of the given cancelled jobs: the ``requestor`` of its ``cancelled``
    event (empty for events written before cancel events named one)."""
    rows = Event.objects.filter(job_id__in=list(job_ids), type=EventType.CANCELLED).values_list(
        "job_id", "payload"
    )
    return {job_id: (payload or {}).get("requestor", "") for job_id, payload in rows}


def jobs_with_annotation(
    *, actor: Any, queue: str, job_set: str, key: str, value: str
) -> list[Job]:
    """The jobs of a job set whose annotation ``key`` is ``value``; needs ``watch``."""
    row = Queue.objects.filter(name=queue).first()
    if row is None:
        raise NotFound(f"queue {queue!r} does not exist")
    require_queue_verb(actor, row, "watch")
    if "__" in key:
        raise ValueError(f"an annotation key with '__' cannot be looked up: {key!r}")
    matching = {f"annotations__{key}": value}
    return list(Job.objects.filter(queue=row, job_set=job_set, **matching).order_by("id"))


def active_queues_by_pool(*, actor: Any) -> dict[str, list[str]]:
    """Per pool, the queues (by name) that have a job leased, pending or running there, as
    Armada's ``GetActiveQueues`` answers; only the queues the caller may watch."""
    rows = (
        Run.objects.filter(state__in=ACTIVE_RUN_STATES, job__state__in=_ACTIVE_JOB_STATES)
        .values_list("pool", "job__queue_id")
        .distinct()
        .order_by("pool", "job__queue_id")
    )
    allowed = watchable_queues(actor)
    by_pool: dict[str, list[str]] = {}
    for pool, queue in rows:
        if allowed is None or queue in allowed:
            by_pool.setdefault(pool, []).append(queue)
    return by_pool
