"""core.resource_cost: requests held for a duration, in core-, GiB- and GPU-hours."""

from __future__ import annotations

import pytest

from armada.core.quantity import parse_quantity
from armada.core.resource_cost import ZERO, Cost, run_cost


def milli(**requests: str) -> dict[str, int]:
    names = {"cpu": "cpu", "memory": "memory", "gpu": "nvidia.com/gpu"}
    return {names[k]: parse_quantity(v) for k, v in requests.items()}


@pytest.mark.parametrize(
    ("requests", "seconds", "expected"),
    [
        (milli(cpu="2", memory="4Gi"), 3600, Cost(2.0, 4.0, 0.0)),
        (milli(cpu="500m", memory="512Mi"), 1800, Cost(0.25, 0.25, 0.0)),
        (milli(cpu="1", memory="1Gi", gpu="8"), 900, Cost(0.25, 0.25, 2.0)),
        (milli(memory="1G"), 3600, Cost(0.0, 10**9 / 2**30, 0.0)),
        (milli(cpu="4"), 0, ZERO),
        (milli(cpu="4"), -30, ZERO),  # clocks that disagree count as no time
        ({}, 3600, ZERO),
    ],
)
def test_run_cost(requests, seconds, expected):
    got = run_cost(requests, seconds)
    assert got.core_hours == pytest.approx(expected.core_hours)
    assert got.memory_gib_hours == pytest.approx(expected.memory_gib_hours)
    assert got.gpu_hours == pytest.approx(expected.gpu_hours)


def test_costs_add_scale_and_read_as_a_document():
    total = sum([Cost(1, 2, 3), Cost(0.5, 0.5, 0)], ZERO)
    assert total == Cost(1.5, 2.5, 3)
    assert total.scaled(0.5) == Cost(0.75, 1.25, 1.5)
    assert total.as_dict() == {"coreHours": 1.5, "memoryGibHours": 2.5, "gpuHours": 3.0}
