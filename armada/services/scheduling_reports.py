"""Scheduling reports (selectors): what the scheduler did lately and why jobs wait, for one
queue or for every queue the caller may watch. ``armadactl get queue-report`` and
``get scheduling-report`` print them, as Armada's armadactl prints its scheduler's reports.

A report is read from what the scheduler stores: the latest rounds (``SchedulingRound``),
the reason each queued job was not leased (``SchedulingReason``), and the queue shares
(``services.queue_shares``: current share against fair share, in one pool or all of them).
Reading needs the ``watch`` verb on a queue (the one permission funnel); the overall report
shows only the queues the caller may watch, and counts its reasons over those queues only.

``verbosity`` (0 to 3, as Armada's ``-v`` repeated): 0 gives counts; 1 adds up to
``EXAMPLE_JOBS`` job ids per reason and the last ``ROUNDS_VERBOSE`` rounds; 2 and 3 give up
to ten times as many job ids.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Min, Q, QuerySet

from armada.core.backoff import RETRY_DELAY_REASON, reason_retry_delay, reason_time
from armada.core.quantity import format_quantity
from armada.models import Job, Queue, SchedulingReason, SchedulingRound
from armada.services.authz import require_queue_verb, watchable_queues
from armada.services.errors import NotFound, ValidationFailed
from armada.services.queue_shares import QueueShare, queue_shares
from armada.services.records import round_summary

MAX_VERBOSITY = 3
EXAMPLE_JOBS = 10
ROUNDS_VERBOSE = 10


def parse_report_options(*, pool: Any, verbosity: Any) -> tuple[str | None, int]:
    """``pool`` (a configured pool, or empty for all) and ``verbosity`` (0 to 3)."""
    pools = [p.name for p in settings.ARMADA.scheduling.pools]
    if pool in (None, ""):
        chosen = None
    elif isinstance(pool, str) and pool in pools:
        chosen = pool
    else:
        raise ValidationFailed.one("pool", f"unknown pool; choose from {', '.join(pools)}")
    if verbosity in (None, ""):
        return chosen, 0
    try:
        level = int(verbosity)
    except (TypeError, ValueError):
        level = -1
    if isinstance(verbosity, bool) or not 0 <= level <= MAX_VERBOSITY:
        raise ValidationFailed.one("verbosity", f"must be a whole number from 0 to {MAX_VERBOSITY}")
    return chosen, level


def _share(share: QueueShare) -> dict[str, Any]:
    return {
        "queue": share.queue.name,
        "priorityFactor": share.queue.priority_factor,
        "cordoned": share.queue.cordoned,
        "active": share.active,
        "fairShare": share.fair_share,
        "currentShare": share.current_share,
        "allocated": {r: format_quantity(v, r) for r, v in sorted(share.allocated.items())},
        "jobsByState": dict(sorted(share.jobs_by_state.items())),
    }


def pending_reasons(*, queues: list[str] | None, verbosity: int) -> list[dict[str, Any]]:
    """The reasons queued jobs of ``queues`` (every queue when None) wait, most jobs first,
    each with its job count and, from verbosity 1, the ids of its oldest jobs. The jobs
    waiting for a retry delay are one entry, with ``until`` (see
    :func:`_one_retry_delay_entry`)."""
    records = SchedulingReason.objects.filter(job__state="queued")
    if queues is not None:
        records = records.filter(job__queue_id__in=queues)
    rows = (
        records.values("reason")
        .annotate(jobs=Count("job_id"), since=Min("updated_at"))
        .order_by("-jobs", "reason")
    )
    reasons = [{"reason": r["reason"], "jobs": r["jobs"], "since": r["since"]} for r in rows]
    reasons = _one_retry_delay_entry(reasons, records)
    if verbosity:
        limit = EXAMPLE_JOBS * (10 if verbosity > 1 else 1)
        for entry in reasons:
            ids = records.filter(_same_reason(entry["reason"])).order_by("job_id")
            entry["jobIds"] = list(ids.values_list("job_id", flat=True)[:limit])
    return reasons


def _same_reason(reason: str) -> Q:
    """The records counted under ``reason`` (every retry-delay record under that entry)."""
    if reason.startswith(RETRY_DELAY_REASON):
        return Q(reason__startswith=RETRY_DELAY_REASON)
    return Q(reason=reason)


def _one_retry_delay_entry(
    reasons: list[dict[str, Any]], records: QuerySet
) -> list[dict[str, Any]]:
    """The jobs waiting for their retry delay (``backoff``, our extension) as one entry,
    however many different times they wait for: its ``until`` is the latest of them, and
    its reason names that time (one job, or jobs that all wait for the same time: the
    time they wait for)."""
    delayed = [r for r in reasons if r["reason"].startswith(RETRY_DELAY_REASON)]
    if not delayed:
        return reasons
    times = Job.objects.filter(
        id__in=records.filter(reason__startswith=RETRY_DELAY_REASON).values("job_id"),
        retry_not_before__isnull=False,
    ).aggregate(first=Min("retry_not_before"), last=Max("retry_not_before"))
    until = times["last"]
    if until is None:  # the delays were all cleared since: the rows are stale
        return [r for r in reasons if r not in delayed]
    reason = reason_retry_delay(until)
    if times["first"] != until:
        reason = f"{reason} at the latest (from {reason_time(times['first'])})"
    entry = {
        "reason": reason,
        "jobs": sum(r["jobs"] for r in delayed),
        "since": min(r["since"] for r in delayed),
        "until": until,
    }
    kept = [r for r in reasons if r not in delayed] + [entry]
    return sorted(kept, key=lambda r: (-r["jobs"], r["reason"]))


def _rounds(verbosity: int) -> list[dict[str, Any]]:
    shown = ROUNDS_VERBOSE if verbosity else 1
    return [round_summary(r) for r in SchedulingRound.objects.order_by("-id")[:shown]]


def queue_report(
    *, actor: Any, name: str, now: datetime, pool: Any = None, verbosity: Any = None
) -> dict[str, Any]:
    """One queue: its shares, jobs per state, why its queued jobs wait, the latest rounds.
    404 for an unknown queue, 403 without the ``watch`` verb on it, 400 for a bad option."""
    chosen, level = parse_report_options(pool=pool, verbosity=verbosity)
    queue = Queue.objects.filter(name=name).first()
    if queue is None:
        raise NotFound(f"queue {name!r} does not exist")
    require_queue_verb(actor, queue, "watch")
    [share] = queue_shares(now=now, queues=[queue], pool=chosen)
    reasons = pending_reasons(queues=[queue.name], verbosity=level)
    queued = share.jobs_by_state.get("queued", 0)
    return {
        **_share(share),
        "pool": chosen,
        "pendingReasons": reasons,
        "queuedWithoutReason": max(queued - sum(r["jobs"] for r in reasons), 0),
        "latestRounds": _rounds(level),
    }


def scheduling_report(
    *, actor: Any, now: datetime, pool: Any = None, verbosity: Any = None
) -> dict[str, Any]:
    """The latest rounds, then the shares of every queue the caller may watch that has jobs
    or a share, and why their queued jobs wait."""
    chosen, level = parse_report_options(pool=pool, verbosity=verbosity)
    allowed = watchable_queues(actor)
    queues = Queue.objects.order_by("name")
    if allowed is not None:
        queues = queues.filter(name__in=allowed)
    shares = queue_shares(now=now, queues=list(queues), pool=chosen)
    shown = [s for s in shares if s.active or s.allocated or level]
    return {
        "pool": chosen,
        "latestRounds": _rounds(level),
        "queues": [_share(s) for s in shown],
        "pendingReasons": pending_reasons(queues=allowed, verbosity=level),
    }
