"""Prometheus metrics of our own, served at ``/metrics`` beside django-prometheus' ones.

Both kinds are read from the database at scrape time, so every web process reports the same
current values whichever process did the counting:
- ``armada_queue_jobs{queue,state}``: jobs per queue and live state (one grouped count);
- the counters in ``DB_COUNTERS``, kept in ``MetricCounter`` rows that services add to in
  the same transaction as the change they count.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count
from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from armada.core.states import JobState

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
}


def _queue_jobs_family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "armada_queue_jobs",
        "Jobs per queue and state (terminal states excluded)",
        labels=["queue", "state"],
    )


def _counter_family(name: str) -> CounterMetricFamily:
    help_text, labels = DB_COUNTERS[name]
    return CounterMetricFamily(name.removesuffix("_total"), help_text, labels=list(labels))


class DatabaseCollector(Collector):
    def describe(self) -> Iterator:
        # Registration asks for the names; answering here keeps it from querying the database.
        yield _queue_jobs_family()
        for name in DB_COUNTERS:
            yield _counter_family(name)

    def collect(self) -> Iterator:
        from armada.models import Job, MetricCounter

        family = _queue_jobs_family()
        live = [s.value for s in JobState if not s.terminal]
        rows = (
            Job.objects.filter(state__in=live)
            .values("queue", "state")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            family.add_metric([row["queue"], row["state"]], row["n"])
        yield family
        for name in DB_COUNTERS:
            counter = _counter_family(name)
            _, labels = DB_COUNTERS[name]
            for row in MetricCounter.objects.filter(name=name).order_by("labels_key"):
                counter.add_metric([str(row.labels.get(label, "")) for label in labels], row.value)
            yield counter


_registered = False


def register_collectors() -> None:
    global _registered
    if not _registered:
        REGISTRY.register(DatabaseCollector())
        _registered = True
