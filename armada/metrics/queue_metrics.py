"""Armada's queue metrics (its scheduler's metrics collector), from one scrape's reads:

- ``armada_queue_size{queueName,queue,state}``: queued jobs per queue (``validated``; the
  ``unvalidated`` series is always 0, since jobs are validated at submit);
- ``armada_queue_priority{queueName,queue}``: the queue's priority factor;
- ``armada_queue_labels{queueName,queue,<label>...}``: 1 per queue, its labels as labels
  (label names that are not valid Prometheus names are left out, as Armada does);
- ``armada_scheduler_pool_info{pool}``: 1 per configured pool;
- ``armada_queue_resource_queued{,_min,_max,_median,_count}``: what queued jobs request, per
  pool they may run in, priority class, queue and resource (units: cores, bytes). A queued job
  may run in every pool here, so it is reported in each; ``accounting_role`` is ``primary``
  for the first configured pool and ``secondary`` for the others, so that summing over
  ``accounting_role="primary"`` counts every job once. ``priceBand`` is ``None`` (no bids);
- ``armada_queue_distinct_scheduling_keys{queueName,queue}``: distinct (priority class,
  requests) pairs among the queue's queued jobs; our scheduling key.
Plus our own ``armada_queue_jobs{queue,state}`` (jobs per queue and live state).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

from prometheus_client.core import Metric

from armada.core.states import JobState
from armada.metrics.families import gauge, weighted_median
from armada.metrics.reads import ScrapeData

PRICE_BAND = "None"  # Armada's short name of an unspecified price band
QUEUED_LABELS = (
    "pool",
    "priorityClass",
    "queueName",
    "queue",
    "priceBand",
    "resourceType",
    "accounting_role",
)
QUEUED_FAMILIES = {
    "armada_queue_resource_queued": "Resource required by queued jobs",
    "armada_queue_resource_queued_min": "Min resource required by queued job",
    "armada_queue_resource_queued_max": "Max resource required by queued job",
    "armada_queue_resource_queued_median": "Median resource required by queued jobs",
    "armada_queue_resource_queued_count": "Count of queued jobs requiring resource",
}
_VALID_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def describe() -> Iterator[Metric]:
    yield gauge("armada_queue_jobs", "", ["queue", "state"])
    for name in (
        "armada_queue_size",
        "armada_queue_priority",
        "armada_queue_labels",
        "armada_scheduler_pool_info",
        "armada_queue_distinct_scheduling_keys",
        *QUEUED_FAMILIES,
    ):
        yield Metric(name, "", "gauge")


def collect(data: ScrapeData) -> Iterator[Metric]:
    jobs = gauge(
        "armada_queue_jobs",
        "Jobs per queue and state (terminal states excluded)",
        ["queue", "state"],
    )
    per_state: dict[tuple[str, str], int] = defaultdict(int)
    queued: dict[str, int] = defaultdict(int)
    keys: dict[str, set] = defaultdict(set)
    for g in data.jobs:
        per_state[(g.queue, g.state)] += g.n
        if g.state == JobState.QUEUED:
            queued[g.queue] += g.n
            keys[g.queue].add((g.priority_class, tuple(sorted(g.requests.items()))))
    for (queue, state), n in sorted(per_state.items()):
        jobs.add_metric([queue, state], n)
    yield jobs

    size = gauge("armada_queue_size", "Number of jobs in a queue", ["queueName", "queue", "state"])
    priority = gauge("armada_queue_priority", "Queue priority factor", ["queueName", "queue"])
    distinct = gauge(
        "armada_queue_distinct_scheduling_keys",
        "Number of distinct scheduling keys requested by a queue",
        ["queueName", "queue"],
    )
    labels = Metric("armada_queue_labels", "Queue labels", "gauge")
    for q in data.queues:
        size.add_metric([q.name, q.name, "validated"], queued.get(q.name, 0))
        size.add_metric([q.name, q.name, "unvalidated"], 0)
        priority.add_metric([q.name, q.name], q.priority_factor)
        distinct.add_metric([q.name, q.name], len(keys.get(q.name, ())))
        extra = {k: str(v) for k, v in sorted(q.labels.items()) if _VALID_LABEL.match(k)}
        extra.pop("queueName", None), extra.pop("queue", None)
        labels.add_sample("armada_queue_labels", {"queueName": q.name, "queue": q.name, **extra}, 1)
    yield from (size, priority, distinct, labels)

    info = gauge(
        "armada_scheduler_pool_info",
        "Information about the pools that are currently being scheduled",
        ["pool"],
    )
    for pool in data.pools:
        info.add_metric([pool], 1)
    yield info
    yield from _queued_resources(data)


def _queued_resources(data: ScrapeData) -> Iterator[Metric]:
    amounts: dict[tuple[str, str, str], dict[float, int]] = defaultdict(lambda: defaultdict(int))
    for g in data.queued():
        for resource, milli in g.requests.items():
            amounts[(g.priority_class, g.queue, resource)][milli / 1000] += g.n
    families = {
        name: gauge(name, help_text, QUEUED_LABELS) for name, help_text in QUEUED_FAMILIES.items()
    }
    for i, pool in enumerate(data.pools):
        role = "primary" if i == 0 else "secondary"
        for (pc, queue, resource), values in sorted(amounts.items()):
            labels = [pool, pc, queue, queue, PRICE_BAND, resource, role]
            count = sum(values.values())
            for name, value in (
                ("armada_queue_resource_queued", sum(v * n for v, n in values.items())),
                ("armada_queue_resource_queued_min", min(values)),
                ("armada_queue_resource_queued_max", max(values)),
                ("armada_queue_resource_queued_median", weighted_median(values)),
                ("armada_queue_resource_queued_count", count),
            ):
                families[name].add_metric(labels, value)
    yield from families.values()
