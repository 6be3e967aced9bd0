"""Armada's per-pool, per-queue statistics of the scheduling round, as the cycle stores them.

The core's round returns what it did as data (``core.round_stats``); the scheduler gathers
one :class:`PoolRound` per pool it ran, and :func:`round_gauge_rows` turns them into the rows
the cycle stores (``services.metric_gauges``; served by ``armada.metrics.cycle_gauges``):

- ``armada_scheduler_considered_jobs{pool,queue}``: queued jobs the round's loop took up
  (gang members included);
- ``armada_scheduler_gangs_considered`` / ``gangs_scheduled``: units the loop took up / leased
  whole (a single job is a gang of one, as Armada counts);
- ``armada_scheduler_first_gang_queue_position`` / ``last_gang_queue_position``: the loop's
  position (0 first, over every queue of the pool) when the queue's first unit was taken up,
  and when its last leased unit was;
- ``armada_scheduler_per_queue_schedule_cycle_times``: milliseconds the loop spent on the
  queue's units;
- ``armada_scheduler_loop_number{pool}``: units the loop took up in all;
- ``armada_scheduler_evicted_jobs{pool,queue}`` and ``evicted_resources{pool,queue,resource}``
  (cores, bytes, GPUs): what the round preempted of the queue (urgency and fair share);
- ``armada_scheduler_short_job_penalty{pool,queue}``: the dominant share of the pool that
  runs ended before ``shortJobPenaltyCutoff`` still charge to the queue;
- ``armada_scheduler_node_preemptibility{pool,node,cluster,nodeType,isPreemptible,reason}``:
  1 per node of the pool (``nodeType`` empty).

A queue appears in a pool's series when the round took up one of its units, evicted one of
its jobs, or charged it a penalty. ``armada_scheduler_pool_scheduling_outcome{pool,outcome,
termination_reason}`` (a counter, :func:`pool_outcomes`) counts each pool's round:
``success`` (a cycle that fails rolls back, its counts with it), with ``rate_limit`` when the
round stopped because the lease-rate bucket (``maximumSchedulingRate``) ran low,
``maximum_resources_scheduled`` when it had handed out ``maximumResourceFractionToSchedule``,
else ``completed`` (Armada reports reaching ``maximumJobsPerRound`` as completed too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from armada.core.fairshare import dominant_share
from armada.core.quantity import Resources
from armada.core.round_stats import COMPLETED, MAX_RESOURCES, RATE_LIMIT, RoundStats
from armada.core.snapshot import NodeState, QueueState, RoundResult

_S = "armada_scheduler_"
POOL_OUTCOME = _S + "pool_scheduling_outcome"
POOL_OUTCOME_LABELS = ("pool", "outcome", "termination_reason")
PQ = ("pool", "queue")
# name -> (help, label names), Armada's
ROUND_GAUGES: dict[str, tuple[str, tuple[str, ...]]] = {
    _S + "considered_jobs": ("Number of jobs considered", PQ),
    _S + "gangs_considered": ("Number of gangs considered in this scheduling cycle", PQ),
    _S + "gangs_scheduled": ("Number of gangs scheduled in this scheduling cycle", PQ),
    _S + "first_gang_queue_position": (
        "First position in the scheduling loop where a gang was considered",
        PQ,
    ),
    _S + "last_gang_queue_position": (
        "Last position in the scheduling loop where a gang was considered",
        PQ,
    ),
    _S + "per_queue_schedule_cycle_times": (
        "Per queue cycle time when in a scheduling round.",
        PQ,
    ),
    _S + "loop_number": ("Number of scheduling loops in this cycle", ("pool",)),
    _S + "evicted_jobs": ("Number of jobs evicted in this cycle", PQ),
    _S + "evicted_resources": ("Resources evicted in this cycle", ("pool", "queue", "resource")),
    _S + "short_job_penalty": ("Short job penalty for each queue", PQ),
    _S + "node_preemptibility": (
        "is it possible to clear this node by preempting any jobs on it?",
        ("pool", "node", "cluster", "nodeType", "isPreemptible", "reason"),
    ),
}


@dataclass
class PoolRound:
    """One pool's round as the cycle ran it."""

    pool: str
    stats: RoundStats
    rate_limited: bool = False  # stopped because the lease-rate bucket ran low
    # stopped because it had handed out maximumResourceFractionToSchedule
    resource_limited: bool = False
    # queue -> what runs ended sooner than the cutoff still charge it (milli-units)
    penalty: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    capacity: Mapping[str, int] = field(default_factory=dict)


def penalties(
    charged: Mapping[str, Mapping[str, int]], used: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    """What each queue is charged beyond what its active runs use (the short-job penalty)."""
    out = {}
    for queue, amounts in charged.items():
        extra = {r: v - used.get(queue, {}).get(r, 0) for r, v in amounts.items()}
        extra = {r: v for r, v in extra.items() if v > 0}
        if extra:
            out[queue] = extra
    return out


def pool_round(
    pool: str,
    result: RoundResult,
    queues: Sequence[QueueState],
    used: Mapping[str, Resources],
    nodes: Sequence[NodeState],
    *,
    rate_limited: bool,
) -> PoolRound:
    """The pool's round, from what the scheduler gave it (``queues``: what each queue is
    charged, short-job penalty included; ``used``: what its active runs use)."""
    capacity: dict[str, int] = {}
    for node in nodes:
        if not node.unschedulable:
            for r, v in node.allocatable.to_dict().items():
                capacity[r] = capacity.get(r, 0) + v
    charged = {q.name: q.allocated.to_dict() for q in queues}
    in_use = {q: r.to_dict() for q, r in used.items()}
    return PoolRound(
        pool,
        result.stats,
        rate_limited=rate_limited,
        resource_limited=bool(result.stopped_by),
        penalty=penalties(charged, in_use),
        capacity=capacity,
    )


def _units(resource: str, milli: int) -> float:
    return milli / 1000


def round_gauge_rows(rounds: list[PoolRound]) -> dict[str, list[tuple[dict[str, str], float]]]:
    rows: dict[str, list[tuple[dict[str, str], float]]] = {name: [] for name in ROUND_GAUGES}

    def add(name: str, value: float, *values: str) -> None:
        labels = ROUND_GAUGES[name][1]
        rows[name].append((dict(zip(labels, values, strict=True)), float(value)))

    for r in rounds:
        pool = r.pool
        for queue, q in sorted(r.stats.queues.items()):
            if q.gangs_considered:
                add(_S + "considered_jobs", q.considered, pool, queue)
                add(_S + "gangs_considered", q.gangs_considered, pool, queue)
                add(_S + "gangs_scheduled", q.gangs_scheduled, pool, queue)
                add(_S + "first_gang_queue_position", q.first_gang_position, pool, queue)
                add(_S + "last_gang_queue_position", q.last_gang_position, pool, queue)
                add(_S + "per_queue_schedule_cycle_times", q.seconds * 1000, pool, queue)
            if q.evicted_jobs:
                add(_S + "evicted_jobs", q.evicted_jobs, pool, queue)
                for resource, milli in sorted(q.evicted.items()):
                    add(_S + "evicted_resources", _units(resource, milli), pool, queue, resource)
        for queue, extra in sorted(r.penalty.items()):
            add(_S + "short_job_penalty", dominant_share(extra, r.capacity), pool, queue)
        add(_S + "loop_number", r.stats.loops, pool)
        for n in r.stats.nodes:
            preemptible = "true" if n.preemptible else "false"
            add(_S + "node_preemptibility", 1.0, pool, n.node, n.cluster, "", preemptible, n.reason)
    return rows


def pool_outcomes(rounds: list[PoolRound]) -> dict[tuple[tuple[str, str], ...], int]:
    """Increments of ``armada_scheduler_pool_scheduling_outcome``: one per pool's round."""
    out: dict[tuple[tuple[str, str], ...], int] = {}
    for r in rounds:
        reason = (
            RATE_LIMIT if r.rate_limited else MAX_RESOURCES if r.resource_limited else COMPLETED
        )
        key = tuple(zip(POOL_OUTCOME_LABELS, (r.pool, "success", reason), strict=True))
        out[key] = out.get(key, 0) + 1
    return out
