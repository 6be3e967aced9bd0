"""Stopping jobs: preemption (for other work, or by hand) and cancellation.

Both mark the job's active run to be stopped (``stop_requested_at``, ``stop_kind``) and
append ``preempting`` or ``cancelling`` events, in one transaction. The executor then stops
the pod with its ``terminationGracePeriodSeconds`` and reports the run preempted or
cancelled (``services.runs``):
- a preempted job ends as preempted (a kind of failed, reason Preempted), is not retried,
  and its retry budget is untouched; only preemptible jobs are preempted by the scheduler,
  while an operator with the ``preempt`` verb may preempt any running job;
- a cancelled job ends cancelled. A job that is still queued has no run to stop: it is
  cancelled at once (``cancelled`` event in the same transaction).
Requests are idempotent: runs already being stopped are left as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import transaction

from armada.core.states import EventType, JobState, RunState
from armada.models import Job, Queue, Run
from armada.services.authz import require_queue_verb
from armada.services.bulk import bulk_update_fields
from armada.services.errors import Conflict, NotFound, ValidationFailed
from armada.services.events import NewEvent
from armada.services.jobs import live_jobs_for_update
from armada.services.locking import CHUNK, lock, lock_jobs, lock_runs_with_jobs
from armada.services.runs import Changes

ACTIVE = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
PREEMPT = "preempt"
CANCEL = "cancel"
_STOPPING_EVENT = {PREEMPT: EventType.PREEMPTING, CANCEL: EventType.CANCELLING}


def runs_request_stop(
    *, job_ids: Iterable[str], kind: str, reason: str, now: datetime, requestor: str = ""
) -> list[str]:
    """Ask the executors to stop the active runs of ``job_ids``; returns the runs marked.
    ``requestor`` is the user who asked (empty when the scheduler did)."""
    return runs_request_stops(
        reasons=dict.fromkeys(job_ids, reason), kind=kind, now=now, requestor=requestor
    )


def runs_request_stops(
    *,
    reasons: Mapping[str, str],
    kind: str,
    now: datetime,
    requestor: str = "",
    preempted_by: Mapping[str, tuple[str, str]] | None = None,
) -> list[str]:
    """Ask the executors to stop the active runs of the jobs in ``reasons``, each with its
    own reason, in one transaction (a scheduling round may preempt thousands of jobs, each
    for a different waiting job); returns the runs marked. ``preempted_by`` names, for a
    job preempted to make room for another, that job and its new run: the ``preempting``
    event carries them (``preemptingJobId``, ``preemptiveRunId``), and so, once the pod
    is gone, does the ``preempted`` event."""
    with transaction.atomic():
        changes = Changes()
        marked = _mark_stops(
            reasons=reasons,
            kind=kind,
            now=now,
            changes=changes,
            requestor=requestor,
            preempted_by=preempted_by or {},
        )
        changes.write_events()
    return marked


def _mark_stops(
    *,
    reasons: Mapping[str, str],
    kind: str,
    now: datetime,
    changes: Changes,
    requestor: str = "",
    preempted_by: Mapping[str, tuple[str, str]] | None = None,
) -> list[str]:
    """Mark the active runs of the jobs in ``reasons`` to be stopped, inside the caller's
    transaction, and add their events to ``changes`` (the caller appends them last, as the
    lock order asks); returns the runs marked."""
    job_ids = sorted(reasons)
    # Every job first, so that the chunks' run locks below all come after their jobs'.
    lock_jobs(job_ids)
    runs: list[Run] = []
    for start in range(0, len(job_ids), CHUNK):
        runs.extend(
            lock_runs_with_jobs(
                Run.objects.filter(
                    job_id__any=job_ids[start : start + CHUNK],
                    state__in=ACTIVE,
                    stop_requested_at__isnull=True,
                )
            )
        )
    runs.sort(key=lambda r: r.id)
    for run in runs:
        run.stop_requested_at = now
        run.stop_kind = kind
        run.stop_reason = reasons[run.job_id]
        by = (preempted_by or {}).get(run.job_id)
        extra = {"preemptingJobId": by[0], "preemptiveRunId": by[1]} if by else {}
        changes.event(
            _STOPPING_EVENT[kind],
            run,
            run.job,
            now,
            reason=run.stop_reason,
            requestor=requestor,
            **extra,
        )
    bulk_update_fields(runs, ["stop_requested_at", "stop_kind", "stop_reason"])
    return [r.id for r in runs]


def runs_request_preemption(
    *, job_ids: Iterable[str], reason: str, now: datetime, requestor: str = ""
) -> list[str]:
    return runs_request_stop(
        job_ids=job_ids, kind=PREEMPT, reason=reason, now=now, requestor=requestor
    )


def job_preempt(*, actor: Any, job_id: str, reason: str, now: datetime) -> list[str]:
    """Preempt one running job by hand (``armadactl preempt job``)."""
    job = Job.objects.select_related("queue").filter(id=job_id).first()
    if job is None:
        raise NotFound(f"job {job_id!r} does not exist")
    require_queue_verb(actor, job.queue, "preempt")
    marked = runs_request_preemption(
        job_ids=[job_id],
        reason=reason or "preempted by an operator",
        now=now,
        requestor=actor.get_username(),
    )
    if not marked and not Run.objects.filter(job_id=job_id, state__in=ACTIVE).exists():
        raise Conflict(f"job {job_id!r} is {job.state}, not running: there is nothing to preempt")
    return marked


def jobs_cancel(
    *, actor: Any, queue: str, job_set: str, job_ids: list[str] | None, reason: str, now: datetime
) -> list[str]:
    """Cancel the given unfinished jobs of a job set (all of them when ``job_ids`` is None);
    returns the ids of the jobs being cancelled."""
    queue_row = Queue.objects.filter(name=queue).first()
    if queue_row is None:
        raise NotFound(f"queue {queue!r} does not exist")
    require_queue_verb(actor, queue_row, "cancel")
    reason = reason or f"cancelled by {actor.get_username()}"
    with transaction.atomic():
        jobs = live_jobs_for_update(queue=queue_row, job_set=job_set, job_ids=job_ids)
        _cancel_locked(jobs, queue=queue, reason=reason, now=now, requestor=actor.get_username())
    return [j.id for j in jobs]


CANCELLABLE_STATES = [s.value for s in JobState if not s.terminal]


def parse_cancel_states(states: Any) -> list[str]:
    """The ``states`` of a cancel-by-state request: a non-empty list of unfinished states."""
    if not isinstance(states, list) or not states or not all(isinstance(s, str) for s in states):
        raise ValidationFailed.one(
            "states", f"must be a non-empty list of job states: {', '.join(CANCELLABLE_STATES)}"
        )
    unknown = [s for s in states if s not in CANCELLABLE_STATES]
    if unknown:
        raise ValidationFailed.one(
            "states",
            f"cannot cancel jobs in state {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(CANCELLABLE_STATES)}",
        )
    return sorted(set(states), key=CANCELLABLE_STATES.index)


def jobs_cancel_by_state(
    *, actor: Any, queue: str, states: Any, reason: str, now: datetime, job_set: str | None = None
) -> list[str]:
    """Cancel every job of ``queue`` (of one job set when ``job_set`` is given, else any)
    whose state is one of ``states``; returns their ids. All or nothing: the jobs are locked
    and cancelled in one transaction, so a failure leaves every job as it was. Needs the
    ``cancel`` verb on the queue."""
    wanted = parse_cancel_states(states)
    queue_row = Queue.objects.filter(name=queue).first()
    if queue_row is None:
        raise NotFound(f"queue {queue!r} does not exist")
    require_queue_verb(actor, queue_row, "cancel")
    reason = reason or f"cancelled by {actor.get_username()}"
    with transaction.atomic():
        selected = Job.objects.filter(queue=queue_row, state__in=wanted)
        jobs = list(lock(selected if job_set is None else selected.filter(job_set=job_set)))
        _cancel_locked(jobs, queue=queue, reason=reason, now=now, requestor=actor.get_username())
    return [j.id for j in jobs]


def _cancel_locked(
    jobs: list[Job], *, queue: str, reason: str, now: datetime, requestor: str = ""
) -> None:
    """Cancel ``jobs`` (locked by the caller's transaction): queued ones at once, the others
    by asking their executors to stop the active run."""
    queued = [j for j in jobs if j.state == JobState.QUEUED]
    changes = Changes()
    payload = {"reason": reason, "requestor": requestor}
    for job in queued:
        common = {"queue": queue, "job_set": job.job_set, "job_id": job.id, "created": now}
        changes.events.append(NewEvent(EventType.CANCELLING, payload=payload, **common))
        changes.events.append(NewEvent(EventType.CANCELLED, payload=payload, **common))
    if queued:
        Job.objects.filter(id__any=[j.id for j in queued]).update(
            state=JobState.CANCELLED,
            last_transition_at=now,
            terminal_reason="Cancelled",
            terminal_message=reason,
            retry_not_before=None,  # an ended job waits for nothing
        )
    others = [j.id for j in jobs if j.state != JobState.QUEUED]
    _mark_stops(
        reasons=dict.fromkeys(others, reason),
        kind=CANCEL,
        now=now,
        changes=changes,
        requestor=requestor,
    )
    changes.write_events()  # the event-log lock last
