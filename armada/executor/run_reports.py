"""What the agent reports about a run, built from what the backend says of its pod."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from armada.core.categorizer import INTERNAL, Categorization, ContainerSignal, FailureSignals
from armada.core.reports import ContainerEnd, RunReport
from armada.core.states import RunState
from armada.executor.backends.base import PodStatus


class Progressing(Protocol):
    id: str
    state: RunState


def signals_of(status: PodStatus) -> FailureSignals:
    return FailureSignals(
        containers=tuple(
            ContainerSignal(c.name, c.exit_code, c.reason, c.message) for c in status.containers
        ),
        conditions=frozenset(status.conditions),
        pod_error=status.pod_error,
    )


def container_ends(status: PodStatus) -> tuple[ContainerEnd, ...]:
    """The containers of ``status`` that ended, each with its own outcome."""
    return tuple(
        ContainerEnd(c.name, c.exit_code, c.reason, c.message)
        for c in status.containers
        if c.exit_code is not None
    )


def progress_reports(run: Progressing, status: PodStatus) -> list[RunReport]:
    """Reports for the phases ``status`` has passed that ``run`` has not (success excluded)."""
    out: list[RunReport] = []
    order = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
    reached = order.index(run.state) if run.state in order else len(order)
    uid = status.uid
    if status.pending_at and reached < 1:
        out.append(RunReport(run.id, RunState.PENDING, status.pending_at, kubernetes_id=uid))
    if status.running_at and reached < 2:
        out.append(RunReport(run.id, RunState.RUNNING, status.running_at, kubernetes_id=uid))
    return out


def success_report(run_id: str, status: PodStatus, at: datetime, log_text: str) -> RunReport:
    return RunReport(
        run_id,
        RunState.SUCCEEDED,
        at,
        exit_code=0,
        exit_codes=status.exit_codes,
        log=log_text,
        kubernetes_id=status.uid,
        containers=container_ends(status),
    )


def failure_report(
    run_id: str,
    status: PodStatus,
    category: Categorization,
    at: datetime,
    log_text: str | None,
    pod_kept_until: datetime | None = None,
) -> RunReport:
    return RunReport(
        run_id,
        RunState.FAILED,
        at,
        exit_code=status.exit_code,
        exit_codes=status.exit_codes,
        reason=status.reason or "Error",
        message=status.message or status.pod_error,
        failure_category=category.category,
        failure_subcategory=category.subcategory,
        hint=category.hint,
        log=log_text,
        pod_kept_until=pod_kept_until,
        kubernetes_id=status.uid,
        containers=container_ends(status),
        conditions=status.conditions,
    )


def internal_failure(
    run_id: str,
    subcategory: str,
    at: datetime,
    reason: str,
    message: str,
    log_text: str | None = None,
) -> RunReport:
    return RunReport(
        run_id,
        RunState.FAILED,
        at,
        reason=reason,
        message=message,
        failure_category=INTERNAL,
        failure_subcategory=subcategory,
        log=log_text,
    )


def ingress_report(run_id: str, status: PodStatus, at: datetime) -> RunReport:
    """Where the job's ports can be reached (its ingress info), sent once per run while it
    runs: a RUNNING report with ``ingress_addresses``."""
    return RunReport(
        run_id,
        RunState.RUNNING,
        status.running_at or at,
        ingress_addresses=dict(status.ingress_addresses),
        kubernetes_id=status.uid,
    )
