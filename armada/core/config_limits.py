"""The scheduling limits' part of ``config/armada.yaml`` (``core.limits`` applies them).

- ``scheduling.priorityClasses.<name>.maximumResourceFractionPerQueue`` and
  ``...ByPool``: what one queue may hold of the class, as fractions of the pool;
- ``scheduling.maximumResourceFractionToSchedule`` and ``...ByPool``: what one round may
  hand out;
- ``scheduling.maximumPerQueueSchedulingRate``/``Burst``: each queue's lease rate;
- ``scheduling.floatingResources``: pool-wide amounts of resources no node owns;
- ``scheduling.maxNewJobSchedulingDuration`` and ``...PerQueue``: how long a round may work
  on new jobs;
- ``scheduling.wellKnownNodeTypes`` and a priority class's ``awayNodeTypes``: where a class's
  jobs may run away from home (``core.away``).

Key names and meanings are Armada's. Fractions are from 0 to 1; a pool named under
``...ByPool`` or a floating resource's ``pools`` must be one of ``scheduling.pools``
(checked by ``config.Scheduling``, which knows the pools).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, StrictInt, field_validator, model_validator

from armada.core.away import AwayEntry, AwayTarget, Condition
from armada.core.config_executors import Taint
from armada.core.config_types import Duration, Strict
from armada.core.quantity import STANDARD_RESOURCES, parse_quantity


def _fractions(value: Any) -> dict[str, float]:
    """resource name -> a fraction from 0 to 1; the error names the resource."""
    if not isinstance(value, dict):
        raise ValueError("expected a mapping of resource name to a fraction from 0 to 1")
    out: dict[str, float] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not k.strip():
            raise ValueError(f"resource name {k!r} must be a non-empty string")
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ValueError(f"{k}: must be a number from 0 to 1, not {v!r}")
        if not 0 <= v <= 1:
            raise ValueError(f"{k}: must be a number from 0 to 1, not {v!r}")
        out[k] = float(v)
    return out


def _fractions_by_pool(value: Any) -> dict[str, dict[str, float]]:
    if not isinstance(value, dict):
        raise ValueError("expected a mapping of pool name to resource fractions")
    out: dict[str, dict[str, float]] = {}
    for pool, fractions in value.items():
        try:
            out[str(pool)] = _fractions(fractions)
        except ValueError as exc:
            raise ValueError(f"{pool}.{exc}") from exc
    return out


Fractions = Annotated[dict[str, float], BeforeValidator(_fractions)]
FractionsByPool = Annotated[dict[str, dict[str, float]], BeforeValidator(_fractions_by_pool)]


def _quantity(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"must be a quantity such as 10 or 500m, not {value!r}")
    return parse_quantity(value)


Quantity = Annotated[int, BeforeValidator(_quantity)]


class FloatingResourcePool(Strict):
    name: str = Field(min_length=1)
    # The amount (milli-units, read from text such as "10" or "500m") the pool's jobs share.
    quantity: Quantity


class FloatingResource(Strict):
    """A resource jobs ask for like any other but that no node owns: the pool holds an
    amount of it, shared by the pool's active jobs (Armada's ``FloatingResourceConfig``)."""

    name: str = Field(min_length=1)
    # Armada tracks the amount in steps of this size; amounts here are exact milli-units,
    # so it is read and checked, and changes nothing.
    resolution: Quantity = 1
    pools: list[FloatingResourcePool] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _not_a_node_resource(cls, v: str) -> str:
        if v in STANDARD_RESOURCES:
            raise ValueError(
                f"{v!r} is a resource nodes own; a floating resource needs its own name"
            )
        return v

    @field_validator("pools")
    @classmethod
    def _pools_once(cls, v: list[FloatingResourcePool]) -> list[FloatingResourcePool]:
        names = [p.name for p in v]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"pool(s) {', '.join(dupes)} named more than once")
        return v

    def amount(self, pool: str) -> int:
        """The pool's amount (0 in a pool not listed)."""
        return next((p.quantity for p in self.pools if p.name == pool), 0)


class WellKnownNodeType(Strict):
    """A kind of node, known by its taints: a node is of the type when it has them all."""

    name: str = Field(min_length=1)
    taints: list[Taint] = Field(default_factory=list)


class AwayNodeTypeCondition(Strict):
    resource: str = Field(min_length=1)
    operator: Literal[">", "<", "=="]
    value: Quantity


class AwayTypeEntry(Strict):
    # A wellKnownNodeTypes name, or "*" for every type.
    name: str = Field(min_length=1)
    conditions: list[AwayNodeTypeCondition] = Field(default_factory=list)


class AwayNodeType(Strict):
    """Where a priority class's jobs may run away from home, and at which priority."""

    priority: StrictInt = Field(ge=0)
    well_known_node_type_name: str = Field("", alias="wellKnownNodeTypeName")
    node_types: list[AwayTypeEntry] = Field(default_factory=list, alias="nodeTypes")

    @model_validator(mode="after")
    def _names_a_type(self) -> AwayNodeType:
        if not self.well_known_node_type_name and not self.node_types:
            raise ValueError("give wellKnownNodeTypeName or nodeTypes (the node types it may use)")
        return self

    def entry(self) -> AwayEntry:
        targets = (
            [AwayTarget(self.well_known_node_type_name)] if self.well_known_node_type_name else []
        )
        targets += [
            AwayTarget(
                t.name, tuple(Condition(c.resource, c.operator, c.value) for c in t.conditions)
            )
            for t in self.node_types
        ]
        return AwayEntry(priority=self.priority, targets=tuple(targets))


class SchedulingLimits(Strict):
    """The fields of ``scheduling`` that limit a round (mixed into ``config.Scheduling``)."""

    maximum_resource_fraction_to_schedule: Fractions = Field(
        default_factory=dict, alias="maximumResourceFractionToSchedule"
    )
    maximum_resource_fraction_to_schedule_by_pool: FractionsByPool = Field(
        default_factory=dict, alias="maximumResourceFractionToScheduleByPool"
    )
    # Per queue, like maximumSchedulingRate/Burst; a rate of 0 means no per-queue limit.
    maximum_per_queue_scheduling_rate: float = Field(
        0.0, alias="maximumPerQueueSchedulingRate", ge=0.0, allow_inf_nan=False
    )
    maximum_per_queue_scheduling_burst: StrictInt = Field(
        1000, alias="maximumPerQueueSchedulingBurst", gt=0
    )
    # Seconds a round may spend on new jobs, in all and per queue (0: no limit).
    max_new_job_scheduling_duration: Duration = Field(
        0.0, alias="maxNewJobSchedulingDuration", ge=0
    )
    max_new_job_scheduling_duration_per_queue: Duration = Field(
        0.0, alias="maxNewJobSchedulingDurationPerQueue", ge=0
    )
    # An executor holding more leased runs than this that it has not yet acknowledged (run
    # state ``leased``) gets no new leases until it catches up (0: no limit).
    max_unacknowledged_jobs_per_executor: StrictInt = Field(
        0, alias="maxUnacknowledgedJobsPerExecutor", ge=0
    )
    floating_resources: list[FloatingResource] = Field(
        default_factory=list, alias="floatingResources"
    )
    well_known_node_types: list[WellKnownNodeType] = Field(
        default_factory=list, alias="wellKnownNodeTypes"
    )

    def to_schedule(self, pool: str) -> dict[str, float]:
        """The fractions one round in ``pool`` may hand out (the pool's entry replaces the
        default as a whole, as in Armada)."""
        by_pool = self.maximum_resource_fraction_to_schedule_by_pool
        return dict(by_pool.get(pool, self.maximum_resource_fraction_to_schedule))

    def floating_amounts(self, pool: str) -> dict[str, int]:
        return {f.name: f.amount(pool) for f in self.floating_resources}

    @property
    def floating_names(self) -> frozenset[str]:
        return frozenset(f.name for f in self.floating_resources)


def unknown_pools(named: Mapping[str, Any] | list[str], pools: set[str]) -> list[str]:
    return sorted(set(named) - pools)
