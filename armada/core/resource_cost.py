"""What a run cost: its resource requests held for its duration, in the units people budget in.

Requests are milli-units (``core.quantity``): cpu in millicores, memory in milli-bytes, GPUs
in milli-GPUs. A run holds what it requested from its lease to its end, so its cost is each
request times that duration: core-hours, memory GiB-hours (2**30 bytes) and GPU-hours.
Costs add up with ``+`` and ``sum(..., ZERO)``. Pure arithmetic: the caller measures the
duration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from armada.core.quantity import CPU, GPU, MEMORY

_HOUR = 3600.0
_MILLI_PER_GIB = 1000.0 * 2**30


@dataclass(frozen=True)
class Cost:
    core_hours: float = 0.0
    memory_gib_hours: float = 0.0
    gpu_hours: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.core_hours + other.core_hours,
            self.memory_gib_hours + other.memory_gib_hours,
            self.gpu_hours + other.gpu_hours,
        )

    def scaled(self, factor: float) -> Cost:
        """This cost times ``factor`` (an estimate: a fraction of attempts, say)."""
        return Cost(
            self.core_hours * factor, self.memory_gib_hours * factor, self.gpu_hours * factor
        )

    def as_dict(self) -> dict[str, float]:
        return {
            "coreHours": round(self.core_hours, 6),
            "memoryGibHours": round(self.memory_gib_hours, 6),
            "gpuHours": round(self.gpu_hours, 6),
        }


ZERO = Cost()


def run_cost(requests: Mapping[str, int], seconds: float) -> Cost:
    """The cost of holding ``requests`` (milli-units) for ``seconds``; a negative duration
    (clocks disagreeing) counts as none."""
    hours = max(seconds, 0.0) / _HOUR
    return Cost(
        core_hours=requests.get(CPU, 0) / 1000.0 * hours,
        memory_gib_hours=requests.get(MEMORY, 0) / _MILLI_PER_GIB * hours,
        gpu_hours=requests.get(GPU, 0) / 1000.0 * hours,
    )
