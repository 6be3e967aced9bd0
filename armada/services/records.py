"""Scheduling records: why each queued job was not leased, readable through the API.

Every cycle stores a ``SchedulingRound`` (the last ``KEEP_ROUNDS`` are kept) and, for each
queued job it considered and did not lease, the reason (``SchedulingReason``, one row per
job, replaced when the reason changes and removed when the job is leased). The scheduler
process remembers what it last wrote, so a steady backlog costs no writes per cycle; after a
restart the first cycle writes them all once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import transaction

from armada.models import SchedulingReason, SchedulingRound
from armada.services.bulk import upsert_rows

KEEP_ROUNDS = 100
_written: dict[str, str] = {}  # job id -> reason last written by this process


def records_write(
    *,
    started_at: datetime,
    duration_ms: int,
    considered: int,
    leased_ids: Iterable[str],
    expired: int,
    decided: int,
    unschedulable: Mapping[str, str],
) -> SchedulingRound:
    leased = list(leased_ids)
    with transaction.atomic():
        round_ = SchedulingRound.objects.create(
            started_at=started_at,
            duration_ms=duration_ms,
            considered=considered,
            leased=len(leased),
            expired=expired,
            decided=decided,
            unschedulable=len(unschedulable),
        )
        changed = {
            job_id: reason
            for job_id, reason in unschedulable.items()
            if _written.get(job_id) != reason
        }
        if changed:
            upsert_rows(
                SchedulingReason,
                [
                    {"job_id": j, "reason": r, "round_id": round_.id, "updated_at": started_at}
                    for j, r in changed.items()
                ],
                update_fields=["reason", "round", "updated_at"],
            )
        if leased:
            SchedulingReason.objects.filter(job_id__any=leased).delete()
        oldest_kept = round_.id - KEEP_ROUNDS
        if oldest_kept > 0:
            SchedulingRound.objects.filter(id__lte=oldest_kept).delete()
    _written.update(changed)
    for job_id in leased:
        _written.pop(job_id, None)
    return round_


def forget_written() -> None:
    """Forget what was written (a new process, or tests)."""
    _written.clear()


NOT_REACHED = (
    "not reached in the latest round: a limit stopped the round or the job's queue before"
    " this job (the round's job or resource limit, the lease rate, the queue's own rate or"
    " its lookback)"
)


def pending_reason(job) -> dict | None:
    """Why a queued job is still waiting: the reason recorded for it, or, when a round has
    run since it was queued without getting to it, that it was not reached. None for a job
    that is not queued or that no round has seen yet."""
    if job.state != "queued":
        return None
    record = SchedulingReason.objects.filter(job=job).first()
    if record is not None:
        return {"reason": record.reason, "roundId": record.round_id, "at": record.updated_at}
    latest = SchedulingRound.objects.order_by("-id").first()
    if latest is None or latest.started_at < job.last_transition_at:
        return None
    return {"reason": NOT_REACHED, "roundId": latest.id, "at": latest.started_at}


def retry_waiting(job, latest_run) -> dict | None:
    """What a retried job waits for, for its retry's decision trail: when the job is queued
    again after its latest run's retry decision, why the scheduler has not leased it yet (a
    limit, room, its retry delay; :func:`pending_reason`). A retry only ever waits for
    these: it is never failed for waiting. None otherwise."""
    if latest_run is None or (latest_run.decision or {}).get("decision") != "retry":
        return None
    return pending_reason(job)


def round_summary(round_: SchedulingRound) -> dict[str, Any]:
    """A scheduling round as the API shows it (a job's scheduling record, the reports)."""
    return {
        "id": round_.id,
        "startedAt": round_.started_at,
        "durationMs": round_.duration_ms,
        "considered": round_.considered,
        "leased": round_.leased,
        "expired": round_.expired,
        "decided": round_.decided,
        "unschedulable": round_.unschedulable,
    }
