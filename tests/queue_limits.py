"""A queue's ``resourceLimitsByPriorityClassName`` for the tests of every surface: a
configuration with two pools, and the limits of the documented example in the shape
Armada's queue files and our API use (and we store)."""

from __future__ import annotations

from typing import Any

LIMITS = "resourceLimitsByPriorityClassName"
PC = "armada-preemptible"
POOLS = ("default", "gpu-pool")

#: Armada's shape, exactly as stored (both keys of a class present, fractions as floats).
EXAMPLE: dict[str, Any] = {
    PC: {
        "maximumResourceFraction": {"cpu": 0.3, "memory": 0.3},
        "maximumResourceFractionByPool": {"gpu-pool": {"maximumResourceFraction": {"cpu": 0.1}}},
    }
}

#: The example as a queue file writes it.
EXAMPLE_YAML = """\
resourceLimitsByPriorityClassName:
  armada-preemptible:
    maximumResourceFraction: {cpu: 0.3, memory: 0.3}
    maximumResourceFractionByPool:
      gpu-pool: {maximumResourceFraction: {cpu: 0.1}}
"""

#: (id, value, the field its error names) for the surfaces' refusal tests.
BAD = [
    (
        "over-one",
        {PC: {"maximumResourceFraction": {"cpu": 1.5}}},
        f"{LIMITS}.{PC}.maximumResourceFraction.cpu",
    ),
    ("unknown-class", {"armada-urgent": {}}, f"{LIMITS}.armada-urgent"),
    (
        "unknown-pool",
        {PC: {"maximumResourceFractionByPool": {"cpu-pool": {}}}},
        f"{LIMITS}.{PC}.maximumResourceFractionByPool.cpu-pool",
    ),
]


def two_pools(settings: Any) -> None:
    """Configure pools ``default`` and ``gpu-pool`` (and the default priority classes,
    ``armada-default`` and ``armada-preemptible``)."""
    from armada.core.config import parse_config

    settings.ARMADA = parse_config({"scheduling": {"pools": [{"name": p} for p in POOLS]}})
