"""Summing up what a running pod uses over a utilisation period.

A backend reads a pod's usage now and then (:class:`UsageSample`); the executor adds each
reading to the pod's :class:`UsageAggregation` and, once a period has passed, reports the
aggregation as a ``RunUtilisation`` (``core.reports``) and starts the next period. As in
Armada's executor, a period's report holds the largest and the mean reading of the period
and the pod's cumulative usage since it started.

Every amount is in milli-units (``core.quantity``): cpu in millicores (cumulative: millicore
seconds), memory in milli-bytes. A reading without a current cpu figure gets one from the
cumulative cpu of this reading and the one before (the cgroup counters give only that).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from armada.core.quantity import CPU
from armada.core.reports import RunUtilisation


@dataclass(frozen=True)
class UsageSample:
    """One reading of a pod's usage at ``at``: ``current`` what it uses now, ``cumulative``
    what it used since it started."""

    at: datetime
    current: Mapping[str, int] = field(default_factory=dict)
    cumulative: Mapping[str, int] = field(default_factory=dict)


class UsageAggregation:
    """The readings of one pod in the current period (see the module docstring)."""

    def __init__(self) -> None:
        self.max: dict[str, int] = {}
        self._sum: dict[str, int] = {}
        self._count: dict[str, int] = {}
        self.cumulative: dict[str, int] = {}
        self._last: UsageSample | None = None

    def add(self, sample: UsageSample) -> None:
        last = self._last
        if last is not None and sample.at <= last.at:
            return  # the same reading again (or an older one): nothing new
        current = dict(sample.current)
        if CPU not in current and CPU in sample.cumulative and last is not None:
            seconds = (sample.at - last.at).total_seconds()
            before = last.cumulative.get(CPU)
            if before is not None and seconds > 0 and sample.cumulative[CPU] >= before:
                current[CPU] = round((sample.cumulative[CPU] - before) / seconds)
        for name, value in current.items():
            self.max[name] = max(self.max.get(name, value), value)
            self._sum[name] = self._sum.get(name, 0) + value
            self._count[name] = self._count.get(name, 0) + 1
        for name, value in sample.cumulative.items():
            self.cumulative[name] = max(self.cumulative.get(name, value), value)
        self._last = sample

    @property
    def empty(self) -> bool:
        return not self.max

    @property
    def average(self) -> dict[str, int]:
        return {name: round(self._sum[name] / self._count[name]) for name in self._sum}

    def report(self, run_id: str, at: datetime, kubernetes_id: str = "") -> RunUtilisation | None:
        """The period's report (None when it had no reading), and a new period begins; the
        cumulative usage and the last reading carry over."""
        if self.empty:
            return None
        out = RunUtilisation(
            run_id=run_id,
            at=at,
            kubernetes_id=kubernetes_id,
            max_usage=dict(self.max),
            avg_usage=self.average,
            cumulative=dict(self.cumulative),
        )
        self.max, self._sum, self._count = {}, {}, {}
        return out


def due(last_reported: datetime | None, started: datetime, now: datetime, period: float) -> bool:
    """Whether a period has passed since the last report (or since the pod was first seen)."""
    since = last_reported or started
    return (now - since).total_seconds() >= period


def scaled(values: Mapping[str, int]) -> dict[str, int]:
    """Usage in milli-units with memory-like amounts rounded to whole bytes (a byte count
    reads better as ``512Mi`` than as ``536870912000m``)."""
    return {
        name: (value if name == CPU else round(value / 1000) * 1000)
        for name, value in values.items()
    }
