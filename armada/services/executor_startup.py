"""At start-up: executors that the configuration no longer names stop receiving leases.

An executor stays registered after it is taken out of ``executors:``; left alone it would
look alive (and be leased to) until it had been silent for ``executorTimeout``. So a
scheduler worker, before its first cycle, deregisters every registered executor whose id
the configuration does not name (its row and its nodes go: the scheduler places jobs only
on registered nodes), and each run that had not ended on such an executor (or on any
other executor the configuration does not name) is handled as a lost executor's runs are
(``services.expiry``): ``lease_expired``, internal / lease-expired, with its event, in the
same transaction, and decided by the next cycle. One log line per executor removed.

"Not named" is the right test even with several machines: every process reads the same
configuration, and an executor that is named is never touched here (a named executor that
is not running is still left to the timeout).

Safe to run by several processes at once and again and again: the runs are locked (jobs
first, then runs) and re-read under the lock, then the executor rows are locked, so each
run is expired once and each executor removed once; a second call finds nothing to do.
Lock order (docs/concurrency.md): jobs, runs, executor rows, their nodes, the event log.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Count
from django.utils import timezone

from armada.models import Executor, Node, Run
from armada.services.expiry import ACTIVE, runs_mark_lease_expired
from armada.services.locking import lock_runs_with_jobs

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Deregistered:
    """One executor the configuration no longer names, as this call handled it."""

    executor_id: str
    registered: bool  # False: it had runs that had not ended, but no registration
    nodes: int
    runs_expired: int


def executors_deregister_unconfigured(
    *, configured: Iterable[str], now: datetime
) -> list[Deregistered]:
    """Deregister the executors not in ``configured`` and expire their active runs; returns
    what this call did (empty when there was nothing to do), one entry per executor."""
    named = sorted(set(configured))
    unnamed_runs = Run.objects.filter(state__in=ACTIVE).exclude(executor__in=named)
    if not Executor.objects.exclude(id__in=named).exists() and not unnamed_runs.exists():
        return []
    with transaction.atomic():
        runs = lock_runs_with_jobs(unnamed_runs)
        executors = list(
            Executor.objects.select_for_update(of=("self",))
            .exclude(id__in=named)
            .order_by("pk")
            .values_list("id", flat=True)
        )
        nodes = {
            row["executor_id"]: row["n"]
            for row in Node.objects.filter(executor_id__in=executors)
            .values("executor_id")
            .annotate(n=Count("id"))
        }
        Node.objects.filter(executor_id__in=executors).delete()
        Executor.objects.filter(id__in=executors).delete()
        changes = runs_mark_lease_expired(
            runs,
            now=now,
            message=lambda run: f"executor {run.executor} is no longer in the configuration",
        )
        changes.write()
    expired = Counter(run.executor for run in runs)
    done = [
        Deregistered(
            executor_id=executor_id,
            registered=executor_id in executors,
            nodes=nodes.get(executor_id, 0),
            runs_expired=expired[executor_id],
        )
        for executor_id in sorted(set(executors) | set(expired))
    ]
    for d in done:
        logger.warning(
            "executor %s is no longer in the configuration: %s; %d active run(s) expired "
            "(lease_expired)",
            d.executor_id,
            f"deregistered with its {d.nodes} node(s)" if d.registered else "not registered",
            d.runs_expired,
        )
    return done


def scheduler_start_up() -> list[Deregistered]:
    """What a scheduler worker does once, before its first cycle (``armada.celery``).

    A database that cannot be reached is logged, not raised: the worker starts anyway, and
    the executors the configuration no longer names are then expired by the timeout."""
    configured = [executor.id for executor in settings.ARMADA.executors]
    try:
        return executors_deregister_unconfigured(configured=configured, now=timezone.now())
    except DatabaseError:
        logger.exception("could not deregister the executors no longer in the configuration")
        return []
