"""What running pods use, from each active run's latest ``utilisation`` event
(``services.usage_metrics``; one grouped query per scrape), in Armada's units (cores,
bytes):

- ``armada_queue_resource_used{cluster,pool,queueName,queue,resourceType,...}``: summed per
  cluster, pool and queue (``nodeType``, ``reservation``, ``scalable_unit`` empty;
  ``physical_pool`` the run's pool);
- ``armada_executor_job_pod_resource_usage{queue,phase,resourceType,nodeType}``: summed per
  queue and pod phase, for all executors together (as the other ``armada_executor_*`` pod
  gauges here).
The usage is the average over the period of the run's latest recorded utilisation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from prometheus_client.core import Metric

from armada.metrics.cluster_metrics import _phase
from armada.metrics.families import gauge
from armada.services.usage_metrics import usage_read

USED = "armada_queue_resource_used"
USED_LABELS = (
    "cluster",
    "pool",
    "queueName",
    "queue",
    "resourceType",
    "nodeType",
    "reservation",
    "physical_pool",
    "scalable_unit",
)
POD_USAGE = "armada_executor_job_pod_resource_usage"
POD_USAGE_LABELS = ("queue", "phase", "resourceType", "nodeType")


def describe() -> Iterator[Metric]:
    yield Metric(USED, "", "gauge")
    yield Metric(POD_USAGE, "", "gauge")


def collect() -> Iterator[Metric]:
    used = gauge(USED, "Resource actually being used by running jobs of a queue", USED_LABELS)
    pods = gauge(POD_USAGE, "Pod resource usage in different phases by queue", POD_USAGE_LABELS)
    per_queue: dict[tuple, int] = defaultdict(int)
    per_phase: dict[tuple, int] = defaultdict(int)
    for g in usage_read():
        per_queue[(g.cluster, g.pool, g.queue, g.resource)] += g.value
        per_phase[(g.queue, _phase(g.state), g.resource)] += g.value
    for (cluster, pool, queue, resource), v in sorted(per_queue.items()):
        used.add_metric([cluster, pool, queue, queue, resource, "", "", pool, ""], v / 1000)
    for (queue, phase, resource), v in sorted(per_phase.items()):
        pods.add_metric([queue, phase, resource, ""], v / 1000)
    yield used
    yield pods
