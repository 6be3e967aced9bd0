"""The scheduler's per-cycle metrics under Armada's names, kept in the database.

The scheduler calls :func:`cycle_metrics_write` once at the end of each cycle; every web
process reads the rows at scrape time (``armada.metrics``), so all of them serve the same
values whichever process scheduled. Armada's names, labels and units:

- ``armada_scheduler_schedule_cycle_times``: a histogram of cycle durations in
  milliseconds (whole milliseconds, as Armada observes them), with Armada's buckets
  ``10 * 1.1**i`` for ``i`` in 0..109;
- ``armada_scheduler_reconciliation_cycle_times`` (expiring lost leases, deciding failures
  and syncing the job database), ``armada_scheduler_scheduling_cycle_times`` (the rounds of
  every pool) and ``armada_scheduler_pool_scheduling_cycle_times{pool}`` (one pool's round):
  the cycle's phases, in milliseconds, with the same buckets;
- ``armada_scheduler_schedule_outcome{outcome}``: cycles completed (``success``; a cycle that
  fails rolls back, its count with it, so ``failure`` is not counted);
- ``armada_scheduler_scheduled_jobs{pool,queue,priority_class,type}``: jobs leased, where
  ``type`` says how room was made: ``no-preemption``, ``urgency`` (a less urgent job was
  preempted for it) or ``fairshare`` (a queue over its fair share gave room);
- ``armada_scheduler_preempted_jobs{pool,queue,priority_class,type}``: jobs the scheduler
  preempted (``type`` ``urgency`` or ``fairshare``), counted when their stop was marked.
  Preemptions asked for through the API are not counted here;
- ``armada_scheduler_pool_scheduling_outcome{pool,outcome,termination_reason}`` and the
  per-cycle gauges: ``services.round_metrics`` and ``services.duration_metrics``.

Storage: ``MetricCounter`` rows, written in one transaction under the event-log lock like
every counter (``services.counters``). The histogram is kept as one counter per bucket that
observations fell into (``le`` = the bucket's upper bound, not cumulative; ``+Inf`` above the
last bound) plus ``_sum``; the collector makes the buckets cumulative (the count is the
``+Inf`` bucket's).

The ``type`` of a lease and of a preemption comes from the preempted jobs' reasons, which
name the job each preemption made room for (``core.snapshot.reason_urgency_preempted``,
``reason_fair_share_preempted``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from django.db import transaction

from armada.models import Job
from armada.services.counters import counters_add_many
from armada.services.duration_metrics import STORED as DURATION_GAUGES
from armada.services.events import lock_event_log
from armada.services.metric_buckets import INF, bucket_label, exponential_buckets
from armada.services.metric_buckets import bucket_of as _bucket_of
from armada.services.metric_gauges import GaugeRows, gauges_replace
from armada.services.round_metrics import (
    POOL_OUTCOME,
    ROUND_GAUGES,
    PoolRound,
    pool_outcomes,
    round_gauge_rows,
)

CYCLE_TIMES = "armada_scheduler_schedule_cycle_times"
RECONCILIATION_TIMES = "armada_scheduler_reconciliation_cycle_times"
SCHEDULING_TIMES = "armada_scheduler_scheduling_cycle_times"
POOL_TIMES = "armada_scheduler_pool_scheduling_cycle_times"
OUTCOME = "armada_scheduler_schedule_outcome"
SCHEDULED = "armada_scheduler_scheduled_jobs"
PREEMPTED = "armada_scheduler_preempted_jobs"
JOB_LABELS = ("pool", "queue", "priority_class", "type")
# Every gauge a cycle sets: the last cycle's rows of these are replaced by each cycle.
CYCLE_GAUGE_NAMES = (*ROUND_GAUGES, *DURATION_GAUGES)
__all__ = ["INF", "bucket_label", "bucket_of", "cycle_metrics_write"]


# Armada's buckets for the cycle-time histogram: ExponentialBuckets(10.0, 1.1, 110).
CYCLE_BUCKETS = exponential_buckets(10.0, 1.1, 110)

NO_PREEMPTION = "no-preemption"
URGENCY = "urgency"
FAIRSHARE = "fairshare"
UNKNOWN = "unknown"
_ROOM_FOR = re.compile(r"make room for job (\S+)")


def bucket_of(milliseconds: float) -> str:
    """The ``le`` of the smallest bucket that holds ``milliseconds``."""
    return _bucket_of(CYCLE_BUCKETS, milliseconds)


def preemption_type(reason: str) -> str:
    """``urgency`` or ``fairshare`` from a preemption reason the round wrote; else unknown."""
    if reason.startswith("preempted to make room for job"):
        return URGENCY
    if "over its fair share; preempted to make room for job" in reason:
        return FAIRSHARE
    return UNKNOWN


def lease_types(preempted: Mapping[str, str]) -> dict[str, str]:
    """For each job that a preemption of this cycle made room for, how: job id -> type."""
    out: dict[str, str] = {}
    for reason in preempted.values():
        found = _ROOM_FOR.search(reason)
        if found:
            out[found[1]] = preemption_type(reason)
    return out


class _Lease(Protocol):
    job_id: str
    queue: str
    priority_class: str


class _Run(Protocol):
    id: str
    pool: str
    queue: str
    priority_class: str


def cycle_metrics_write(
    *,
    duration_ms: int,
    leases: Iterable[tuple[str, _Lease]],
    leased_ids: Iterable[str],
    preempted: Mapping[str, str],
    runs: Mapping[str, _Run],
    marked_run_ids: Iterable[str],
    reconciliation_ms: int = 0,
    pool_ms: Mapping[str, int] | None = None,
    rounds: Sequence[PoolRound] = (),
    gauges: GaugeRows | None = None,
) -> None:
    """Count one cycle: its duration; its leases (``(pool, lease)`` as the rounds made them,
    of which ``leased_ids`` were written: a job cancelled meanwhile is not counted); its
    preemptions (the reasons by job id, each job's active run in ``runs`` by job id, and the
    runs whose stop was marked: a run that was already stopping is not counted); each pool's
    round (``services.round_metrics``). The cycle's gauges (the rounds' statistics and
    ``gauges``, e.g. ``services.duration_metrics``) replace the last cycle's in the same
    transaction (``services.metric_gauges``); with ``gauges`` None, the stored duration
    gauges stay as the last cycle that reckoned them left them."""
    written = set(leased_ids)
    placed = [(pool, lease) for pool, lease in leases if lease.job_id in written]
    how = lease_types(preempted)
    classes = {lease.job_id: lease.priority_class for _, lease in placed}
    unknown = [job_id for job_id, pc in classes.items() if not pc]
    if unknown:  # a lease made without its job's class: read it
        classes.update(Job.objects.filter(id__any=unknown).values_list("id", "priority_class"))
    scheduled: Counter[tuple[tuple[str, str], ...]] = Counter()
    for pool, lease in placed:
        kind = how.get(lease.job_id, NO_PREEMPTION)
        labels = (pool, lease.queue, classes.get(lease.job_id, ""), kind)
        scheduled[tuple(zip(JOB_LABELS, labels, strict=True))] += 1
    marked = set(marked_run_ids)
    stopped: Counter[tuple[tuple[str, str], ...]] = Counter()
    for job_id, reason in preempted.items():
        run = runs.get(job_id)
        if run is not None and run.id in marked:
            labels = (run.pool, run.queue, run.priority_class, preemption_type(reason))
            stopped[tuple(zip(JOB_LABELS, labels, strict=True))] += 1
    with transaction.atomic():
        lock_event_log()  # counters are written only under it (services.counters)
        pools = dict(pool_ms or {})
        counts: dict[str, Counter[tuple[tuple[str, str], ...]]] = {
            SCHEDULED: scheduled,
            PREEMPTED: stopped,
            POOL_OUTCOME: Counter(pool_outcomes(list(rounds))),
            OUTCOME: Counter({(("outcome", "success"),): 1}),
        }
        for name, ms, labels in (
            (CYCLE_TIMES, duration_ms, ()),
            (RECONCILIATION_TIMES, reconciliation_ms, ()),
            (SCHEDULING_TIMES, sum(pools.values()), ()),
            *((POOL_TIMES, ms, (("pool", pool),)) for pool, ms in sorted(pools.items())),
        ):
            bucket = counts.setdefault(f"{name}_bucket", Counter())
            bucket[(*labels, ("le", bucket_of(ms)))] += 1
            counts.setdefault(f"{name}_sum", Counter())[labels] += int(ms)
        counters_add_many(counts)  # all of them at once
        rows = {**round_gauge_rows(list(rounds)), **(gauges or {})}
        gauges_replace(names=CYCLE_GAUGE_NAMES if gauges is not None else ROUND_GAUGES, rows=rows)
