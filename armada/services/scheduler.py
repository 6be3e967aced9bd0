"""The scheduling cycle: sync the job database, ask the core where jobs go, write the leases.

Order of a cycle, under the ``scheduler`` leader lease (one cycle at a time):
1. the runs of lost executors are expired (``services.expiry``) and every undecided failure
   is decided (``services.decisions``);
2. the process's in-memory job database (``services.jobdb``) reads what changed since the
   last cycle from the event log; nothing else about jobs is read from the database. Jobs
   waiting for a retry delay (``backoff``) stay out of the round until the cycle's ``now``
   reaches it, with that as their reason;
3. per pool, ``core.scheduling.schedule_round`` gets the live nodes, the queues with what
   they use, the running jobs, and each queue's waiting jobs in order, pulled lazily (at most
   ``maxQueueLookback`` each); at most ``maximumJobsPerRound`` leases, fewer when the lease
   rate bucket (``maximumSchedulingRate``) is low;
4. one transaction claims the jobs still queued, creates their runs and appends the
   ``leased`` events (guarded: a job cancelled meanwhile is left alone;
   ``services.scheduler_leases``). Steps 4-6 are ``services.cycle_writes``; with
   write-behind (``scheduling.writeBehind``, on PostgreSQL) steps 4 and 5 run on a writer
   thread while the next cycle syncs and computes its round, and step 6 on a recorder
   thread once they are written (``services.lease_pipeline``);
5. one transaction asks the executors to stop every job the round preempted, each with its
   reason;
6. the round and the reasons jobs were not leased are recorded (``services.records``), and
   the cycle is counted in Armada's cycle metrics (``services.cycle_metrics``); the queued
   and run time histograms (``services.duration_metrics``: two grouped reads over every
   queued job and active run) are reckoned again only once ``metrics.refreshInterval`` has
   passed since this process last did (its first cycle always does).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings

from armada.core.backoff import reason_retry_delay
from armada.core.config import ArmadaConfig
from armada.core.ratelimit import TokenBucket
from armada.core.scheduling import (
    REASON_CORDONED,
    Lease,
    schedule_round,
)
from armada.core.snapshot import merge_pool_reasons
from armada.gctuning import collector_paused
from armada.models import Queue
from armada.services.counters import counters_reset_if_due
from armada.services.cycle_writes import CyclePlan, write_plan
from armada.services.decisions import DECISIONS_COUNTER, GANG_SKIPPED_COUNTER, failures_decide
from armada.services.expiry import runs_expire
from armada.services.job_state_metrics import RESET_NAMES as STATE_COUNTERS
from armada.services.jobdb import JobDb
from armada.services.leader import (
    LeaseKeeper,
    LeaseLost,
    leader_acquire,
    process_holder,
)
from armada.services.lease_pipeline import LeasePipeline, lease_pipeline
from armada.services.retry_cost_metrics import COUNTERS as RETRY_COST_COUNTERS
from armada.services.round_inputs import avoidance, load_nodes, queue_states_of, running_in_pool
from armada.services.round_metrics import PoolRound, pool_round
from armada.services.scheduler_leases import plan_runs, planned_run_rows
from armada.services.scheduler_limits import (
    away_planner,
    queue_buckets,
    queue_buckets_reset,
    round_limits,
)

log = logging.getLogger(__name__)

LEADER_NAME = "scheduler"
HOLDER = process_holder()


@dataclass
class CycleReport:
    ran: bool = True
    considered: int = 0
    leased: int = 0
    expired: int = 0
    decided: int = 0
    preempted: int = 0
    limit_reached: bool = False
    unschedulable: dict[str, str] = field(default_factory=dict)


_jobdb: JobDb | None = None
_bucket: TokenBucket | None = None
_durations_at: datetime | None = None  # when this process last reckoned the duration gauges


def scheduler_state(config) -> tuple[JobDb, TokenBucket]:
    """This process's job database and lease-rate bucket, made anew when the scheduling
    configuration changes (priority classes decide urgency; the bucket its rate)."""
    global _jobdb, _bucket
    scheduling = config.scheduling
    if (
        _jobdb is None
        or _jobdb.classes is not scheduling.priority_classes
        or _jobdb.floating != scheduling.floating_names
    ):
        _jobdb = JobDb(classes=scheduling.priority_classes, floating=scheduling.floating_names)
    if (
        _bucket is None
        or _bucket.rate != scheduling.maximum_scheduling_rate
        or _bucket.burst != scheduling.maximum_scheduling_burst
    ):
        _bucket = TokenBucket(
            rate=scheduling.maximum_scheduling_rate, burst=scheduling.maximum_scheduling_burst
        )
    return _jobdb, _bucket


def scheduler_state_reset() -> None:
    """Forget the in-memory job database (a new process, or tests)."""
    global _jobdb, _bucket, _durations_at
    _jobdb = _bucket = _durations_at = None
    queue_buckets_reset()


def lease_ttl(cycle_period: float) -> timedelta:
    """The scheduler lease's time to live: 3 s (three cycle periods when they are longer). A
    holder renews it every fifth of that while its cycle runs (``leader.LeaseKeeper``), so
    only a dead or stuck holder lets it lapse, and a standby takes over within about that
    and one cycle period."""
    return timedelta(seconds=max(3.0, 3 * cycle_period))


def scheduler_cycle(
    *,
    now: datetime,
    clock: Callable[[], float] = time.monotonic,
    write_behind: bool = False,
) -> CycleReport:
    """Run one cycle if this process holds the scheduler lease; see the module docstring.
    ``clock`` (seconds) paces the lease-rate bucket. The lease is renewed while the cycle
    runs, and its leases are written only if it is still ours (``leader.leader_fence``):
    when a standby has taken over meanwhile, nothing is leased and the cycle reports that
    it did not run. With ``write_behind`` (the cycle task's, per
    ``scheduling.writeBehind``), the cycle's writes run behind the next cycle's round
    (``services.lease_pipeline``): the report counts the leases planned, and the cycle's
    record the leases written."""
    config = settings.ARMADA
    ttl = lease_ttl(config.scheduling.cycle_period)
    if not leader_acquire(name=LEADER_NAME, holder=HOLDER, now=now, ttl=ttl):
        return CycleReport(ran=False)
    keeper = LeaseKeeper(
        name=LEADER_NAME, holder=HOLDER, now=now, ttl=ttl, every=ttl.total_seconds() / 5
    )
    try:
        # The collector is paused for the cycle and run once at its end
        # (``gctuning.collector_paused``).
        with keeper, collector_paused():
            pipeline = lease_pipeline(ttl.total_seconds()) if write_behind else None
            return _cycle(config, now, clock, pipeline)
    except LeaseLost as exc:
        log.warning("scheduling cycle abandoned: %s", exc)
        return CycleReport(ran=False)


def _cycle(
    config: ArmadaConfig,
    now: datetime,
    clock: Callable[[], float],
    pipeline: LeasePipeline | None = None,
) -> CycleReport:
    """The cycle's work, under the lease (``scheduler_cycle``); the steps of the module
    docstring."""
    global _durations_at
    started = time.perf_counter()
    counters_reset_if_due(
        names=[DECISIONS_COUNTER, GANG_SKIPPED_COUNTER, *RETRY_COST_COUNTERS, *STATE_COUNTERS],
        now=now,
        interval_seconds=config.metrics.job_state_metrics_reset_interval,
    )
    expired = runs_expire(now=now)
    decided = failures_decide(now=now)
    db, bucket = scheduler_state(config)
    planner = away_planner(config.scheduling)
    db.sync(now=now)
    reconciled_ms = int((time.perf_counter() - started) * 1000)
    pool_ms: dict[str, int] = {}
    scheduling = config.scheduling
    classes = scheduling.priority_classes
    lookback = scheduling.max_queue_lookback
    max_leases = bucket.available(clock(), scheduling.maximum_jobs_per_round)
    queues = list(Queue.objects.all())
    report = CycleReport(expired=expired, decided=decided)
    leases: list[tuple[str, Lease]] = []
    leased: set[str] = set()
    preempted: dict[str, str] = {}
    preempted_for: dict[str, str] = {}  # preempted job -> the job it made room for
    away: dict = {}  # job -> its away option (``core.away``), for jobs leased away from home
    rounds: list[PoolRound] = []
    pool_reasons: list[dict[str, str]] = []  # each pool's round's reasons, in order
    for q in queues:
        if q.cordoned:
            for job in db.queue_jobs(q.name, lookback=lookback):
                report.unschedulable[job.id] = REASON_CORDONED
    # Jobs waiting for their retry delay are in no queue's order (``services.jobdb``): the
    # round never sees them, so they cost no lookback and block nobody.
    for job_id, at in db.delayed_until().items():
        report.unschedulable[job_id] = reason_retry_delay(at)
    buckets = queue_buckets(scheduling, queues)
    tokens = (
        {
            name: b.available(clock(), scheduling.maximum_jobs_per_round)
            for name, b in buckets.items()
        }
        if buckets is not None
        else None
    )
    for pool in scheduling.pools:
        nodes, rows = load_nodes(pool.name, now)
        by_class: defaultdict[str, dict[str, dict[str, int]]] = defaultdict(dict)
        running, used = running_in_pool(db, pool.name, nodes, classes, by_class)
        avoid = avoidance(db, rows)
        queue_states = queue_states_of(
            queues, used, by_class, pool.name, now, pool.short_job_penalty_cutoff
        )
        limits = round_limits(scheduling, pool.name, queues, tokens)
        round_started = time.perf_counter()
        result = schedule_round(
            nodes=nodes,
            queues=queue_states,
            queued={
                q.name: avoid(db.queue_jobs(q.name, lookback=lookback, exclude=leased))
                for q in queues
                if not q.cordoned
            },
            gangs={key: list(avoid(iter(members))) for key, members in db.gang_members().items()},
            max_leases=max_leases - len(leases),
            indexed_node_labels=frozenset(scheduling.indexed_node_labels),
            running=running,
            fair_share_preemption=scheduling.fair_share_preemption,
            protected_fraction=scheduling.protected_fraction(pool.name),
            clock=time.perf_counter,
            limits=limits,
            away=planner,
        )
        pool_ms[pool.name] = int((time.perf_counter() - round_started) * 1000)
        rounds.append(
            pool_round(
                pool.name,
                result,
                queue_states,
                used,
                nodes,
                rate_limited=result.limit_reached
                and max_leases < scheduling.maximum_jobs_per_round,
            )
        )
        report.considered = max(report.considered, result.considered)
        report.limit_reached = report.limit_reached or result.limit_reached
        preempted.update(result.preempted)
        preempted_for.update(result.preempted_for)
        away.update(result.away)
        for lease in result.leases:
            leases.append((pool.name, lease))
            leased.add(lease.job_id)
            if tokens is not None:
                # The next pool's round sees what this one used of each queue's bucket.
                tokens[lease.queue] = tokens.get(lease.queue, 0) - 1
        pool_reasons.append(result.unschedulable)
        if len(leases) >= max_leases:
            break
    report.unschedulable.update(merge_pool_reasons(pool_reasons))
    for job_id in leased:
        report.unschedulable.pop(job_id, None)
    durations_due = _durations_due(now, config.metrics.refresh_interval)
    if durations_due:
        _durations_at = now
    plan = CyclePlan(
        now=now,
        started=started,
        leases=leases,
        planned=plan_runs(leases),
        away=away,
        preempted=preempted,
        preempted_for=preempted_for,
        preempted_runs={j: db.runs[j] for j in preempted if j in db.runs},
        report=report,
        reconciled_ms=reconciled_ms,
        pool_ms=pool_ms,
        rounds=rounds,
        durations_pools=[p.name for p in scheduling.pools] if durations_due else None,
        lease_name=LEADER_NAME,
        holder=HOLDER,
    )
    if pipeline is None:
        written = write_plan(plan)
        db.note_leased(written.lease_runs)  # the next sync need not read these jobs again
        _take_tokens(bucket, buckets, leases, written.leased_ids, clock)
        report.preempted = len(written.marked)
        report.leased = len(written.leased_ids)
        return report
    # Behind the next round: the previous cycle's write is waited for only now, after this
    # round was computed; this round's leases are applied at once and written meanwhile.
    settled = pipeline.settle(db)
    if settled is None:  # the previous write failed: the job database starts over
        return CycleReport(ran=False)
    db.note_leased(planned_run_rows(plan.planned, away))
    db.note_stopping(preempted)
    db.in_flight.update(plan.planned, preempted)
    _take_tokens(bucket, buckets, leases, list(plan.planned), clock)
    report.leased = len(plan.planned)
    report.preempted = len(preempted)
    pipeline.submit(plan)  # from here the writer reads the plan (and the report) alone
    return report


def _take_tokens(
    bucket: TokenBucket,
    buckets: dict[str, TokenBucket] | None,
    leases: list[tuple[str, Lease]],
    leased_ids: list[str],
    clock: Callable[[], float],
) -> None:
    """What the leases used of the lease-rate buckets, the global and each queue's."""
    bucket.take(clock(), len(leased_ids))
    if buckets is None or not leased_ids:
        return
    written = set(leased_ids)
    per_queue: dict[str, int] = defaultdict(int)
    for _, lease in leases:
        if lease.job_id in written:
            per_queue[lease.queue] += 1
    for name, n in per_queue.items():
        if name in buckets:
            buckets[name].take(clock(), n)


def _durations_due(now: datetime, interval: float) -> bool:
    """Whether this cycle reckons the duration gauges: the first of this process, and then
    once ``interval`` seconds have passed (or the clock went back)."""
    last = _durations_at
    return last is None or now < last or (now - last).total_seconds() >= interval
