"""Prometheus metrics served at ``/metrics`` beside django-prometheus' ones (docs/metrics.md).

Every series is read from the database at scrape time, so every web process serves the same
values whichever process counted: counters are ``MetricCounter`` rows that services add to
in the same transaction as the change they count, and gauges are reckoned from the current
rows. One scrape costs a fixed number of grouped queries (``reads``, ``families.Stored``),
whatever the number of jobs and queues.

- ``queue_metrics``: Armada's queue metrics, and our ``armada_queue_jobs``;
- ``cluster_metrics``: Armada's cluster metrics and its executor's pod and node metrics;
- ``scheduler_metrics``: Armada's scheduler metrics (cycle, shares, job states, nodes);
- ``cycle_gauges``: the gauges the last scheduling cycle stored (round statistics, queued and
  run times);
- ``usage_metrics``: what running pods use (their latest ``utilisation`` events);
- ``armada.api.stream_metrics`` (in the process's own registry, not read from the database):
  the event streams this process has open;
- here: our own counters (``DB_COUNTERS``, ``SCALED_DB_COUNTERS``).
"""

from __future__ import annotations

from collections.abc import Iterator

from django.utils import timezone
from prometheus_client.core import REGISTRY, CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from armada.metrics import (
    cluster_metrics,
    cycle_gauges,
    queue_metrics,
    scheduler_metrics,
    usage_metrics,
)
from armada.metrics.families import Stored
from armada.metrics.reads import scrape_read
from armada.services.retry_cost_metrics import COUNTERS as RETRY_COST_COUNTERS
from armada.services.retry_cost_metrics import LABELS as RETRY_COST_LABELS

# name (with _total) -> (help, label names)
DB_COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "armada_executor_job_failure_category_total": (
        "Failed runs per failure category and subcategory, as the executors categorised them",
        ("failure_category", "failure_subcategory"),
    ),
    "armada_scheduler_retry_policy_decisions_total": (
        "Retry-engine decisions per queue, pool, policy and decision",
        ("queue", "pool", "policy", "decision"),
    ),
    "armada_scheduler_retry_policy_gang_skipped_total": (
        "Failures of gang jobs (2 or more members) that a retry policy would otherwise have decided",
        ("policy",),
    ),
    "armada_executor_kept_pods_deleted_total": (
        "Failed pods of a Retain category deleted by their executor once keptPodRetention had passed",
        ("cluster",),
    ),
}
# What failed runs and retried attempts cost (``services.retry_cost``, docs/retry-cost.md):
# counters kept like those above, each in a whole unit finer than the one it is served in
# (name -> (help, label names, factor to the served unit)). Not in ``DB_COUNTERS``: Lookout's
# decision-metrics history does not sample them; the retry-cost page reads its own rollups.
SCALED_DB_COUNTERS: dict[str, tuple[str, tuple[str, ...], float]] = {
    name: (help_text, RETRY_COST_LABELS, factor)
    for name, (help_text, factor) in RETRY_COST_COUNTERS.items()
}


def _counter_family(name: str, help_text: str, labels: tuple[str, ...]) -> CounterMetricFamily:
    return CounterMetricFamily(name.removesuffix("_total"), help_text, labels=list(labels))


class DatabaseCollector(Collector):
    def describe(self) -> Iterator[Metric]:
        # Registration asks for the names; answering here keeps it from querying the database.
        for name, (help_text, labels) in DB_COUNTERS.items():
            yield _counter_family(name, help_text, labels)
        for name, (help_text, labels, _) in SCALED_DB_COUNTERS.items():
            yield _counter_family(name, help_text, labels)
        yield from queue_metrics.describe()
        yield from cluster_metrics.describe()
        yield from scheduler_metrics.describe()
        yield from cycle_gauges.describe()
        yield from usage_metrics.describe()

    def collect(self) -> Iterator[Metric]:
        stored = Stored([*DB_COUNTERS, *SCALED_DB_COUNTERS, *scheduler_metrics.stored_names()])
        for name, (help_text, labels) in DB_COUNTERS.items():
            family = _counter_family(name, help_text, labels)
            for values, value in stored.series(name, labels):
                family.add_metric(values, value)
            yield family
        for name, (help_text, labels, factor) in SCALED_DB_COUNTERS.items():
            family = _counter_family(name, help_text, labels)
            for values, value in stored.series(name, labels):
                family.add_metric(values, value * factor)
            yield family
        data = scrape_read(now=timezone.now())
        yield from queue_metrics.collect(data)
        yield from cluster_metrics.collect(data)
        yield from scheduler_metrics.collect(data, stored)
        yield from cycle_gauges.collect()
        yield from usage_metrics.collect()


_registered = False


def register_collectors() -> None:
    global _registered
    if not _registered:
        REGISTRY.register(DatabaseCollector())
        _registered = True
