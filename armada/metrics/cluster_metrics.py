"""Armada's cluster metrics, and the executor's pod and node metrics, from one scrape's reads
of what executors report through the executor API (nodes) and the active runs.

Scheduler side (labels as Armada's; ``nodeType``, ``reservation`` and ``scalable_unit`` are
empty: nodes here have none; ``physical_pool`` is the node's pool and ``capacity_class``
``dedicated``, as there are no away pools):
- ``armada_cluster_capacity``: nodes' allocatable, and ``resourceType="nodes"`` their count;
- ``armada_cluster_farm_capacity``: allocatable less what non-Armada pods use;
- ``armada_cluster_available_capacity``: the same for schedulable nodes (not unschedulable,
  executor live and not cordoned), 0 for the others; ``nodes``: schedulable nodes;
- ``armada_cluster_cordoned_status{cluster,reason,setByUser}``: 1 when cordoned
  (``setByUser`` is empty: who cordoned is not recorded);
- ``armada_queue_resource_allocated{...}`` and ``_min/_max/_median``: requests of active runs;
- ``armada_queue_leased_pod_count{...,phase}``: active runs per phase (``Leased``,
  ``Pending``, ``Running``); ``armada_node_job_phase_count``: pending and running per node.

Executor side, served by the control plane for all executors together (Armada's executor
serves its own cluster's; add ``sum by`` nothing, and use the scheduler-side metrics for a
per-cluster view): ``armada_executor_job_pod``, ``armada_executor_job_pod_resource_request``,
``armada_executor_run_phase``, ``armada_executor_available_node_count``,
``armada_executor_available_node_resource_allocatable`` and ``_total``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from prometheus_client.core import Metric

from armada.metrics.families import gauge, weighted_median
from armada.metrics.queue_metrics import PRICE_BAND
from armada.metrics.reads import ScrapeData

CAP = (
    "cluster",
    "pool",
    "resourceType",
    "nodeType",
    "reservation",
    "physical_pool",
    "capacity_class",
    "scalable_unit",
)
ALLOCATED = (
    "cluster",
    "pool",
    "priorityClass",
    "queueName",
    "queue",
    "priceBand",
    "resourceType",
    "nodeType",
    "reservation",
    "physical_pool",
    "scalable_unit",
)
ALLOCATED_STATS = ("pool", "priorityClass", "queueName", "queue", "priceBand", "resourceType")
PODS = ("cluster", "pool", "queueName", "queue", "phase", "nodeType", "reservation")
CAPACITY = {
    "armada_cluster_capacity": "Cluster capacity",
    "armada_cluster_farm_capacity": "Cluster capacity less usage from non-Armada pods",
    "armada_cluster_available_capacity": "Cluster capacity available for Armada jobs",
}
STATS = {
    "armada_queue_resource_allocated_min": "Min resource allocated by a running job",
    "armada_queue_resource_allocated_max": "Max resource allocated by a running job",
    "armada_queue_resource_allocated_median": "Median resource allocated by a running job",
}
EXECUTOR = {
    "armada_executor_job_pod": (
        "Pods in different phases by queue",
        ("queue", "phase", "nodeType"),
    ),
    "armada_executor_job_pod_resource_request": (
        "Pod resource requests in different phases by queue",
        ("queue", "phase", "resourceType", "nodeType"),
    ),
    "armada_executor_run_phase": ("Runs in different phases by queue", ("queue", "phase")),
    "armada_executor_available_node_count": (
        "Number of nodes available for Armada jobs",
        ("nodeType",),
    ),
    "armada_executor_available_node_resource_allocatable": (
        "Resource allocatable on nodes available for Armada jobs",
        ("resourceType", "nodeType"),
    ),
    "armada_executor_available_node_resource_total": (
        "Total resource on nodes available for Armada jobs",
        ("resourceType", "nodeType"),
    ),
}
OTHERS = (
    "armada_cluster_cordoned_status",
    "armada_queue_resource_allocated",
    "armada_queue_leased_pod_count",
    "armada_node_job_phase_count",
)


def describe() -> Iterator[Metric]:
    for name in (*CAPACITY, *STATS, *EXECUTOR, *OTHERS):
        yield Metric(name, "", "gauge")


def _phase(state: str) -> str:
    return state.replace("_", " ").title().replace(" ", "")


def collect(data: ScrapeData) -> Iterator[Metric]:
    yield from _capacity(data)
    yield from _runs(data)
    yield from _executor(data)


def _capacity(data: ScrapeData) -> Iterator[Metric]:
    totals: dict[str, dict[tuple[str, str], float]] = {
        name: defaultdict(float) for name in CAPACITY
    }
    cordoned = {e.id: e for e in data.executors}
    for node in data.nodes:
        key = (node.executor, node.pool)
        totals["armada_cluster_capacity"][(*key, "nodes")] += 1
        totals["armada_cluster_available_capacity"][(*key, "nodes")] += int(node.schedulable)
        for r, v in node.allocatable.items():
            totals["armada_cluster_capacity"][(*key, r)] += v / 1000
        for r, v in node.farm.items():
            totals["armada_cluster_farm_capacity"][(*key, r)] += v / 1000
            available = v / 1000 if node.schedulable else 0.0
            totals["armada_cluster_available_capacity"][(*key, r)] += available
    for name, help_text in CAPACITY.items():
        family = gauge(name, help_text, CAP)
        for (cluster, pool, resource), value in sorted(totals[name].items()):
            family.add_metric([cluster, pool, resource, "", "", pool, "dedicated", ""], value)
        yield family
    status = gauge(
        "armada_cluster_cordoned_status",
        "Cluster cordoned status",
        ["cluster", "reason", "setByUser"],
    )
    for e in cordoned.values():
        status.add_metric([e.id, e.cordon_reason, ""], 1.0 if e.cordoned else 0.0)
    yield status


def _runs(data: ScrapeData) -> Iterator[Metric]:
    allocated = gauge(
        "armada_queue_resource_allocated",
        "Resource allocated to running jobs of a queue",
        ALLOCATED,
    )
    sums: dict[tuple, float] = defaultdict(float)
    stats: dict[tuple, dict[float, int]] = defaultdict(lambda: defaultdict(int))
    pods: dict[tuple, int] = defaultdict(int)
    node_phases: dict[tuple, int] = defaultdict(int)
    for g in data.runs:
        phase = _phase(g.state)
        pods[(g.executor, g.pool, g.queue, phase)] += g.n
        if phase in ("Pending", "Running"):
            node_phases[(g.node, g.executor, phase)] += g.n
        for r, milli in g.requests.items():
            sums[(g.executor, g.pool, g.priority_class, g.queue, r)] += milli / 1000 * g.n
            stats[(g.pool, g.priority_class, g.queue, r)][milli / 1000] += g.n
    for (cluster, pool, pc, queue, r), value in sorted(sums.items()):
        allocated.add_metric(
            [cluster, pool, pc, queue, queue, PRICE_BAND, r, "", "", pool, ""], value
        )
    yield allocated
    families = {name: gauge(name, h, ALLOCATED_STATS) for name, h in STATS.items()}
    for (pool, pc, queue, r), values in sorted(stats.items()):
        labels = [pool, pc, queue, queue, PRICE_BAND, r]
        families["armada_queue_resource_allocated_min"].add_metric(labels, min(values))
        families["armada_queue_resource_allocated_max"].add_metric(labels, max(values))
        families["armada_queue_resource_allocated_median"].add_metric(
            labels, weighted_median(values)
        )
    yield from families.values()
    leased = gauge("armada_queue_leased_pod_count", "Number of leased pods", PODS)
    for (cluster, pool, queue, phase), n in sorted(pods.items()):
        leased.add_metric([cluster, pool, queue, queue, phase, "", ""], n)
    yield leased
    per_node = gauge(
        "armada_node_job_phase_count",
        "Number of jobs in a given phase on a node",
        ["node", "cluster", "phase"],
    )
    for (node, cluster, phase), n in sorted(node_phases.items()):
        per_node.add_metric([node, cluster, phase], n)
    yield per_node


def _executor(data: ScrapeData) -> Iterator[Metric]:
    families = {name: gauge(name, h, labels) for name, (h, labels) in EXECUTOR.items()}
    pods: dict[tuple[str, str], int] = defaultdict(int)
    requested: dict[tuple[str, str, str], float] = defaultdict(float)
    for g in data.runs:
        phase = _phase(g.state)
        pods[(g.queue, phase)] += g.n
        for r, milli in g.requests.items():
            requested[(g.queue, phase, r)] += milli / 1000 * g.n
    for (queue, phase), n in sorted(pods.items()):
        families["armada_executor_job_pod"].add_metric([queue, phase, ""], n)
        families["armada_executor_run_phase"].add_metric([queue, phase], n)
    for (queue, phase, r), value in sorted(requested.items()):
        families["armada_executor_job_pod_resource_request"].add_metric(
            [queue, phase, r, ""], value
        )
    available = [n for n in data.nodes if n.schedulable]
    families["armada_executor_available_node_count"].add_metric([""], len(available))
    allocatable: dict[str, float] = defaultdict(float)
    total: dict[str, float] = defaultdict(float)
    for node in available:
        for r, v in node.farm.items():
            allocatable[r] += v / 1000
        for r, v in node.allocatable.items():
            total[r] += v / 1000
    for r, v in sorted(allocatable.items()):
        families["armada_executor_available_node_resource_allocatable"].add_metric([r, ""], v)
    for r, v in sorted(total.items()):
        families["armada_executor_available_node_resource_total"].add_metric([r, ""], v)
    yield from families.values()
