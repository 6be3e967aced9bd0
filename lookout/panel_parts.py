"""What the job's side panel and its full page show, built once for both: the details (with
the runs and retries counted as the decision trail counts them, and the memory retries added
as an amount), the runs with their decision trails, the pod spec, the latest events and one
run's log.

Everything is read for this job only, with a fixed number of queries whatever the number of
its runs and events: the runs in one query, the log of the one run shown, the latest
``EVENTS_SHOWN`` events and their count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml

from armada.core.quantity import MEMORY, STANDARD_RESOURCES, parse_quantity
from armada.core.quantity_text import growth, readable_quantity
from armada.core.states import JobState, RunState
from armada.models import Job, Run, RunLog
from armada.services.authz import can_on_queue
from armada.services.records import pending_reason, retry_waiting
from armada.services.retry_cost_reads import job_retry_cost
from lookout.panel_html import runs_html, timeline_html
from lookout.panel_queries import LogVersion, job_runs, job_timeline, run_log, time_texts
from lookout.queries import EVENTS_SHOWN, decision_trail, job_event_count

ACTIVE_JOB_STATES = (JobState.LEASED, JobState.PENDING, JobState.RUNNING)


@dataclass(frozen=True)
class RunsSummary:
    """How many runs a job had and how many of its failures were retried, out of the retry
    limit its latest decision applied (None before any decision that names one)."""

    runs: int
    retries: int
    limit: int | None

    def __str__(self) -> str:
        retries = f"Retries {self.retries}" + (
            f" of {self.limit}" if self.limit is not None else ""
        )
        return f"Runs {self.runs} · {retries}"


def runs_summary(job: Job, runs: list[Run]) -> RunsSummary:
    """``runs`` newest first. The limit is the latest decision trail's ``retryLimit``, the
    budget the trail itself shows."""
    limit = None
    for run in runs:
        value = (run.decision or {}).get("retryLimit")
        if isinstance(value, int) and not isinstance(value, bool):
            limit = value
            break
    return RunsSummary(runs=len(runs), retries=job.retry_count, limit=limit)


def _milli(value: Any) -> int | None:
    """A memory amount as a trail or a requests map holds it (milli-units, or a quantity
    such as ``"256Mi"``), in milli-units; None when it is neither."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    try:
        return parse_quantity(value)
    except ValueError:
        return None


@dataclass(frozen=True)
class MemoryGrowth:
    """The memory a job asked for when submitted and what retries have grown it to, read as
    the decision trail reads a bump (``core.quantity_text``): ``256Mi → 864Mi (×3.375)``."""

    original: int
    current: int
    kind: str

    def __str__(self) -> str:
        before = readable_quantity(self.original, MEMORY)
        after = readable_quantity(self.current, MEMORY)
        change = growth(self.original, self.current, self.kind)
        return f"{before} → {after}" + (f" ({change})" if change else "")


def memory_growth(job: Job, runs: list[Run]) -> MemoryGrowth | None:
    """How retries grew the job's memory request: from the request before its first bump
    (the oldest trail's ``before``, or else its first run's request) to the job's request
    now (``services.mutations`` writes the grown spec's requests into ``job.requests``).
    None when no retry grew it."""
    kind = (job.mutations or {}).get("memoryKind")
    current = _milli((job.requests or {}).get(MEMORY))
    if not kind or not current:
        return None
    original = None
    for run in reversed(runs):  # oldest first
        bump = ((run.decision or {}).get("mutation") or {}).get("memory") or {}
        original = _milli(bump.get("before"))
        if original:
            break
    if not original and runs:
        original = _milli((runs[-1].requests or {}).get(MEMORY))
    if not original:
        return None
    return MemoryGrowth(original=original, current=current, kind=str(kind))


def resources(job: Job) -> list[tuple[str, str]]:
    """The job's requests as people write them, the standard resources first."""
    amounts = {name: _milli(value) for name, value in (job.requests or {}).items()}
    names = [r for r in STANDARD_RESOURCES if amounts.get(r) is not None]
    names += sorted(r for r in amounts if r not in STANDARD_RESOURCES and amounts[r] is not None)
    return [(name, readable_quantity(amounts[name], name)) for name in names]


def run_is_active(run: Run) -> bool:
    return not RunState(run.state).terminal


@dataclass(frozen=True)
class LogPart:
    """The log viewer's subject: one run (the latest unless another is asked for), its log
    and its version, and the runs it can switch to."""

    run: Run
    entry: RunLog | None
    version: LogVersion
    active: bool
    runs: list[Run]


def log_part(runs: list[Run], run_id: str | None) -> LogPart | None:
    """``runs`` newest first; ``run_id`` must be one of them (the caller checks) or None."""
    if not runs:
        return None
    run = next((r for r in runs if r.id == run_id), runs[0]) if run_id else runs[0]
    entry = run_log(run_id=run.id)
    return LogPart(run, entry, LogVersion.of(run, entry), run_is_active(run), runs)


def details_part(*, actor: Any, job: Job, runs: list[Run]) -> dict[str, Any]:
    """The Details tab: the job's facts, its runs and retries, what retries changed, why
    it is pending, and which actions ``actor`` may take."""
    live = not JobState(job.state).terminal
    active = job.state in ACTIVE_JOB_STATES
    return {
        "summary": runs_summary(job, runs),
        "memory_growth": memory_growth(job, runs),
        "avoid_nodes": (job.mutations or {}).get("avoidNodes") or [],
        "resources": resources(job),
        "annotations": sorted((job.annotations or {}).items()),
        "scheduling_reason": pending_reason(job),
        "can_cancel": live and can_on_queue(actor, job.queue, "cancel"),
        "can_reprioritize": live and can_on_queue(actor, job.queue, "reprioritize"),
        "can_preempt": active and can_on_queue(actor, job.queue, "preempt"),
    }


RUN_TIMES = (
    ("Leased", "leased_at"),
    ("Pending", "pending_at"),
    ("Started", "running_at"),
    ("Finished", "finished_at"),
)


def runs_part(
    runs: list[Run], now: datetime | None = None, waiting: dict | None = None
) -> dict[str, Any]:
    """The Runs tab, as HTML (``lookout.panel_html.runs_html``): each run with its decision
    trail (as ``run.trail``) and its times as ``run.times``, ``(label, ISO time, shown
    time)`` for those it has. A run whose failed pod its executor kept has ``run.pod_kept``:
    (still kept at ``now``, ISO time, shown time) of ``pod_kept_until``. ``waiting``: what
    the retry of the latest run waits for (``services.records.retry_waiting``), added to
    its trail."""
    for run in runs:
        run.trail = decision_trail(run)
        run.times = [
            (label, *time_texts(getattr(run, name)))
            for label, name in RUN_TIMES
            if getattr(run, name) is not None
        ]
        until = run.pod_kept_until
        run.pod_kept = (now is None or until > now, *time_texts(until)) if until else None
    if waiting and runs and runs[0].trail is not None:
        runs[0].trail = [*runs[0].trail, ("Waiting for", str(waiting["reason"]))]
    return {"runs_html": runs_html(runs)}


def yaml_part(job: Job) -> dict[str, Any]:
    return {
        "pod_spec_yaml": yaml.safe_dump(job.pod_spec, sort_keys=False, default_flow_style=False)
    }


def events_part(job: Job, *, all_events: bool = False) -> dict[str, Any]:
    """The Events tab: the latest ``EVENTS_SHOWN`` events and how many there are, or all."""
    events = job_timeline(job=job, last=None if all_events else EVENTS_SHOWN)
    events_total = len(events)
    if not all_events and events_total >= EVENTS_SHOWN:
        events_total = job_event_count(job=job)
    return {
        "events": events,
        "events_html": timeline_html(events),
        "events_total": events_total,
        "all_events": all_events,
    }


def logs_part(runs: list[Run], run_id: str | None = None) -> dict[str, Any]:
    return {"log": log_part(runs, run_id)}


PARTS = ("details", "runs", "yaml", "events", "logs")


def job_context(
    *,
    actor: Any,
    job: Job,
    now: datetime,
    parts: tuple[str, ...] = PARTS,
    runs: list[Run] | None = None,
    all_events: bool = False,
    log_run_id: str | None = None,
) -> dict[str, Any]:
    """The template context of the job's ``parts`` (``templates/lookout/panel/``), each
    read only when asked for. ``runs`` (newest first) when the caller read them already;
    ``log_run_id`` picks the run whose log is shown (one of the job's, checked by the
    caller)."""
    if runs is None and {"details", "runs", "logs"} & set(parts):
        runs = job_runs(job=job)
    runs = runs or []
    for run in runs:
        run.active = run_is_active(run)
    context: dict[str, Any] = {"job": job, "now": now, "runs": runs}
    if "details" in parts:
        context.update(details_part(actor=actor, job=job, runs=runs))
        # What its retried attempts cost, from the runs already read (services.retry_cost).
        context["retry_cost"] = job_retry_cost(job=job, now=now, runs=runs).sentence()
    if "runs" in parts:
        context.update(runs_part(runs, now, waiting=retry_waiting(job, runs[0] if runs else None)))
    if "yaml" in parts:
        context.update(yaml_part(job))
    if "events" in parts:
        context.update(events_part(job, all_events=all_events))
    if "logs" in parts:
        context.update(logs_part(runs, log_run_id))
    return context
