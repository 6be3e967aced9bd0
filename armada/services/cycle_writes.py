"""What a scheduling cycle writes once its rounds are decided (steps 4-6 of
``services.scheduler``): the leases, the preempted runs' stops, the round's record and the
cycle's metrics.

A :class:`CyclePlan` holds everything those writes need and nothing of the process's job
database, so that they can run on other threads than the one computing the next round
(``services.lease_pipeline``): :func:`write_decisions` (the leases and stops, which the job
database is settled with) on one, :func:`write_record` (the record and metrics) on another
once those are written. :func:`write_plan` does both in turn. What was really written is
returned (:class:`Written`): a job cancelled or changed since the round read it is not
leased.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from armada.core.scheduling import Lease
from armada.services.cycle_metrics import cycle_metrics_write
from armada.services.duration_metrics import duration_gauge_rows
from armada.services.leader import leader_fence
from armada.services.records import records_write
from armada.services.round_metrics import PoolRound
from armada.services.scheduler_leases import write_leases
from armada.services.stopping import PREEMPT, runs_request_stops

if TYPE_CHECKING:
    from armada.services.scheduler import CycleReport


@dataclass
class CyclePlan:
    """A cycle's decisions, ready to be written."""

    now: datetime
    started: float  # ``time.perf_counter()`` at the cycle's start
    leases: list[tuple[str, Lease]]
    planned: dict[str, tuple[str, str, str, str]]  # job -> (run, executor, node, pool)
    away: dict[str, Any]
    preempted: dict[str, str]  # job -> reason
    preempted_for: dict[str, str]  # preempted job -> the job it made room for
    preempted_runs: dict[str, Any]  # preempted job -> its active run (for the metrics)
    report: CycleReport
    reconciled_ms: int
    pool_ms: dict[str, int]
    rounds: list[PoolRound]
    durations_pools: list[str] | None  # the pools whose duration gauges are due, or None
    lease_name: str = "scheduler"
    holder: str = ""


@dataclass
class Written:
    """What :func:`write_plan` wrote."""

    leased_ids: list[str] = field(default_factory=list)
    lease_runs: list[dict] = field(default_factory=list)  # the run rows, once committed
    marked: list[str] = field(default_factory=list)  # runs whose stop was marked
    new_runs: dict[str, str] = field(default_factory=dict)  # leased job -> its new run

    def unwritten(self, plan: CyclePlan) -> set[str]:
        """The planned jobs that were not leased."""
        return set(plan.planned) - set(self.leased_ids)


def write_plan(plan: CyclePlan) -> Written:
    """Write the cycle's decisions (:func:`write_decisions`), then its record
    (:func:`write_record`)."""
    out = write_decisions(plan)
    write_record(plan, out)
    return out


def write_decisions(plan: CyclePlan) -> Written:
    """Write the leases (under the scheduler lease's fence: a holder that lost it writes
    nothing and ``leader.LeaseLost`` is raised), then the stops of the runs the round
    preempted, each in a transaction of its own."""
    out = Written()
    if plan.leases:
        out.leased_ids = write_leases(
            plan.leases,
            plan.now,
            out.new_runs,
            plan.away,
            out.lease_runs,
            fence=lambda: leader_fence(name=plan.lease_name, holder=plan.holder),
            planned=plan.planned,
        )
    if plan.preempted:
        out.marked = runs_request_stops(
            reasons=plan.preempted,
            kind=PREEMPT,
            now=plan.now,
            preempted_by={
                job_id: (by, out.new_runs.get(by, "")) for job_id, by in plan.preempted_for.items()
            },
        )
    return out


def write_record(plan: CyclePlan, out: Written) -> None:
    """Record the round (``services.records``) and count the cycle in its metrics
    (``services.cycle_metrics``), each in a transaction of its own, once its decisions are
    written (``out``). Nothing in the job database depends on these."""
    report = plan.report
    duration_ms = int((time.perf_counter() - plan.started) * 1000)
    records_write(
        started_at=plan.now,
        duration_ms=duration_ms,
        considered=report.considered,
        leased_ids=out.leased_ids,
        expired=report.expired,
        decided=report.decided,
        unschedulable=report.unschedulable,
    )
    cycle_metrics_write(
        duration_ms=duration_ms,
        leases=plan.leases,
        leased_ids=out.leased_ids,
        preempted=plan.preempted,
        runs=plan.preempted_runs,
        marked_run_ids=out.marked,
        reconciliation_ms=plan.reconciled_ms,
        pool_ms=plan.pool_ms,
        rounds=plan.rounds,
        gauges=(
            duration_gauge_rows(now=plan.now, pools=plan.durations_pools)
            if plan.durations_pools is not None
            else None
        ),
    )
