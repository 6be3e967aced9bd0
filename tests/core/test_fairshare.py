"""armada.core.fairshare: dominant resource fairness."""

from __future__ import annotations

import pytest

from armada.core.fairshare import dominant_share, weighted_cost
from armada.core.quantity import Resources

CAPACITY = Resources.parse({"cpu": "100", "memory": "400Gi", "nvidia.com/gpu": "8"})


def r(**values: str) -> Resources:
    return Resources.parse({("nvidia.com/gpu" if k == "gpu" else k): v for k, v in values.items()})


@pytest.mark.parametrize(
    ("allocated", "share"),
    [
        (Resources(), 0.0),
        (r(cpu="10"), 0.1),
        (r(cpu="10", memory="200Gi"), 0.5),
        (r(cpu="50", memory="100Gi"), 0.5),
        (r(cpu="1", gpu="2"), 0.25),
        (r(cpu="100", memory="400Gi", gpu="8"), 1.0),
        (r(cpu="200"), 2.0),
        (r(**{"example.com/fpga": "3"}), 0.0),
        ({"cpu": 0, "memory": 1024**3 * 1000 * 40}, 0.1),
        ({"cpu": -5000}, 0.0),
    ],
    ids=[
        "nothing",
        "cpu-only",
        "memory-dominates",
        "cpu-dominates",
        "gpu-dominates",
        "everything",
        "over-capacity",
        "resource-absent-from-pool",
        "plain-dict-with-zero",
        "negative-ignored",
    ],
)
def test_dominant_share(allocated, share):
    assert dominant_share(allocated, CAPACITY) == pytest.approx(share)


def test_dominant_share_of_an_empty_pool_is_zero():
    assert dominant_share(r(cpu="1"), Resources()) == 0.0


@pytest.mark.parametrize(
    ("allocated", "factor", "cost"),
    [
        (r(cpu="10"), 1.0, 0.1),
        (r(cpu="10"), 2.0, 0.2),
        (r(cpu="10"), 10.0, 1.0),
        (r(memory="100Gi"), 3.0, 0.75),
        (Resources(), 5.0, 0.0),
    ],
    ids=["factor-1", "factor-2", "factor-10", "memory-factor-3", "idle"],
)
def test_weighted_cost(allocated, factor, cost):
    assert weighted_cost(allocated, CAPACITY, factor) == pytest.approx(cost)


def test_higher_priority_factor_costs_more_for_the_same_use():
    use = r(cpu="10")
    assert weighted_cost(use, CAPACITY, 1.0) < weighted_cost(use, CAPACITY, 2.0)
    # A factor-2 queue with half the use costs the same as a factor-1 queue.
    assert weighted_cost(r(cpu="5"), CAPACITY, 2.0) == pytest.approx(
        weighted_cost(use, CAPACITY, 1.0)
    )
