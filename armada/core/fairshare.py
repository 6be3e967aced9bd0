"""Dominant resource fairness: what a queue costs and how far it is from its share."""

from __future__ import annotations

from collections.abc import Mapping


def dominant_share(allocated: Mapping[str, int], capacity: Mapping[str, int]) -> float:
    """The largest fraction of the pool's capacity of any one resource that ``allocated`` takes."""
    share = 0.0
    for resource, amount in allocated.items():
        total = capacity.get(resource, 0)
        if amount > 0 and total > 0:
            share = max(share, amount / total)
    return share


def weighted_cost(
    allocated: Mapping[str, int], capacity: Mapping[str, int], priority_factor: float
) -> float:
    """Cost divided by weight, where weight is ``1 / priority_factor``; lower goes first."""
    return dominant_share(allocated, capacity) * priority_factor


def adjusted_fair_shares(
    weights: Mapping[str, float], demand: Mapping[str, float]
) -> dict[str, float]:
    """Shares by weight, where a queue asking for less than its share gets its demand and
    the rest is shared out among the others, again by weight, until every queue either has
    its demand or a share below it (the demand-capped adjusted fair share)."""
    left, open_, out = 1.0, set(weights), {}
    while open_:
        total = sum(weights[q] for q in open_)
        if total <= 0:
            break
        share = {q: left * weights[q] / total for q in open_}
        capped = {q for q in open_ if demand.get(q, 0.0) <= share[q]}
        if not capped:
            out.update(share)
            break
        for q in capped:
            out[q] = demand.get(q, 0.0)
            left -= out[q]
        open_ -= capped
    return out


def uncapped_adjusted_fair_shares(
    weights: Mapping[str, float], demand: Mapping[str, float]
) -> dict[str, float]:
    """Each queue's adjusted fair share were its own demand unbounded, the others' as they
    are: its fair share plus its part of what queues asking for less leave over, not capped
    by what it asks for itself (so a queue is not marked down for asking little)."""
    out = {}
    for q in weights:
        unbounded = dict(demand)
        unbounded[q] = float("inf")
        out[q] = adjusted_fair_shares(weights, unbounded).get(q, 0.0)
    return out
