"""Prometheus metrics of our own, served at ``/metrics`` beside django-prometheus' ones.

Every series is read from the database at scrape time, so every web process reports the
same current values whichever process did the counting:
- ``armada_queue_jobs{queue,state}``: jobs per queue and live state (one grouped count);
- the counters in ``DB_COUNTERS``, kept in ``MetricCounter`` rows that services add to in
  the same transaction as the change they count;
- Armada's own names, so that dashboards and alerts written for Armada work unchanged:
  ``armada_queue_size{queueName,queue,state}`` (queued jobs per queue; ``state`` is
  ``validated``, and ``unvalidated`` is always 0 because we validate at submit), the
  scheduler's cycle metrics kept by ``services.cycle_metrics``
  (``armada_scheduler_schedule_cycle_times``, ``armada_scheduler_scheduled_jobs``,
  ``armada_scheduler_preempted_jobs``) and the shares per pool and queue
  (``armada_scheduler_fair_share``, ``armada_scheduler_actual_share``, see
  :func:`pool_shares`).

Armada's two job counters have no ``_total`` suffix (its Go client adds none); Python's client
would add one to a counter, so they are served untyped under Armada's exact names.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from datetime import datetime

from django.conf import settings
from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import (
    REGISTRY,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from armada.core.fairshare import dominant_share
from armada.core.states import JobState
from armada.services.cycle_metrics import (
    CYCLE_BUCKETS,
    CYCLE_TIMES,
    INF,
    JOB_LABELS,
    PREEMPTED,
    SCHEDULED,
    bucket_label,
)
from armada.services.queue_shares import ACTIVE_RUNS, pool_capacity
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

# Armada's job counters of the scheduling cycle: name -> help (labels: JOB_LABELS).
ARMADA_JOB_COUNTERS: dict[str, str] = {
    SCHEDULED: "Number of events scheduled",
    PREEMPTED: "Number of jobs preempted",
}


def _queue_jobs_family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "armada_queue_jobs",
        "Jobs per queue and state (terminal states excluded)",
        labels=["queue", "state"],
    )


def _queue_size_family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "armada_queue_size", "Number of jobs in a queue", labels=["queueName", "queue", "state"]
    )


def _share_families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
    return (
        GaugeMetricFamily(
            "armada_scheduler_fair_share", "Fair share of each queue", labels=["pool", "queue"]
        ),
        GaugeMetricFamily(
            "armada_scheduler_actual_share",
            "Actual Fair share of each queue",
            labels=["pool", "queue"],
        ),
    )


def _cycle_times_family() -> HistogramMetricFamily:
    return HistogramMetricFamily(CYCLE_TIMES, "Cycle time when in a scheduling round.")


def _job_counter_family(name: str) -> Metric:
    return Metric(name, ARMADA_JOB_COUNTERS[name], "unknown")


def _counter_family(name: str) -> CounterMetricFamily:
    help_text, labels = DB_COUNTERS[name]
    return CounterMetricFamily(name.removesuffix("_total"), help_text, labels=list(labels))


def _scaled_counter_family(name: str) -> CounterMetricFamily:
    help_text, labels, _ = SCALED_DB_COUNTERS[name]
    return CounterMetricFamily(name.removesuffix("_total"), help_text, labels=list(labels))


def pool_shares(
    *,
    now: datetime,
    queued: Mapping[str, int],
) -> dict[str, dict[str, tuple[float, float]]]:
    """Per pool and queue, ``(fair share, actual share)`` as the scheduler reckons them, from
    the database as it is now (queues with neither are left out):
    - actual share: the dominant resource share of the requests of the queue's active runs
      in the pool over the capacity of the pool's schedulable nodes (live, uncordoned
      executors; ``core.fairshare.dominant_share``);
    - fair share: the queue's weight (``1 / priorityFactor``) over the summed weights of the
      pool's active queues: those with active runs in the pool, and uncordoned queues with
      jobs waiting (``queued`` by queue name)."""
    from armada.models import Queue, Run

    allocated: dict[str, dict[str, dict[str, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int))
    )
    for pool, queue, requests in Run.objects.filter(state__in=ACTIVE_RUNS).values_list(
        "pool", "job__queue", "requests"
    ):
        for resource, amount in (requests or {}).items():
            allocated[pool][queue][resource] += int(amount)
    queues = {q.name: q for q in Queue.objects.all()}
    waiting = {name for name, n in queued.items() if n and name in queues}
    waiting = {name for name in waiting if not queues[name].cordoned}
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for pool in (p.name for p in settings.ARMADA.scheduling.pools):
        capacity = pool_capacity(now=now, pool=pool)
        used = allocated.get(pool, {})
        active = (set(used) & set(queues)) | waiting
        weights = {name: 1.0 / max(queues[name].priority_factor, 1e-9) for name in active}
        total = sum(weights.values())
        out[pool] = {
            name: (
                weights[name] / total if total else 0.0,
                dominant_share(used.get(name, {}), capacity),
            )
            for name in sorted(active)
        }
    return out


class DatabaseCollector(Collector):
    def describe(self) -> Iterator:
        # Registration asks for the names; answering here keeps it from querying the database.
        yield _queue_jobs_family()
        for name in DB_COUNTERS:
            yield _counter_family(name)
        for name in SCALED_DB_COUNTERS:
            yield _scaled_counter_family(name)
        yield _queue_size_family()
        yield _cycle_times_family()
        for name in ARMADA_JOB_COUNTERS:
            yield _job_counter_family(name)
        yield from _share_families()

    def collect(self) -> Iterator:
        from armada.models import Job, MetricCounter, Queue

        family = _queue_jobs_family()
        live = [s.value for s in JobState if not s.terminal]
        rows = (
            Job.objects.filter(state__in=live)
            .values("queue", "state")
            .annotate(n=Count("id"))
            .order_by()
        )
        queued: dict[str, int] = defaultdict(int)
        for row in rows:
            family.add_metric([row["queue"], row["state"]], row["n"])
            if row["state"] == JobState.QUEUED:
                queued[row["queue"]] += row["n"]
        yield family
        for name in DB_COUNTERS:
            counter = _counter_family(name)
            _, labels = DB_COUNTERS[name]
            for row in MetricCounter.objects.filter(name=name).order_by("labels_key"):
                counter.add_metric([str(row.labels.get(label, "")) for label in labels], row.value)
            yield counter
        for name, (_, labels, factor) in SCALED_DB_COUNTERS.items():
            counter = _scaled_counter_family(name)
            for row in MetricCounter.objects.filter(name=name).order_by("labels_key"):
                values = [str(row.labels.get(label, "")) for label in labels]
                counter.add_metric(values, row.value * factor)
            yield counter

        size = _queue_size_family()
        for name in Queue.objects.order_by("name").values_list("name", flat=True):
            size.add_metric([name, name, "validated"], queued.get(name, 0))
            size.add_metric([name, name, "unvalidated"], 0)
        yield size

        counters = defaultdict(list)
        names = [f"{CYCLE_TIMES}_bucket", f"{CYCLE_TIMES}_sum"]
        for row in MetricCounter.objects.filter(name__in=[*names, *ARMADA_JOB_COUNTERS]).order_by(
            "labels_key"
        ):
            counters[row.name].append(row)
        yield _cycle_times(counters)
        for name in ARMADA_JOB_COUNTERS:
            metric = _job_counter_family(name)
            for row in counters[name]:
                labels = {label: str(row.labels.get(label, "")) for label in JOB_LABELS}
                metric.add_sample(name, labels, row.value)
            yield metric

        fair, actual = _share_families()
        for pool, shares in pool_shares(now=timezone.now(), queued=queued).items():
            for queue, (fair_share, actual_share) in shares.items():
                fair.add_metric([pool, queue], fair_share)
                actual.add_metric([pool, queue], actual_share)
        yield fair
        yield actual


def _cycle_times(counters: Mapping[str, list]) -> HistogramMetricFamily:
    """The cycle-time histogram from its per-bucket counts, made cumulative."""
    per_bucket = {row.labels.get("le", ""): row.value for row in counters[f"{CYCLE_TIMES}_bucket"]}
    total = sum(row.value for row in counters[f"{CYCLE_TIMES}_sum"])
    buckets, seen = [], 0
    for bound in CYCLE_BUCKETS:
        seen += per_bucket.get(bucket_label(bound), 0)
        buckets.append((bucket_label(bound), seen))
    buckets.append((INF, seen + per_bucket.get(INF, 0)))
    family = _cycle_times_family()
    family.add_metric([], buckets, sum_value=total)
    return family


_registered = False


def register_collectors() -> None:
    global _registered
    if not _registered:
        REGISTRY.register(DatabaseCollector())
        _registered = True
