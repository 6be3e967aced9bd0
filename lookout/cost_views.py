"""Lookout's retry-cost page: what failed runs and retried attempts cost over a chosen period
(core-hours, memory GiB-hours, GPU-hours), charted over time and tabled per queue, policy,
failure category and decision, with the retry yield (of the jobs retried, how many then
succeeded, and after how many retries).

Everything is read from the hourly and daily rollups ``services.retry_cost`` writes (three
grouped reads, whatever the number of failures): the last 24 hours by hour, longer periods
by day (UTC), each from the start of the bucket holding the period's start. Only queues the
viewer may watch are read; ``?queue=`` narrows to one of them. Definitions are in
docs/retry-cost.md and ``services.retry_cost``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from armada.core.errors import FieldError
from armada.models import Queue
from armada.models.retry_cost import DAY_BUCKET, HOUR_BUCKET
from armada.services.authz import watchable_queues
from armada.services.metric_history import Series
from armada.services.retry_cost import Amounts
from armada.services.retry_cost_metrics import FAILED_RUN, KINDS, RETRIED_ATTEMPT
from armada.services.retry_cost_reads import (
    GROUPINGS,
    CostRow,
    Window,
    cost_report,
    yield_report,
)
from armada.web.inputs import refusal
from lookout.access import RETRY_COST, page_view
from lookout.chart_scales import step_text
from lookout.charts import LineChart, line_chart

# period -> (length, bucket hours)
PERIODS = {
    "24h": (timedelta(days=1), HOUR_BUCKET),
    "7d": (timedelta(days=7), DAY_BUCKET),
    "30d": (timedelta(days=30), DAY_BUCKET),
}
DEFAULT_PERIOD = "7d"
KIND_NAMES = {FAILED_RUN: "Failed runs", RETRIED_ATTEMPT: "Retried attempts"}
GROUPING_NAMES = {
    "queue": "Queue",
    "policy": "Policy",
    "category": "Failure category",
    "decision": "Decision",
}
# (title, chart id, quantity, from a cost in resource-hours)
RESOURCES = (
    ("Core", "core-hours", "Core", lambda c: c.core_hours),
    ("Memory GiB", "memory-hours", "GiB", lambda c: c.memory_gib_hours),
    ("GPU", "gpu-hours", "GPU", lambda c: c.gpu_hours),
)
# A chart's time unit: the largest whose amounts reach 0.1 at the chart's highest point.
CHART_UNITS = (("hours", 1.0), ("minutes", 60.0), ("seconds", 3600.0))


def chart_unit(highest: float) -> tuple[str, float]:
    """The unit of a chart of resource-hours whose highest value is ``highest`` and the
    factor that turns hours into it: hours unless they would all read under 0.1."""
    return next(
        ((name, factor) for name, factor in CHART_UNITS if highest * factor >= 0.1),
        CHART_UNITS[0] if highest <= 0 else CHART_UNITS[-1],
    )


def hours_text(value: float) -> str:
    """Resource-hours for a table: two decimals, ``<0.01`` for a little, ``0`` for none."""
    if value == 0:
        return "0"
    if value < 0.01:
        return "<0.01"
    return f"{value:,.2f}"


@dataclass(frozen=True)
class CostCells:
    """A cost as the page's cells show it (text, formatted here once)."""

    runs: str
    core: str
    memory: str
    gpu: str

    @classmethod
    def of(cls, amounts: Amounts) -> CostCells:
        cost = amounts.cost()
        return cls(
            runs=f"{amounts.runs:,}",
            core=hours_text(cost.core_hours),
            memory=hours_text(cost.memory_gib_hours),
            gpu=hours_text(cost.gpu_hours),
        )


def _table_row(row: CostRow) -> dict:
    return {
        "key": row.key or "(none)",
        "cells": [CostCells.of(row.kind(kind)) for kind in KINDS],
    }


def _after_text(after: dict[str, int]) -> str:
    return ", ".join(f"{n} ({count} job{'s' if count != 1 else ''})" for n, count in after.items())


def _problem(field: str, message: str, value: str) -> FieldError:
    shown = value if len(value) <= 40 else value[:40] + "…"
    return FieldError(field, f"{message}, not {shown!r}")


@page_view(RETRY_COST)
def retry_cost(request: HttpRequest) -> HttpResponse:
    period = request.GET.get("period", DEFAULT_PERIOD)
    if period not in PERIODS:
        return refusal(
            request, 400, [_problem("period", f"must be one of {', '.join(PERIODS)}", period)]
        )
    allowed = watchable_queues(request.user)
    queue = request.GET.get("queue", "")
    queues: list[str] | None = None if allowed is None else list(allowed)
    choices = (
        list(allowed)
        if allowed is not None
        else list(Queue.objects.order_by("name").values_list("name", flat=True))
    )
    if queue:
        if queue not in choices:
            problem = _problem("queue", "must be a queue you may watch", queue)
            return refusal(request, 400, [problem])
        queues = [queue]
    now, tz = timezone.now(), timezone.get_current_timezone()
    length, bucket_hours = PERIODS[period]
    window = Window(since=now - length, until=now, bucket_hours=bucket_hours)
    report = cost_report(window=window, queues=queues)
    starts = window.starts()

    def chart(title: str, chart_id: str, quantity: str, measure) -> LineChart:
        hours = {kind: [measure(a.cost()) for a in report.series[kind]] for kind in KINDS}
        unit, factor = chart_unit(max((max(v, default=0) for v in hours.values()), default=0))
        series = [
            # Six significant digits: sums of floats gather noise digits; a millionth stays.
            Series(label=KIND_NAMES[kind], values=[float(f"{v * factor:.6g}") for v in hours[kind]])
            for kind in KINDS
        ]
        return line_chart(
            title=f"{title}-{unit} of failed runs and retried attempts",
            chart_id=chart_id,
            quantity=f"{quantity}-{unit}",
            whole=False,
            starts=starts,
            step=window.step,
            end=now,
            series=series,
            order=[KIND_NAMES[k] for k in KINDS],
            tz=tz,
        )

    yields = []
    for row in yield_report(window=window, queues=queues):
        share = row["succeededJobs"] / row["retriedJobs"] if row["retriedJobs"] else None
        yields.append(
            {
                **row,
                "share": f"{share:.0%}" if share is not None else "–",
                "after": _after_text(row["succeededAfter"]),
            }
        )
    totals = {kind: CostCells.of(report.totals[kind]) for kind in KINDS}
    return render(
        request,
        "lookout/cost.html",
        {
            "period": period,
            "periods": list(PERIODS),
            "queue": queue,
            "queue_choices": choices,
            "no_queue": allowed == [],
            "now": now,
            "range_start": window.first,
            "date_format": "M j H:i" if bucket_hours == HOUR_BUCKET else "M j",
            "time_zone": timezone.get_current_timezone_name(),
            "bucket_step": step_text(window.step),
            "has_history": True,
            "plain_totals": True,
            "charts": [chart(*resource) for resource in RESOURCES],
            "totals": [(KIND_NAMES[kind], totals[kind]) for kind in KINDS],
            "kinds": [KIND_NAMES[kind] for kind in KINDS],
            "tables": [
                {
                    "id": grouping,
                    "title": GROUPING_NAMES[grouping],
                    "rows": [_table_row(r) for r in report.tables[grouping]],
                }
                for grouping in GROUPINGS
            ],
            "yields": yields,
        },
    )
