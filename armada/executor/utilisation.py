"""The executor's side of the ``utilisation`` events: reading running pods' usage, and one
report per run per ``utilisationPeriod``.

Each tick the agent hands over the pods it polled. A reading of every running pod of a held
run is taken a few times a period (``SAMPLES_PER_PERIOD``: a reading may cost the cluster a
request) from a backend that can read usage (``backends.base.UsageReader``); once a period
has passed since the run's last report (or since its pod was first seen running), the
period's aggregation (``core.utilisation``) is queued to be sent with the next report batch.
A run whose pod stops running is forgotten, with whatever its last period held (the server
publishes at most one event per run per period anyway).

What is queued and not yet sent waits for the next batch, newest per run only: utilisation
is a sample, so a report lost to an unreachable server is replaced, not resent in bulk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from armada.core.reports import RunUtilisation
from armada.core.utilisation import UsageAggregation, due, scaled
from armada.executor.backends.base import PodStatus

SAMPLES_PER_PERIOD = 5


@dataclass
class _Tracked:
    started: datetime
    uid: str
    aggregation: UsageAggregation = field(default_factory=UsageAggregation)
    reported_at: datetime | None = None


class UtilisationTracker:
    def __init__(self, backend: object, period: float) -> None:
        self.read = getattr(backend, "usage", None)
        self.period = period
        self.runs: dict[str, _Tracked] = {}
        self.outbox: dict[str, RunUtilisation] = {}
        self._sampled_at: datetime | None = None

    @property
    def enabled(self) -> bool:
        return self.read is not None

    def observe(self, pods: Mapping[str, PodStatus], held: Iterable[str], now: datetime) -> None:
        """Take a reading when one is due, and queue the reports whose period has passed."""
        if self.read is None:
            return
        held = set(held)
        running = {
            s.run_id: s
            for s in pods.values()
            if s.run_id in held and s.running_at and not s.finished_at and not s.deleting
        }
        for run_id in self.runs.keys() - running.keys():
            del self.runs[run_id]
        if not running:
            return
        gap = self.period / SAMPLES_PER_PERIOD
        if self._sampled_at is not None and (now - self._sampled_at).total_seconds() < gap:
            return
        self._sampled_at = now
        samples = self.read(list(running.values()), now)
        for run_id, status in running.items():
            tracked = self.runs.get(run_id)
            if tracked is None:
                tracked = self.runs[run_id] = _Tracked(started=now, uid=status.uid)
            sample = samples.get(status.name)
            if sample is not None:
                tracked.aggregation.add(sample)
            if due(tracked.reported_at, tracked.started, now, self.period):
                report = tracked.aggregation.report(run_id, now, tracked.uid)
                if report is not None:
                    tracked.reported_at = now
                    self.outbox[run_id] = _scaled(report)

    def take(self) -> list[RunUtilisation]:
        """The queued reports, oldest run first; they stay queued until ``sent``."""
        return list(self.outbox.values())

    def sent(self, reports: Iterable[RunUtilisation]) -> None:
        for report in reports:
            if self.outbox.get(report.run_id) is report:
                del self.outbox[report.run_id]


def _scaled(report: RunUtilisation) -> RunUtilisation:
    return RunUtilisation(
        run_id=report.run_id,
        at=report.at,
        kubernetes_id=report.kubernetes_id,
        max_usage=scaled(report.max_usage),
        avg_usage=scaled(report.avg_usage),
        cumulative=scaled(report.cumulative),
    )
