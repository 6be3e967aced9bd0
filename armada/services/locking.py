"""Row locks in the one order every transaction of the system takes them.

The order (``docs/concurrency.md`` explains each step):

0. the scheduler's leader lease row (``services.leader.leader_fence``), in a lease write;
1. queue rows, then retry-policy rows (configuration);
2. job rows, in id order;
3. run rows, in id order;
   then their log rows (``RunLog``, ``services.run_logs``), in run id order: a run's end
   replaces its log; the pieces of a running run's log lock its log row alone;
4. the event-log lock (``services.events``), once, as the last lock of the transaction; the
   database counters are written after it and only under it.

Row locks are ``FOR NO KEY UPDATE`` of the named table only (never of the rows a join
brings along): no transaction changes a key, and the weaker lock does not block the
``FOR KEY SHARE`` that PostgreSQL's deferred foreign-key checks take at commit (a
submitted job checks its queue row, a new run its job row) while the committer already
holds the event-log lock. On SQLite, which has one writer at a time, these are no-ops.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db.models import QuerySet

from armada.models import Job, Run

CHUNK = 5000


def lock(queryset: QuerySet) -> QuerySet:
    """``queryset`` locked ``FOR NO KEY UPDATE`` of its own table only, in primary-key order."""
    return queryset.select_for_update(no_key=True, of=("self",)).order_by("pk")


def lock_jobs(
    ids: Iterable[str], *, with_queue: bool = False, defer: Sequence[str] = ()
) -> dict[str, Job]:
    """Lock the jobs ``ids`` in id order; returns those that exist, by id. ``with_queue``
    reads each job's queue along (unlocked); ``defer`` names columns not read (a caller that
    never looks at them saves decoding them)."""
    wanted = sorted(set(ids))
    found: dict[str, Job] = {}
    for start in range(0, len(wanted), CHUNK):
        rows = Job.objects.filter(id__any=wanted[start : start + CHUNK])
        if with_queue:
            rows = rows.select_related("queue")
        if defer:
            rows = rows.defer(*defer)
        found.update((job.id, job) for job in lock(rows))
    return found


def lock_runs_with_jobs(
    runs: QuerySet,
    *,
    with_queue: bool = False,
    defer_job: Sequence[str] = (),
    defer_run: Sequence[str] = (),
) -> list[Run]:
    """Lock the runs of ``runs`` and their jobs, jobs first (see the order above); each run
    comes back with its locked job attached. A run that stopped matching ``runs`` while we
    waited for its lock is left out. ``defer_job`` and ``defer_run`` name columns the caller
    never reads."""
    job_ids = list(runs.values_list("job_id", flat=True))
    if not job_ids:
        return []
    jobs = lock_jobs(job_ids, with_queue=with_queue, defer=defer_job)
    # Only the runs of the jobs locked above: a run created meanwhile (a new lease of a job
    # that was not in the first read) is left for the next pass, since its job is not locked.
    selected = runs.filter(job_id__in=jobs.keys())
    locked = list(lock(selected.defer(*defer_run) if defer_run else selected))
    for run in locked:
        run.job = jobs[run.job_id]
    return locked
