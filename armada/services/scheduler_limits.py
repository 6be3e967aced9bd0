"""The limits of each round (``core.limits``), resolved from the configuration and the
queues, and the per-queue lease-rate buckets the scheduler process keeps between cycles.

A queue's bucket (``maximumPerQueueSchedulingRate``/``Burst``) starts full when the queue is
first seen by this process (a restarted scheduler may so lease a burst per queue at once,
as a new Armada scheduler does); buckets of queues that no longer exist are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from armada.core.away import AwayPlanner
from armada.core.limits import RoundLimits, class_fractions
from armada.core.ratelimit import TokenBucket
from armada.core.snapshot import Taint
from armada.models import Queue

_buckets: dict[str, TokenBucket] = {}
_bucket_config: tuple[float, int] | None = None


def queue_buckets(scheduling, queues: Iterable[Queue]) -> dict[str, TokenBucket] | None:
    """This process's bucket per queue, or None when there is no per-queue rate."""
    global _bucket_config
    rate = scheduling.maximum_per_queue_scheduling_rate
    burst = scheduling.maximum_per_queue_scheduling_burst
    if rate <= 0:
        _buckets.clear()
        _bucket_config = None
        return None
    if _bucket_config != (rate, burst):
        _buckets.clear()
        _bucket_config = (rate, burst)
    names = {q.name for q in queues}
    for gone in set(_buckets) - names:
        del _buckets[gone]
    for name in names:
        if name not in _buckets:
            _buckets[name] = TokenBucket(rate=rate, burst=burst)
    return _buckets


_planner: tuple[object, AwayPlanner] | None = None


def away_planner(scheduling) -> AwayPlanner:
    """Where each priority class's jobs may go away from home (``core.away``), made once per
    configuration."""
    global _planner
    if _planner is None or _planner[0] is not scheduling:
        node_types = {
            t.name: tuple(Taint(x.key, x.value, x.effect) for x in t.taints)
            for t in scheduling.well_known_node_types
        }
        _planner = (scheduling, AwayPlanner(scheduling.away_entries(), node_types))
    return _planner[1]


def queue_buckets_reset() -> None:
    """Forget the buckets (a new process, or tests)."""
    global _bucket_config
    _buckets.clear()
    _bucket_config = None


def round_limits(
    scheduling,
    pool: str,
    queues: Iterable[Queue],
    tokens: Mapping[str, int] | None,
) -> RoundLimits:
    """The limits of one round in ``pool``: each queue's fractions per priority class
    (merged, ``core.limits.class_fractions``), the round's, the pool's floating amounts and
    the leases each queue's bucket allows now (``tokens``)."""
    classes = scheduling.priority_classes
    per_queue: dict[str, dict[str, dict[str, float]]] = {}
    for q in queues:
        own = q.resource_limits_by_priority_class_name or {}
        fractions = {}
        for name, pc in classes.items():
            merged = class_fractions(
                pool=pool,
                class_default=pc.maximum_resource_fraction_per_queue,
                class_by_pool=pc.maximum_resource_fraction_per_queue_by_pool,
                queue_limits=own.get(name),
            )
            if merged:
                fractions[name] = merged
        if fractions:
            per_queue[q.name] = fractions
    return RoundLimits(
        class_fractions=per_queue,
        to_schedule=scheduling.to_schedule(pool),
        floating=scheduling.floating_amounts(pool),
        queue_tokens=tokens,
        queue_burst=scheduling.maximum_per_queue_scheduling_burst if tokens is not None else 0,
        max_new_job_seconds=scheduling.max_new_job_scheduling_duration,
        max_new_job_seconds_per_queue=scheduling.max_new_job_scheduling_duration_per_queue,
    )
