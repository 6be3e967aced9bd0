"""What retries cost, counted in the transaction of the change that costs it.

Definitions (docs/retry-cost.md says them for users):
- A run's **cost** is what it requested (``Run.requests``, milli-units) held from its lease
  to its end (``core.resource_cost.run_cost``): core-hours, memory GiB-hours, GPU-hours.
- A **failed run** (kind ``failed_run``) is a genuine failure the scheduler decided (a failed
  or lease-expired run, retried or not). It is counted when it is decided
  (``services.decisions``), labelled with its job's queue, the policy and decision label of
  its decision trail (``policy`` ``""`` when none decided it) and its failure category.
- A **retried attempt** (kind ``retried_attempt``) is a run that exists because a failure was
  retried: a run of a job that had been retried before the run ended (``Job.retry_count``
  above 0). It is counted when it ends, whatever its outcome, and labelled with the failure
  whose retry it is (the job's latest retried failure before it): that failure's queue,
  policy, category and decision label (``retry``). A retried attempt that fails is later
  counted as a failed run too: the two kinds overlap and are not to be added up.
- **Retry yield** (``services.retry_yield`` has the definitions): a retried job counts once
  per category and rule, in the hour of its first retry for them; it counts as succeeded
  when the job succeeds, on the row of its retries in all.

What is written, under the event-log lock, after the transaction's events (the lock order of
docs/concurrency.md, step 6: like every database counter):
- the Prometheus counters ``armada_scheduler_retry_cost_*_total{queue,policy,category,
  decision,kind}`` (``COUNTERS``; whole numbers in the units below, which ``armada.metrics``
  scales to seconds-based units when it serves them);
- the rollups ``RetryCostBucket`` and ``RetryYieldBucket``, one row per hour and one per day
  (UTC) per label set, added to with one ``INSERT ... ON CONFLICT DO UPDATE`` per table.

Units kept in the database: millicore-seconds, KiB-seconds of memory, milli-GPU-seconds
(a bigint holds 2.5 trillion core-hours and 2.4 billion GiB-hours of them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from django.db import connection

from armada.core.resource_cost import Cost, run_cost
from armada.core.states import JobState, RunState
from armada.models import Job, RetryCostBucket, RetryYieldBucket, Run
from armada.models.retry_cost import DAY_BUCKET, HOUR_BUCKET
from armada.services.counters import counters_add
from armada.services.events import lock_event_log
from armada.services.retry_cost_metrics import (
    CORE_COUNTER,
    FAILED_RUN,
    GPU_COUNTER,
    LABELS,
    MEMORY_COUNTER,
    RETRIED_ATTEMPT,
    RUNS_COUNTER,
)

BUCKETS = (HOUR_BUCKET, DAY_BUCKET)
UPSERT_CHUNK = 500
_SECONDS_PER_HOUR = 3600.0
_KIB_PER_GIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class Amounts:
    """Whole numbers in the stored units; ``runs`` counts the runs added."""

    runs: int = 0
    cpu_milli_seconds: int = 0
    memory_kib_seconds: int = 0
    gpu_milli_seconds: int = 0

    def __add__(self, other: Amounts) -> Amounts:
        return Amounts(
            self.runs + other.runs,
            self.cpu_milli_seconds + other.cpu_milli_seconds,
            self.memory_kib_seconds + other.memory_kib_seconds,
            self.gpu_milli_seconds + other.gpu_milli_seconds,
        )

    @classmethod
    def of_cost(cls, cost: Cost, runs: int = 1) -> Amounts:
        return cls(
            runs=runs,
            cpu_milli_seconds=round(cost.core_hours * _SECONDS_PER_HOUR * 1000),
            memory_kib_seconds=round(cost.memory_gib_hours * _SECONDS_PER_HOUR * _KIB_PER_GIB),
            gpu_milli_seconds=round(cost.gpu_hours * _SECONDS_PER_HOUR * 1000),
        )

    def cost(self) -> Cost:
        return Cost(
            core_hours=self.cpu_milli_seconds / 1000 / _SECONDS_PER_HOUR,
            memory_gib_hours=self.memory_kib_seconds / _KIB_PER_GIB / _SECONDS_PER_HOUR,
            gpu_hours=self.gpu_milli_seconds / 1000 / _SECONDS_PER_HOUR,
        )


ZERO_AMOUNTS = Amounts()


@dataclass(frozen=True)
class Seen:
    """A run and its job as they were when a transaction first touched them."""

    finished_at: datetime | None
    decided_at: datetime | None
    job_state: str


def seen(run: Run, job: Job) -> Seen:
    return Seen(finished_at=run.finished_at, decided_at=run.decided_at, job_state=job.state)


class Touched(Protocol):
    """What ``services.runs.Changes`` holds of one transaction."""

    runs: dict[str, Run]
    jobs: dict[str, Job]
    seen: dict[str, Seen]


def run_seconds(run: Run, *, end: datetime | None = None) -> float:
    """How long the run held its requests: from its lease to its end (or ``end``)."""
    finish = run.finished_at or end
    if finish is None or run.leased_at is None:
        return 0.0
    return (finish - run.leased_at).total_seconds()


def cost_of(run: Run, *, end: datetime | None = None) -> Cost:
    return run_cost(run.requests or {}, run_seconds(run, end=end))


def bucket_start(moment: datetime, hours: int) -> datetime:
    """The UTC hour or day (``hours`` 1 or 24) that holds ``moment``."""
    utc = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return utc.replace(hour=0) if hours == DAY_BUCKET else utc


def rule_number(trail: Mapping[str, Any]) -> int:
    """The trail's rule numbered from 1; 0 when the policy's defaultAction decided."""
    index = trail.get("ruleIndex")
    return int(index) + 1 if isinstance(index, int) else 0


@dataclass(frozen=True)
class _Retried:
    """A retried failure of a job, as the yield and the attempts' labels need it."""

    id: str
    job_id: str
    finished_at: datetime
    category: str
    rule: int
    policy: str
    decision: str


def _retried_runs(job_ids: Iterable[str]) -> dict[str, list[_Retried]]:
    """Each job's retried failures, oldest first (the rows as this transaction wrote them)."""
    wanted = sorted(set(job_ids))
    out: dict[str, list[_Retried]] = defaultdict(list)
    if not wanted:
        return out
    rows = Run.objects.filter(
        job_id__any=wanted, retryable=True, finished_at__isnull=False
    ).values_list("id", "job_id", "finished_at", "failure_category", "decision")
    for run_id, job_id, finished_at, category, trail in rows:
        trail = trail or {}
        out[job_id].append(
            _Retried(
                id=run_id,
                job_id=job_id,
                finished_at=finished_at,
                category=category,
                rule=rule_number(trail),
                policy=trail.get("policy") or "",
                decision=trail.get("decision") or "retry",
            )
        )
    for runs in out.values():
        runs.sort(key=lambda r: (r.finished_at, r.id))
    return out


def _firsts(retried: Sequence[_Retried]) -> dict[tuple[str, int], _Retried]:
    """The first retried failure of each (category, rule)."""
    firsts: dict[tuple[str, int], _Retried] = {}
    for run in retried:
        firsts.setdefault((run.category, run.rule), run)
    return firsts


class _Tally:
    def __init__(self) -> None:
        self.costs: dict[tuple[str, ...], Amounts] = defaultdict(Amounts)
        self.yields: dict[tuple[str, str, int, int, datetime], tuple[int, int]] = defaultdict(
            lambda: (0, 0)
        )
        self.times: dict[tuple[str, ...], list[tuple[datetime, Amounts]]] = defaultdict(list)

    def cost(self, labels: tuple[str, ...], at: datetime, amounts: Amounts) -> None:
        self.costs[labels] = self.costs[labels] + amounts
        self.times[labels].append((at, amounts))

    def yielded(
        self,
        *,
        queue: str,
        category: str,
        rule: int,
        retries: int,
        at: datetime,
        retried: int,
        succeeded: int,
    ) -> None:
        key = (queue, category, rule, retries, at)
        old = self.yields[key]
        self.yields[key] = (old[0] + retried, old[1] + succeeded)

    def __bool__(self) -> bool:
        return bool(self.costs or self.yields)


def record(changes: Touched) -> None:
    """Count the cost and yield of what ``changes`` did, in its transaction (called by
    ``Changes.write`` after its events and counters); see the module docstring."""
    decided: list[Run] = []
    ended: list[Run] = []
    succeeded: dict[str, Job] = {}
    for run in changes.runs.values():
        was = changes.seen.get(run.id)
        job = changes.jobs.get(run.job_id)
        if was is None or job is None:
            continue
        if (
            was.decided_at is None
            and run.decided_at is not None
            and run.state in (RunState.FAILED, RunState.LEASE_EXPIRED)
        ):
            decided.append(run)
        if was.finished_at is None and run.finished_at is not None and (job.retry_count or 0):
            ended.append(run)
        if (
            was.job_state != JobState.SUCCEEDED
            and job.state == JobState.SUCCEEDED
            and (job.retry_count or 0)
        ):
            succeeded[job.id] = job
    if not (decided or ended or succeeded):
        return
    retried = _retried_runs(
        [r.job_id for r in decided if r.retryable] + [r.job_id for r in ended] + list(succeeded)
    )
    tally = _Tally()
    for run in decided:
        job = changes.jobs[run.job_id]
        trail = run.decision or {}
        at = run.finished_at or run.decided_at
        labels = (
            job.queue_id,
            trail.get("policy") or "",
            run.failure_category,
            trail.get("decision") or "",
            FAILED_RUN,
        )
        tally.cost(labels, at, Amounts.of_cost(cost_of(run)))
        if run.retryable:
            first = _firsts(retried.get(job.id, ())).get((run.failure_category, rule_number(trail)))
            if first is not None and first.id == run.id:
                tally.yielded(
                    queue=job.queue_id,
                    category=run.failure_category,
                    rule=first.rule,
                    retries=0,
                    at=at,
                    retried=1,
                    succeeded=0,
                )
    for run in ended:
        job = changes.jobs[run.job_id]
        cause = [r for r in retried.get(job.id, ()) if r.id < run.id]
        if not cause:
            continue  # retried by hand-made data with no trail: nothing to attribute it to
        latest = cause[-1]
        labels = (job.queue_id, latest.policy, latest.category, latest.decision, RETRIED_ATTEMPT)
        tally.cost(labels, run.finished_at, Amounts.of_cost(cost_of(run)))
    for job in succeeded.values():
        for first in _firsts(retried.get(job.id, ())).values():
            tally.yielded(
                queue=job.queue_id,
                category=first.category,
                rule=first.rule,
                retries=job.retry_count,
                at=first.finished_at,
                retried=0,
                succeeded=1,
            )
    if tally:
        _write(tally)


def _write(tally: _Tally) -> None:
    lock_event_log()  # the counters' and rollups' rows are written only under it
    for name, field in (
        (CORE_COUNTER, "cpu_milli_seconds"),
        (MEMORY_COUNTER, "memory_kib_seconds"),
        (GPU_COUNTER, "gpu_milli_seconds"),
        (RUNS_COUNTER, "runs"),
    ):
        counters_add(
            name=name,
            increments={
                tuple(sorted(zip(LABELS, labels, strict=True))): getattr(amounts, field)
                for labels, amounts in tally.costs.items()
            },
        )
    cost_rows: dict[tuple, Amounts] = defaultdict(Amounts)
    for labels, entries in tally.times.items():
        for at, amounts in entries:
            for hours in BUCKETS:
                key = (hours, bucket_start(at, hours), *labels)
                cost_rows[key] = cost_rows[key] + amounts
    upsert_add(
        RetryCostBucket,
        keys=("bucket_hours", "start", *LABELS),
        amounts=("runs", "cpu_milli_seconds", "memory_kib_seconds", "gpu_milli_seconds"),
        rows=[
            (*key, a.runs, a.cpu_milli_seconds, a.memory_kib_seconds, a.gpu_milli_seconds)
            for key, a in sorted(cost_rows.items(), key=lambda kv: _sort_key(kv[0]))
        ],
    )
    yield_rows: dict[tuple, tuple[int, int]] = defaultdict(lambda: (0, 0))
    for (queue, category, rule, retries, at), (retried, succeeded) in tally.yields.items():
        for hours in BUCKETS:
            key = (hours, bucket_start(at, hours), queue, category, rule, retries)
            old = yield_rows[key]
            yield_rows[key] = (old[0] + retried, old[1] + succeeded)
    upsert_add(
        RetryYieldBucket,
        keys=("bucket_hours", "start", "queue", "category", "rule", "retries"),
        amounts=("retried_jobs", "succeeded_jobs"),
        rows=[
            (*key, retried, succeeded)
            for key, (retried, succeeded) in sorted(
                yield_rows.items(), key=lambda kv: _sort_key(kv[0])
            )
        ],
    )


def _sort_key(key: tuple) -> tuple:
    # Rows are added to in one order (their unique key) so that two writers, were they ever
    # not serialised by the event-log lock, would still take the row locks in the same order.
    return tuple(str(part) if not isinstance(part, int) else f"{part:012d}" for part in key)


def upsert_add(
    model, *, keys: Sequence[str], amounts: Sequence[str], rows: Sequence[tuple]
) -> None:
    """Insert ``rows`` (key values, then amounts) or add their amounts to the existing rows
    of the same key: one statement per chunk (PostgreSQL and SQLite spell it alike)."""
    if not rows:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    columns = [*keys, *amounts]
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    conflict = ", ".join(connection.ops.quote_name(k) for k in keys)
    updates = ", ".join(
        f"{connection.ops.quote_name(a)} = {table}.{connection.ops.quote_name(a)} "
        f"+ excluded.{connection.ops.quote_name(a)}"
        for a in amounts
    )
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    start_index = keys.index("start")
    with connection.cursor() as cursor:
        for begin in range(0, len(rows), UPSERT_CHUNK):
            chunk = rows[begin : begin + UPSERT_CHUNK]
            params: list = []
            for row in chunk:
                values = list(row)
                values[start_index] = connection.ops.adapt_datetimefield_value(values[start_index])
                params.extend(values)
            cursor.execute(
                f"INSERT INTO {table} ({quoted}) VALUES {', '.join([one] * len(chunk))} "
                f"ON CONFLICT ({conflict}) DO UPDATE SET {updates}",
                params,
            )
