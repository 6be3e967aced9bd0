"""Preemption: stopping running jobs for other work (or by hand), without retrying them.

``runs_request_preemption`` marks the active runs of the given jobs to be stopped and
appends ``preempting`` events, in one transaction. The executor then stops each pod with
its ``terminationGracePeriodSeconds`` and reports the run preempted
(``services.runs``): the job ends as preempted (a kind of failed, reason Preempted), it is
not retried, and its retry budget is untouched. Only preemptible jobs are preempted by the
scheduler; an operator with the ``preempt`` verb may preempt any running job by hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction

from armada.core.states import EventType, RunState
from armada.models import Job, Run
from armada.services.authz import require_queue_verb
from armada.services.errors import Conflict, NotFound
from armada.services.runs import Changes

ACTIVE = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]


def runs_request_preemption(*, job_ids: Iterable[str], reason: str, now: datetime) -> list[str]:
    """Ask the executors to stop the active runs of ``job_ids``; returns the runs marked.
    Runs already being stopped are left as they are (idempotent)."""
    with transaction.atomic():
        runs = list(
            Run.objects.select_for_update()
            .select_related("job")
            .filter(job_id__in=list(job_ids), state__in=ACTIVE, stop_requested_at__isnull=True)
            .order_by("id")
        )
        changes = Changes()
        for run in runs:
            run.stop_requested_at = now
            run.stop_reason = reason
            changes.event(EventType.PREEMPTING, run, run.job, now, reason=reason)
        if runs:
            Run.objects.filter(id__in=[r.id for r in runs]).update(
                stop_requested_at=now, stop_reason=reason
            )
        changes.write_events()
    return [r.id for r in runs]


def job_preempt(*, actor: Any, job_id: str, reason: str, now: datetime) -> list[str]:
    """Preempt one running job by hand (``armadactl preempt job``)."""
    job = Job.objects.select_related("queue").filter(id=job_id).first()
    if job is None:
        raise NotFound(f"job {job_id!r} does not exist")
    require_queue_verb(actor, job.queue, "preempt")
    marked = runs_request_preemption(
        job_ids=[job_id], reason=reason or "preempted by an operator", now=now
    )
    if not marked and not Run.objects.filter(job_id=job_id, state__in=ACTIVE).exists():
        raise Conflict(f"job {job_id!r} is {job.state}, not running: there is nothing to preempt")
    return marked
