"""Lookout's decision-metrics page: retry and fail decisions per policy and per queue, failure
categories and gang skips over time (from ``MetricSample`` history, drawn as SVG line
charts with a data table each), beside the counters' current values (``MetricCounter``).

Rows labelled with a queue are shown only for queues the viewer may watch.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from armada.metrics import DB_COUNTERS
from armada.models import MetricCounter
from armada.services.authz import watchable_queues
from armada.services.metric_history import bucket_starts, metric_increases
from lookout.charts import line_chart

DECISIONS = "armada_scheduler_retry_policy_decisions_total"
CATEGORIES = "armada_executor_job_failure_category_total"
GANG_SKIPS = "armada_scheduler_retry_policy_gang_skipped_total"
WINDOWS = {
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
}
BUCKETS = 30


def _outcome(decision: str) -> str:
    return "retry" if decision == "retry" else "fail"


@login_required
def decision_metrics(request: HttpRequest) -> HttpResponse:
    window = request.GET.get("window", "6h")
    if window not in WINDOWS:
        window = "6h"
    end = timezone.now()
    start = end - WINDOWS[window]
    starts = bucket_starts(start=start, end=end, buckets=BUCKETS)
    allowed = watchable_queues(request.user)

    def visible(labels: dict) -> bool:
        return allowed is None or "queue" not in labels or labels["queue"] in allowed

    def increases(name: str, line_of) -> list:
        return metric_increases(
            name=name,
            start=start,
            end=end,
            buckets=BUCKETS,
            line_of=lambda labels: line_of(labels) if visible(labels) else None,
        )

    decisions = increases(
        DECISIONS, lambda lb: f"{lb.get('policy') or '(none)'} {_outcome(lb.get('decision', ''))}"
    )
    policies = sorted({s.label.rsplit(" ", 1)[0] for s in decisions})
    by_queue = increases(
        DECISIONS, lambda lb: f"{lb.get('queue', '')} {_outcome(lb.get('decision', ''))}"
    )
    queues = sorted({s.label.rsplit(" ", 1)[0] for s in by_queue})

    def split(series: list, key: str) -> list:
        return [
            type(s)(label=s.label.rsplit(" ", 1)[1], values=s.values)
            for s in series
            if s.label.rsplit(" ", 1)[0] == key
        ]

    policy_charts = [
        line_chart(
            title=f"Policy {p}: decisions",
            chart_id=f"policy-{i}",
            starts=starts,
            series=split(decisions, p),
        )
        for i, p in enumerate(policies)
    ]
    queue_charts = [
        line_chart(
            title=f"Queue {q}: decisions",
            chart_id=f"queue-{i}",
            starts=starts,
            series=split(by_queue, q),
        )
        for i, q in enumerate(queues)
    ]
    categories = line_chart(
        title="Failed runs per failure category",
        chart_id="categories",
        starts=starts,
        series=increases(CATEGORIES, lambda lb: lb.get("failure_category") or "(none)"),
    )
    gang = line_chart(
        title="Gang failures skipped per policy",
        chart_id="gang",
        starts=starts,
        series=increases(GANG_SKIPS, lambda lb: lb.get("policy") or "(none)"),
    )
    counters = []
    for name, (help_text, label_names) in DB_COUNTERS.items():
        rows = [
            ([str(c.labels.get(label, "")) for label in label_names], c.value)
            for c in MetricCounter.objects.filter(name=name).order_by("labels_key")
            if visible(c.labels)
        ]
        counters.append({"name": name, "help": help_text, "labels": label_names, "rows": rows})
    return render(
        request,
        "lookout/decision_metrics.html",
        {
            "window": window,
            "windows": list(WINDOWS),
            "bucket_minutes": round(WINDOWS[window].total_seconds() / BUCKETS / 60, 1),
            "policy_charts": policy_charts,
            "queue_charts": queue_charts,
            "categories": categories,
            "gang": gang,
            "counters": counters,
        },
    )
