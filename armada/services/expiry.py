"""Lease expiry: runs on executors that stopped heart-beating are failed by the scheduler.

An executor silent for longer than ``executorTimeout`` is taken as lost. Each of its runs
that has not ended becomes ``lease_expired`` and counts as a genuine failure of category
internal / lease-expired, decided by ``services.decisions`` exactly as a failed pod is,
without the executor's steps (the pod cannot be reached). Runs and events commit together.
A live executor's runs that it no longer holds are expired the same way by its own rounds of
the executor API (``services.executor_rounds``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from armada.core.categorizer import INTERNAL, LEASE_EXPIRED
from armada.core.states import EventType, RunState
from armada.models import Executor, Run
from armada.services.locking import lock_runs_with_jobs
from armada.services.runs import Changes

ACTIVE = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]


def runs_mark_lease_expired(
    runs: list[Run], *, now: datetime, message: Callable[[Run], str]
) -> Changes:
    """Mark ``runs`` (locked, each with its locked job: ``locking.lock_runs_with_jobs``)
    ``lease_expired``, category internal / lease-expired, undecided, with a ``lease_expired``
    event each; ``message(run)`` says why. Returns the changes for the caller to write
    (``Changes.write``) as the last step of its transaction."""
    changes = Changes()
    for run in sorted(runs, key=lambda r: (r.leased_at, r.id)):
        job = run.job
        changes.touch(run, job)
        run.state = RunState.LEASE_EXPIRED
        run.finished_at = now
        run.reason = "LeaseExpired"
        run.message = message(run)
        run.failure_category = INTERNAL
        run.failure_subcategory = LEASE_EXPIRED
        run.decided_at = None  # the scheduler's decision step takes it up
        changes.event(
            EventType.LEASE_EXPIRED, run, job, now, clusterId=run.executor, nodeName=run.node
        )
    return changes


def runs_expire(*, now: datetime) -> int:
    """Expire the runs of lost executors; returns how many runs were expired."""
    cutoff = now - timedelta(seconds=settings.ARMADA.executor_timeout)
    lost = list(
        Executor.objects.filter(last_heartbeat__lt=cutoff).values_list("id", "last_heartbeat")
    )
    known = Executor.objects.values_list("id", flat=True)
    if not lost and not Run.objects.filter(state__in=ACTIVE).exclude(executor__in=known).exists():
        return 0
    lost_ids = [executor_id for executor_id, _ in lost]
    with transaction.atomic():
        runs = lock_runs_with_jobs(
            Run.objects.filter(state__in=ACTIVE).filter(
                Q(executor__in=lost_ids) | ~Q(executor__in=known)
            )
        )
        changes = runs_mark_lease_expired(
            runs,
            now=now,
            message=lambda run: (
                f"executor {run.executor} sent no heartbeat for more than "
                f"{settings.ARMADA.executor_timeout:g}s"
            ),
        )
        changes.write()
    return len(runs)
