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
