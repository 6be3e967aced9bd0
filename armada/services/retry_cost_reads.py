"""Reading what retries cost: Lookout's cost page (from the rollups) and one job's retries
(from its runs). Definitions: ``services.retry_cost`` and ``services.retry_yield``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import QuerySet, Sum

from armada.core.resource_cost import ZERO, Cost
from armada.core.states import RunState
from armada.models import Job, RetryCostBucket, RetryYieldBucket, Run
from armada.services.retry_cost import Amounts, bucket_start, cost_of
from armada.services.retry_cost_metrics import KINDS
from armada.services.retry_yield import yield_rows
from armada.services.retry_yield_rollup import rollup_groups

GROUPINGS = ("queue", "policy", "category", "decision")
_AMOUNTS = ("runs", "cpu_milli_seconds", "memory_kib_seconds", "gpu_milli_seconds")


@dataclass(frozen=True)
class Window:
    """Whole buckets of ``bucket_hours`` (1 or 24, UTC) from the one holding ``since`` to the
    one holding ``until`` (still filling when ``until`` is now)."""

    since: datetime
    until: datetime
    bucket_hours: int

    @property
    def first(self) -> datetime:
        return bucket_start(self.since, self.bucket_hours)

    @property
    def step(self) -> timedelta:
        return timedelta(hours=self.bucket_hours)

    def starts(self) -> list[datetime]:
        starts, moment = [], self.first
        while moment <= self.until:
            starts.append(moment)
            moment += self.step
        return starts


def _in_window(model, window: Window, queues: Sequence[str] | None) -> QuerySet:
    rows = model.objects.filter(
        bucket_hours=window.bucket_hours, start__gte=window.first, start__lte=window.until
    )
    return rows if queues is None else rows.filter(queue__in=list(queues))


def _sum_list() -> list[Sum]:
    return [Sum(name) for name in _AMOUNTS]


@dataclass
class CostRow:
    """One value of a grouping (a queue, say) with its cost per kind."""

    key: str
    by_kind: dict[str, Amounts] = field(default_factory=dict)

    def kind(self, kind: str) -> Amounts:
        return self.by_kind.get(kind, Amounts())

    @property
    def failed_run(self) -> Amounts:
        return self.kind("failed_run")

    @property
    def retried_attempt(self) -> Amounts:
        return self.kind("retried_attempt")


@dataclass
class CostReport:
    """The cost page's numbers: totals per kind, per bucket and kind, per grouping value."""

    window: Window
    totals: dict[str, Amounts]
    series: dict[str, list[Amounts]]  # kind -> one per bucket of ``window.starts()``
    tables: dict[str, list[CostRow]]  # grouping -> rows, most core-hours first


def cost_report(*, window: Window, queues: Sequence[str] | None) -> CostReport:
    """Two grouped reads of the cost rollup: per bucket and kind, and per label set. The sums
    are added up in lists (a few thousand ``Amounts`` would cost more than the reads)."""
    rows = _in_window(RetryCostBucket, window, queues)
    starts = window.starts()
    index = {start: i for i, start in enumerate(starts)}
    sums = [[[0] * 4 for _ in starts] for _ in KINDS]
    kind_index = {kind: i for i, kind in enumerate(KINDS)}
    for row in rows.values_list("start", "kind").annotate(*_sum_list()).order_by():
        i, k = index.get(row[0]), kind_index.get(row[1])
        if i is not None and k is not None:
            cell = sums[k][i]
            for j in range(4):
                cell[j] += int(row[2 + j] or 0)
    series = {kind: [Amounts(*cell) for cell in sums[k]] for kind, k in kind_index.items()}
    totals_list = [[0] * 4 for _ in KINDS]
    grouped: dict[str, dict[str, list[list[int]]]] = {g: {} for g in GROUPINGS}
    for row in rows.values_list(*GROUPINGS, "kind").annotate(*_sum_list()).order_by():
        k = kind_index.get(row[4])
        if k is None:
            continue
        amounts = [int(v or 0) for v in row[5:9]]
        for j in range(4):
            totals_list[k][j] += amounts[j]
        for g, grouping in enumerate(GROUPINGS):
            per_kind = grouped[grouping].get(row[g])
            if per_kind is None:
                per_kind = grouped[grouping][row[g]] = [[0] * 4 for _ in KINDS]
            for j in range(4):
                per_kind[k][j] += amounts[j]
    totals = {kind: Amounts(*totals_list[k]) for kind, k in kind_index.items()}
    tables = {
        grouping: sorted(
            (
                CostRow(
                    key=key,
                    by_kind={
                        kind: Amounts(*per_kind[k])
                        for kind, k in kind_index.items()
                        if any(per_kind[k])
                    },
                )
                for key, per_kind in entries.items()
            ),
            key=lambda r: (-sum(a.cpu_milli_seconds for a in r.by_kind.values()), r.key),
        )
        for grouping, entries in grouped.items()
    }
    return CostReport(window=window, totals=totals, series=series, tables=tables)


def yield_report(*, window: Window, queues: Sequence[str] | None) -> list[dict[str, Any]]:
    """The retry-yield rows of ``services.retry_yield`` for the window, from the rollup."""
    return yield_rows(rollup_groups(_in_window(RetryYieldBucket, window, queues)))


@dataclass(frozen=True)
class JobRetryCost:
    """One job's retries: how many, what its retried attempts cost (a running one up to
    now), and how its latest attempt stands (``succeeded``, ``running``, ``failed``...)."""

    retries: int
    attempts: int
    cost: Cost
    last_state: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "retries": self.retries,
            "retriedAttempts": self.attempts,
            "cost": self.cost.as_dict(),
            "lastAttempt": self.last_state,
        }

    def sentence(self) -> str:
        """ "its 3 retries used 1.2 core-hours (0.5 GiB-hours, 0 GPU-hours); the last attempt
        succeeded"; "" for a job never retried."""
        if not self.attempts:
            return ""
        counted = f"{self.retries} retries" if self.retries != 1 else "1 retry"
        used = (
            f"used {hours_text(self.cost.core_hours, 'core')} "
            f"({hours_text(self.cost.memory_gib_hours, 'GiB')}, "
            f"{hours_text(self.cost.gpu_hours, 'GPU')})"
        )
        running = " so far" if self.last_state in ACTIVE_STATES else ""
        return (
            f"its {counted} {used}{running}; the last attempt {last_attempt_text(self.last_state)}"
        )


ACTIVE_STATES = (RunState.LEASED, RunState.PENDING, RunState.RUNNING)


_UNITS = (("hours", 1.0), ("minutes", 60.0), ("seconds", 3600.0))


def hours_text(value: float, what: str) -> str:
    """An amount of resource-hours as a person reads it, in the largest unit that keeps it
    at 0.1 or more: ``1.2 core-hours``, ``4.5 core-minutes``, ``0.25 core-seconds``,
    ``0 GPU-hours``; never in exponent form."""
    if value <= 0:
        return f"0 {what}-hours"
    unit, amount = next(
        ((name, value * factor) for name, factor in _UNITS if value * factor >= 0.1),
        ("seconds", value * 3600),
    )
    if amount >= 10:
        number = f"{amount:,.0f}"
    elif amount >= 0.1:
        number = f"{amount:.1f}".removesuffix(".0")
    elif amount >= 0.01:
        number = f"{amount:.2f}"
    else:
        return f"under 0.01 {what}-seconds"
    return f"{number} {what}-{unit}"


def job_retry_cost(*, job: Job, now: datetime, runs: Sequence[Run] | None = None) -> JobRetryCost:
    """The retried attempts of ``job`` (its runs after its first retried failure) and what
    they cost; ``runs`` when the caller has read them already (any order)."""
    runs = sorted(runs if runs is not None else Run.objects.filter(job=job), key=lambda r: r.id)
    first = next((i for i, r in enumerate(runs) if r.retryable), None)
    attempts = runs[first + 1 :] if first is not None else []
    cost = ZERO
    for run in attempts:
        cost += cost_of(run, end=now)
    last = attempts[-1].state if attempts else ""
    return JobRetryCost(
        retries=job.retry_count or 0, attempts=len(attempts), cost=cost, last_state=last
    )


def last_attempt_text(state: str) -> str:
    """How a person reads a run's state as the outcome of a last attempt."""
    return {
        RunState.SUCCEEDED: "succeeded",
        RunState.RUNNING: "is running",
        RunState.PENDING: "is starting",
        RunState.LEASED: "is starting",
        RunState.FAILED: "failed",
        RunState.LEASE_EXPIRED: "was lost with its executor",
        RunState.LEASE_RETURNED: "was returned before it started",
        RunState.PREEMPTED: "was preempted",
        RunState.CANCELLED: "was cancelled",
    }.get(state, state.replace("_", " "))
