"""Armada's scheduler metrics: the cycle's counters and histograms (``services.cycle_metrics``,
``services.round_metrics``; and the executor's ``armada_executor_job_pod_total``, counted in
``services.usage_metrics``),
the job state counters (``services.job_state_metrics``), and the per-cycle gauges Armada
sets after each round, reckoned here at scrape time from the database as it is now:

- ``armada_scheduler_fair_share{pool,queue}``: the queue's weight over the summed weights of
  the pool's active queues (with active runs in the pool, or uncordoned with jobs queued);
- ``armada_scheduler_adjusted_fair_share``: the fair share with what queues that ask for less
  than theirs leave over shared out among the others by weight, capped by demand;
- ``armada_scheduler_uncapped_adjusted_fair_share``: the adjusted fair share the queue would
  have were its own demand unbounded (``core.fairshare.uncapped_adjusted_fair_shares``);
- ``armada_scheduler_actual_share``: the dominant resource share of the queue's active runs
  in the pool over the pool's schedulable capacity (``core.fairshare.dominant_share``);
- ``armada_scheduler_demand`` (and ``constrained_demand``, the same number: no constraint
  here limits a queue's demand below it): the dominant share of active plus queued requests;
- ``armada_scheduler_queue_weight`` / ``raw_queue_weight``: ``1 / priorityFactor`` (no
  multipliers here, so both are the same);
- ``armada_scheduler_fairness_error{pool}``: summed shortfall of actual below adjusted share;
- ``armada_scheduler_node_pool_size{pool}``, ``protected_fraction_of_fair_share{pool}``;
- ``armada_scheduler_node_allocatable_resource`` / ``node_allocated_resource``: per node, what
  Armada may use and what its active runs request (units: cores, bytes).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping

from django.conf import settings
from prometheus_client.core import Metric

from armada.core.fairshare import (
    adjusted_fair_shares,
    dominant_share,
    uncapped_adjusted_fair_shares,
)
from armada.metrics.families import Stored, add_counter, armada_counter, gauge
from armada.metrics.reads import ScrapeData
from armada.services import job_state_metrics as states
from armada.services.cycle_metrics import (
    CYCLE_BUCKETS,
    CYCLE_TIMES,
    JOB_LABELS,
    OUTCOME,
    POOL_TIMES,
    PREEMPTED,
    RECONCILIATION_TIMES,
    SCHEDULED,
    SCHEDULING_TIMES,
)
from armada.services.round_metrics import POOL_OUTCOME, POOL_OUTCOME_LABELS
from armada.services.submit_metrics import (
    SUBMIT_CHECK_BUCKETS,
    SUBMIT_CHECK_HELP,
    SUBMIT_CHECK_LABELS,
    SUBMIT_CHECK_TIMES,
)
from armada.services.usage_metrics import POD_TOTAL, POD_TOTAL_LABELS

PQ = ("pool", "queue")
SHARES = {
    "armada_scheduler_fair_share": "Fair share of each queue",
    "armada_scheduler_adjusted_fair_share": "Adjusted Fair share of each queue",
    "armada_scheduler_uncapped_adjusted_fair_share": (
        "Adjusted Fair share of each queue, not capped by demand"
    ),
    "armada_scheduler_actual_share": "Actual Fair share of each queue",
    "armada_scheduler_demand": "Demand of each queue",
    "armada_scheduler_constrained_demand": "Constrained demand of each queue and pool",
    "armada_scheduler_queue_weight": "Weight of the queue after multipliers have been applied",
    "armada_scheduler_raw_queue_weight": "Weight of the queue before multipliers have been applied",
}
POOL_GAUGES = {
    "armada_scheduler_fairness_error": "Summed shortfall of actual below adjusted fair share",
    "armada_scheduler_node_pool_size": "Number of nodes in each pool",
    "armada_scheduler_protected_fraction_of_fair_share": "config value protectedFractionOfFairShare",
}
NODE = (
    "pool",
    "node",
    "cluster",
    "nodeType",
    "resource",
    "reservation",
    "schedulable",
    "overAllocated",
    "physical_pool",
    "capacity_class",
    "scalable_unit",
)
NODE_GAUGES = {
    "armada_scheduler_node_allocatable_resource": "Resource that can be allocated to Armada jobs",
    "armada_scheduler_node_allocated_resource": "Resource allocated by Armada jobs on this node",
}
# Armada's counters with no ``_total``: name -> (help, labels)
JOB_COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    SCHEDULED: ("Number of events scheduled", JOB_LABELS),
    PREEMPTED: ("Number of jobs preempted", JOB_LABELS),
    OUTCOME: ("Count of scheduling cycles completed by outcome", ("outcome",)),
    POOL_OUTCOME: ("Number of scheduling attempts per pool by outcome", POOL_OUTCOME_LABELS),
    POD_TOTAL: ("Counter for pods in different phases by queue", POD_TOTAL_LABELS),
}
HISTOGRAMS = {
    CYCLE_TIMES: ("Cycle time when in a scheduling round.", (), CYCLE_BUCKETS, 1.0),
    RECONCILIATION_TIMES: ("Cycle time when in a scheduling round.", (), CYCLE_BUCKETS, 1.0),
    SCHEDULING_TIMES: (
        "Time taken for the scheduling algo to schedule on all pools, in milliseconds.",
        (),
        CYCLE_BUCKETS,
        1.0,
    ),
    POOL_TIMES: ("Time taken to schedule on a given pool.", ("pool",), CYCLE_BUCKETS, 1.0),
    states.COMPLETED: ("Time", ("queue", "pool"), states.COMPLETED_BUCKETS, 1e-3),
    # counted by the submit service (its _sum in microseconds)
    SUBMIT_CHECK_TIMES: (SUBMIT_CHECK_HELP, SUBMIT_CHECK_LABELS, SUBMIT_CHECK_BUCKETS, 1e-3),
}


def stored_names() -> list[str]:
    return [
        *JOB_COUNTERS,
        *states.COUNTERS,
        *(f"{name}{part}" for name in HISTOGRAMS for part in ("_bucket", "_sum")),
    ]


def describe() -> Iterator[Metric]:
    for name in (*SHARES, *POOL_GAUGES, *NODE_GAUGES):
        yield Metric(name, "", "gauge")
    for name in (*JOB_COUNTERS, *states.COUNTERS):
        yield armada_counter(name, "")
    for name in HISTOGRAMS:
        yield Metric(name, "", "histogram")


def collect(data: ScrapeData, stored: Stored) -> Iterator[Metric]:
    for name, (help_text, labels) in JOB_COUNTERS.items():
        metric = armada_counter(name, help_text)
        for values, value in stored.series(name, labels):
            add_counter(metric, labels, values, value)
        yield metric
    for name, (help_text, labels, factor) in states.COUNTERS.items():
        metric = armada_counter(name, help_text)
        for values, value in stored.series(name, labels):
            f = factor if factor is not None else states.resource_factor(values[-1])
            add_counter(metric, labels, values, value * f)
        yield metric
    for name, (help_text, labels, bounds, factor) in HISTOGRAMS.items():
        yield stored.histogram(name, help_text, labels, bounds, factor)
    yield from _shares(data)
    yield from _nodes(data)


def adjusted_shares(weights: Mapping[str, float], demand: Mapping[str, float]) -> dict[str, float]:
    """The demand-capped adjusted fair shares (``core.fairshare.adjusted_fair_shares``)."""
    return adjusted_fair_shares(weights, demand)


def _shares(data: ScrapeData) -> Iterator[Metric]:
    families = {name: gauge(name, h, PQ) for name, h in SHARES.items()}
    pool_families = {name: gauge(name, h, ["pool"]) for name, h in POOL_GAUGES.items()}
    queues = {q.name: q for q in data.queues}
    waiting: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for g in data.queued():
        if g.queue in queues and not queues[g.queue].cordoned:
            for r, v in g.requests.items():
                waiting[g.queue][r] += v * g.n
    protected = settings.ARMADA.scheduling.protected_fraction_of_fair_share
    for pool in data.pools:
        capacity = data.capacity(pool)
        used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for g in data.runs:
            if g.pool == pool:
                for r, v in g.requests.items():
                    used[g.queue][r] += v * g.n
        active = sorted((set(used) & set(queues)) | set(waiting))
        weights = {q: 1.0 / max(queues[q].priority_factor, 1e-9) for q in active}
        total = sum(weights.values())
        demand = {}
        for q in active:
            asked = dict(used.get(q, {}))
            for r, v in waiting.get(q, {}).items():
                asked[r] = asked.get(r, 0) + v
            demand[q] = dominant_share(asked, capacity)
        actual = {q: dominant_share(used.get(q, {}), capacity) for q in active}
        adjusted = adjusted_shares(weights, demand)
        uncapped = uncapped_adjusted_fair_shares(weights, demand)
        for q in active:
            for name, value in (
                ("armada_scheduler_fair_share", weights[q] / total if total else 0.0),
                ("armada_scheduler_adjusted_fair_share", adjusted.get(q, 0.0)),
                ("armada_scheduler_uncapped_adjusted_fair_share", uncapped.get(q, 0.0)),
                ("armada_scheduler_actual_share", actual[q]),
                ("armada_scheduler_demand", demand[q]),
                ("armada_scheduler_constrained_demand", demand[q]),
                ("armada_scheduler_queue_weight", weights[q]),
                ("armada_scheduler_raw_queue_weight", weights[q]),
            ):
                families[name].add_metric([pool, q], value)
        error = sum(max(0.0, adjusted.get(q, 0.0) - actual[q]) for q in active)
        pool_families["armada_scheduler_fairness_error"].add_metric([pool], error)
        size = sum(1 for n in data.nodes if n.pool == pool)
        pool_families["armada_scheduler_node_pool_size"].add_metric([pool], size)
        pool_families["armada_scheduler_protected_fraction_of_fair_share"].add_metric(
            [pool], protected
        )
    yield from families.values()
    yield from pool_families.values()


def _nodes(data: ScrapeData) -> Iterator[Metric]:
    allocatable = gauge(
        "armada_scheduler_node_allocatable_resource",
        NODE_GAUGES["armada_scheduler_node_allocatable_resource"],
        NODE,
    )
    allocated = gauge(
        "armada_scheduler_node_allocated_resource",
        NODE_GAUGES["armada_scheduler_node_allocated_resource"],
        NODE,
    )
    on_node: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for g in data.runs:
        for r, v in g.requests.items():
            on_node[(g.executor, g.node)][r] += v * g.n
    for node in data.nodes:
        used = on_node.get((node.executor, node.name), {})
        over = any(used.get(r, 0) > v for r, v in node.farm.items())
        for r in sorted(set(node.farm) | set(used)):
            labels = [
                node.pool,
                node.name,
                node.executor,
                "",
                r,
                "",
                str(node.schedulable).lower(),
                str(over).lower(),
                node.pool,
                "dedicated",
                "",
            ]
            allocatable.add_metric(labels, node.farm.get(r, 0) / 1000)
            allocated.add_metric(labels, used.get(r, 0) / 1000)
    yield allocatable
    yield allocated
