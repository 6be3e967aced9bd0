"""How long queued jobs have waited and active runs have run, at the time of the cycle:
Armada's ``armada_job_queued_seconds`` and ``armada_job_run_time_seconds`` (histograms, with
``_min``, ``_max`` and ``_median`` gauges), which its scheduler reckons over its job database
when it reports.

Here the scheduler reckons them once per cycle, with two grouped reads (no scrape reads
them): queued jobs grouped by queue, priority class and age bucket; active runs (leased,
pending, running) grouped by pool, queue, priority class and age bucket. The bucket of a row
is a ``CASE`` over its timestamp against the cycle's ``now`` less each bound, which both
PostgreSQL and SQLite evaluate; each group also gives its count, oldest and newest timestamp
and summed age. The rows are stored with the cycle (``services.metric_gauges``).

- A queued job's age runs from when it last became queued (``Job.last_transition_at``: its
  submission, or the end of its latest run), as Armada's does; a run's from its lease.
- A queued job may run in every pool here, so it is reported in each, with
  ``accounting_role`` ``primary`` for the first configured pool and ``secondary`` for the
  others (as ``armada_queue_resource_queued``).
- ``_min`` and ``_max`` are exact. ``_median`` is estimated from the buckets: the middle
  observation's bucket, interpolated linearly between its bounds by rank and held within the
  group's exact minimum and maximum (exact for a group of one; otherwise within its bucket).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db.models import (
    Case,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    IntegerField,
    Max,
    Min,
    Sum,
    Value,
    When,
)

from armada.core.states import JobState
from armada.services.jobdb import ACTIVE_RUN_STATES
from armada.services.metric_buckets import INF, bucket_label

QUEUED = "armada_job_queued_seconds"
RUN_TIME = "armada_job_run_time_seconds"
QUEUED_LABELS = ("pool", "priorityClass", "queueName", "queue", "accounting_role")
RUN_LABELS = ("pool", "priorityClass", "queueName", "queue")
# Armada's buckets for both: a minute up to a week.
DURATION_BUCKETS = (60.0, 600.0, 1800.0, 3600.0, 10800.0, 43200.0, 86400.0, 172800.0, 604800.0)
HELP = {
    QUEUED: "Queued time for Armada jobs",
    QUEUED + "_min": "Min queue time for Armada jobs",
    QUEUED + "_max": "Max queue time for Armada jobs",
    QUEUED + "_median": "Median queue time for Armada jobs",
    RUN_TIME: "Run time for Armada jobs",
    RUN_TIME + "_min": "Min run time for Armada jobs",
    RUN_TIME + "_max": "Max run time for Armada jobs",
    RUN_TIME + "_median": "Median run time for Armada jobs",
}
STORED = [
    f"{name}{part}"
    for name in (QUEUED, RUN_TIME)
    for part in ("_bucket", "_sum", "_count", "_min", "_max", "_median")
]

Rows = dict[str, list[tuple[dict[str, str], float]]]


def _seconds(value: object) -> float:
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value or 0) / 1e6  # SQLite sums durations as microseconds


def _grouped(queryset, column: str, keys: Sequence[str], now: datetime) -> list[dict]:
    bucket = Case(
        *(
            When(**{f"{column}__gte": now - timedelta(seconds=b)}, then=Value(i))
            for i, b in enumerate(DURATION_BUCKETS)
        ),
        default=Value(len(DURATION_BUCKETS)),
        output_field=IntegerField(),
    )
    age = ExpressionWrapper(Value(now) - F(column), output_field=DurationField())
    return list(
        queryset.annotate(bucket=bucket, age=age)
        .values(*keys, "bucket")
        .annotate(n=Count("pk"), oldest=Min(column), newest=Max(column), total=Sum("age"))
        .order_by()
    )


def median_estimate(counts: Sequence[int], low: float, high: float) -> float:
    """The median from per-bucket counts (``DURATION_BUCKETS`` then +Inf), held within the
    exact ``low`` and ``high`` of the group (see the module docstring)."""
    total = sum(counts)
    if total <= 0:
        return 0.0
    rank, seen = (total + 1) / 2, 0
    for i, n in enumerate(counts):
        if n and seen + n >= rank:
            lo = DURATION_BUCKETS[i - 1] if i else 0.0
            hi = DURATION_BUCKETS[i] if i < len(DURATION_BUCKETS) else high
            lo, hi = max(lo, low), min(hi, high)
            return lo + (hi - lo) * (rank - seen - 0.5) / n if n > 1 else (lo + hi) / 2
        seen += n
    return high


def _family(rows: Rows, name: str, groups: dict[tuple, dict], labels: Sequence[str]) -> None:
    for key in sorted(groups):
        g = groups[key]
        base = dict(zip(labels, key, strict=True))
        cumulative = 0
        for i, bound in enumerate(DURATION_BUCKETS):
            cumulative += g["counts"][i]
            rows[f"{name}_bucket"].append(({**base, "le": bucket_label(bound)}, cumulative))
        rows[f"{name}_bucket"].append(({**base, "le": INF}, cumulative + g["counts"][-1]))
        rows[f"{name}_sum"].append((base, g["sum"]))
        rows[f"{name}_count"].append((base, sum(g["counts"])))
        rows[f"{name}_min"].append((base, g["min"]))
        rows[f"{name}_max"].append((base, g["max"]))
        rows[f"{name}_median"].append((base, median_estimate(g["counts"], g["min"], g["max"])))


def _gather(found: list[dict], key_of, now: datetime) -> dict[tuple, dict]:
    groups: dict[tuple, dict] = {}
    for r in found:
        g = groups.setdefault(
            key_of(r),
            {"counts": [0] * (len(DURATION_BUCKETS) + 1), "sum": 0.0, "min": None, "max": 0.0},
        )
        g["counts"][r["bucket"]] += r["n"]
        g["sum"] += _seconds(r["total"])
        youngest = max(0.0, (now - r["newest"]).total_seconds())
        oldest = max(0.0, (now - r["oldest"]).total_seconds())
        g["min"] = youngest if g["min"] is None else min(g["min"], youngest)
        g["max"] = max(g["max"], oldest)
    return groups


def duration_gauge_rows(*, now: datetime, pools: Sequence[str]) -> Rows:
    """The rows of both families at ``now`` (two grouped queries)."""
    from armada.models import Job, Run

    rows: Rows = {name: [] for name in STORED}
    queued = _grouped(
        Job.objects.filter(state=JobState.QUEUED),
        "last_transition_at",
        ("queue", "priority_class"),
        now,
    )
    groups = _gather(queued, lambda r: (r["priority_class"], r["queue"]), now)
    per_pool = {}
    for i, pool in enumerate(pools):
        role = "primary" if i == 0 else "secondary"
        for (pc, queue), g in groups.items():
            per_pool[(pool, pc, queue, queue, role)] = g
    _family(rows, QUEUED, per_pool, QUEUED_LABELS)
    running = _grouped(
        Run.objects.filter(state__in=ACTIVE_RUN_STATES),
        "leased_at",
        ("pool", "job__queue", "job__priority_class"),
        now,
    )
    run_groups = _gather(
        running,
        lambda r: (r["pool"], r["job__priority_class"], r["job__queue"], r["job__queue"]),
        now,
    )
    _family(rows, RUN_TIME, run_groups, RUN_LABELS)
    return rows
