"""Prometheus metrics of our own, served at ``/metrics`` beside django-prometheus' ones.

``armada_queue_jobs{queue,state}`` is computed at scrape time from the database (one grouped
count over an index), so every web process reports the same, current numbers.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count
from prometheus_client.core import REGISTRY, GaugeMetricFamily
from prometheus_client.registry import Collector

from armada.core.states import JobState


def _queue_jobs_family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "armada_queue_jobs",
        "Jobs per queue and state (terminal states excluded)",
        labels=["queue", "state"],
    )


class QueueDepthCollector(Collector):
    def describe(self) -> Iterator[GaugeMetricFamily]:
        # Registration asks for the names; answering here keeps it from querying the database.
        yield _queue_jobs_family()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from armada.models import Job

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


_registered = False


def register_collectors() -> None:
    global _registered
    if not _registered:
        REGISTRY.register(QueueDepthCollector())
        _registered = True
