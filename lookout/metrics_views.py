"""Lookout's decision-metrics page: retry and fail decisions per policy and per queue, failure
categories and gang skips over time (from ``MetricSample`` history, drawn as SVG line
charts with a data table each), beside the counters' current values (``MetricCounter``).

The charted range is the chosen period (``?period=``, 6 h unless asked) cut to the history
there is, so a short history fills the charts. Each point counts what one bucket added (not
a running total). The history is sampled every minute, so the charts end at the last
sample: the page says when that was, shows beside each charted total the total in the range
up to now (with what the counters gained since the last sample: an increase over the range,
worded so, never called the counter's value, which counts from the counter's start), and
warns when the sampler seems stopped.

A viewer who may not watch every queue (``watch_all_events``) sees only the series and
counters labelled with a queue they may watch (read so in SQL); the failure categories, gang
skips and other counters with no queue label count every queue, so they are not shown to
them (the page says why, and where their queues' failed runs per category are).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from armada.core.errors import FieldError
from armada.metrics import DB_COUNTERS
from armada.models import MetricCounter
from armada.services.authz import watchable_queues
from armada.services.metric_history import (
    SAMPLE_PERIOD,
    Series,
    lines_of,
    of_queues,
    sampling_status,
    series_increases,
    unsampled_increases,
)
from armada.web.inputs import refusal
from lookout.access import DECISION_METRICS, page_view
from lookout.chart_scales import buckets, fit_range, step_text
from lookout.charts import LineChart, line_chart

DECISIONS = "armada_scheduler_retry_policy_decisions_total"
CATEGORIES = "armada_executor_job_failure_category_total"
GANG_SKIPS = "armada_scheduler_retry_policy_gang_skipped_total"
PERIODS = {
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
}
DEFAULT_PERIOD = "6h"
STALE_AFTER = 3  # sampling periods without a sample: the sampler may be stopped
OUTCOMES = ("retry", "fail")

LineOf = Callable[[dict], str | None]


def _outcome(labels: dict) -> str:
    return "retry" if labels.get("decision") == "retry" else "fail"


class _History:
    """One counter's increases per bucket and unsampled gains, per series (only those of
    ``queues`` when given), grouped into the lines of a chart on demand."""

    def __init__(
        self,
        name: str,
        *,
        starts: list[datetime],
        step: timedelta,
        queues: list[str] | None,
    ) -> None:
        self.buckets = len(starts)
        self.per_series = series_increases(
            name=name, start=starts[0], end=starts[-1] + step, buckets=self.buckets, queues=queues
        )
        self.unsampled = unsampled_increases(name=name, queues=queues)

    def keys(self, key_of: LineOf) -> list[str]:
        found = {key_of(labels) for labels, _ in self.per_series.values()}
        found |= {key_of(labels) for labels, _ in self.unsampled.values()}
        return sorted(k for k in found if k is not None)

    def lines(self, line_of: LineOf) -> tuple[list[Series], dict[str, int]]:
        live: dict[str, int] = {}
        for labels, gained in self.unsampled.values():
            if (line := line_of(labels)) is not None:
                live[line] = live.get(line, 0) + gained
        return lines_of(self.per_series, line_of=line_of, buckets=self.buckets), live


def _counters(queues: list[str] | None) -> tuple[list[dict], list[str]]:
    """The counters' current values (only rows of ``queues`` when given), and the names of
    those not shown: with no queue label, they cannot be narrowed to ``queues``."""
    shown, hidden = [], []
    for name, (help_text, label_names) in DB_COUNTERS.items():
        if queues is not None and "queue" not in label_names:
            hidden.append(name)
            continue
        found = of_queues(MetricCounter.objects.filter(name=name), queues).order_by("labels_key")
        rows = [([str(c.labels.get(label, "")) for label in label_names], c.value) for c in found]
        shown.append({"name": name, "help": help_text, "labels": label_names, "rows": rows})
    return shown, hidden


@page_view(DECISION_METRICS)
def decision_metrics(request: HttpRequest) -> HttpResponse:
    period = request.GET.get("period", DEFAULT_PERIOD)
    if period not in PERIODS:
        shown = period if len(period) <= 40 else period[:40] + "…"
        problem = FieldError("period", f"must be one of {', '.join(PERIODS)}, not {shown!r}")
        return refusal(request, 400, [problem])
    now, tz = timezone.now(), timezone.get_current_timezone()
    status = sampling_status(names=(DECISIONS, CATEGORIES, GANG_SKIPS), start=now - PERIODS[period])
    time_range = fit_range(
        now=now,
        period=PERIODS[period],
        first_sample=status.first_in_period,
        covers=status.covers_period,
    )
    starts, step = buckets(time_range, tz)
    allowed = watchable_queues(request.user)
    every = allowed is None  # may watch every queue: the cluster-wide counters too

    def history(name: str) -> _History:
        return _History(name, starts=starts, step=step, queues=allowed)

    def chart(title: str, chart_id: str, quantity: str, lines, order=()) -> LineChart:
        series, live = lines
        return line_chart(
            title=title,
            chart_id=chart_id,
            quantity=quantity,
            starts=starts,
            step=step,
            end=now,
            series=series,
            live=live,
            order=order,
            tz=tz,
        )

    decisions = history(DECISIONS)

    def decision_charts(label: str, kind: str) -> list[LineChart]:
        """A chart of retries and fails per value of ``label`` (policy or queue)."""

        def key_of(labels: dict) -> str:
            return labels.get(label) or "(none)"

        def outcomes_of(key: str) -> LineOf:
            return lambda labels: _outcome(labels) if key_of(labels) == key else None

        return [
            chart(
                f"{kind} {key}: decisions",
                f"{label}-{i}",
                "Decisions",
                decisions.lines(outcomes_of(key)),
                OUTCOMES,
            )
            for i, key in enumerate(decisions.keys(key_of))
        ]

    policy_charts = decision_charts("policy", "Policy")
    queue_charts = decision_charts("queue", "Queue")
    categories = gang = None
    if every:
        categories = chart(
            "Failed runs per failure category",
            "categories",
            "Failed runs",
            history(CATEGORIES).lines(lambda lb: lb.get("failure_category") or "(none)"),
        )
        gang = chart(
            "Gang failures skipped per policy",
            "gang",
            "Gang failures skipped",
            history(GANG_SKIPS).lines(lambda lb: lb.get("policy") or "(none)"),
        )
    counters, hidden_counters = _counters(allowed)
    last = status.last_sampled
    return render(
        request,
        "lookout/decision_metrics.html",
        {
            "period": period,
            "periods": list(PERIODS),
            "now": now,
            "range_start": starts[0],
            "range_fitted": time_range.fitted,
            "history_start": status.first_in_period if time_range.fitted else None,
            "date_format": "M j H:i" if now - starts[0] > timedelta(days=1) else "H:i",
            "time_zone": timezone.get_current_timezone_name(),
            "bucket_step": step_text(step),
            "sample_period": step_text(SAMPLE_PERIOD),
            "last_sampled": last,
            "sample_age": (now - last).total_seconds() if last else None,
            "stale": status.stale(now, intervals=STALE_AFTER),
            "stale_after": step_text(SAMPLE_PERIOD * STALE_AFTER),
            "has_history": last is not None,
            "policy_charts": policy_charts,
            "queue_charts": queue_charts,
            "categories": categories,
            "gang": gang,
            "counters": counters,
            "hidden_counters": hidden_counters,
            "no_queue": allowed == [],
        },
    )
