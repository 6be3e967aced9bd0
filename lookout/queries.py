"""Lookout reads: keyset pagination over jobs, newest first (never OFFSET)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from armada.models import Job
from armada.services.authz import watchable_queues

PAGE_SIZE = 50


def jobs_page(
    *, actor, queue: str = "", job_set: str = "", state: str = "", before: str = ""
) -> tuple[list[Job], str]:
    """One page of the jobs ``actor`` may see, ids below ``before``; returns it and the next cursor."""
    qs = Job.objects.order_by("-id")
    allowed = watchable_queues(actor)
    if allowed is not None:
        qs = qs.filter(queue_id__in=allowed)
    if queue:
        qs = qs.filter(queue_id=queue)
    if job_set:
        qs = qs.filter(job_set=job_set)
    if state:
        qs = qs.filter(state=state)
    if before:
        qs = qs.filter(id__lt=before)
    rows = list(
        qs.only(
            "id",
            "queue",
            "job_set",
            "state",
            "owner",
            "priority",
            "submitted_at",
            "failure_category",
            "terminal_reason",
        )[: PAGE_SIZE + 1]
    )
    next_cursor = rows[PAGE_SIZE - 1].id if len(rows) > PAGE_SIZE else ""
    return rows[:PAGE_SIZE], next_cursor


# Payload keys worth showing in the job page's event timeline, in this order (Armada's
# spelling; events stored with the old keys are read with these, ``services.events``).
EVENT_HIGHLIGHTS = (
    "reason",
    "clusterId",
    "nodeName",
    "pool",
    "retryable",
    "failureCategory",
    "failureSubcategory",
    "decision",
    "decisionReason",
    "exitCode",
    "priority",
    "newPriority",
    "requestor",
    "message",
    "hint",
)


# The job page shows a job's latest events, this many, and links to all of them: a job
# retried many times can have thousands, which take a second to render.
EVENTS_SHOWN = 200


class TimelineEvent(NamedTuple):
    """What the timeline shows of an event (read as plain rows: a few hundred model
    instances cost more than the rest of the page)."""

    type: str
    run_id: str
    created: datetime
    payload: dict


def shown_value(value: Any) -> Any:
    """A value of an event as a person reads it: ``yes``/``no`` for a flag (as the Runs tab
    says them), a number without exponent form; anything else as it is."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.6f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"
    return value


def job_events(*, job: Job, last: int | None = None) -> list[dict]:
    """The job's events in order (only its ``last`` ones when given), each as
    ``{"event": TimelineEvent, "highlights": [(key, value)]}``."""
    from armada.models import Event
    from armada.services.events import current_payload

    events = Event.objects.filter(job_id=job.id).values_list(*TimelineEvent._fields)
    if last is None:
        rows = list(events.order_by("id"))
    else:
        rows = list(events.order_by("-id")[:last])[::-1]
    selected = [TimelineEvent(*row) for row in rows]
    timeline = []
    for event in selected:
        payload = current_payload(event.type, event.payload)
        highlights = [
            (key, shown_value(payload[key]))
            for key in EVENT_HIGHLIGHTS
            if key in payload and payload[key] not in ("", None, {}, [])
        ]
        timeline.append({"event": event, "highlights": highlights})
    return timeline


def job_event_count(*, job: Job) -> int:
    from armada.models import Event

    return Event.objects.filter(job_id=job.id).count()


def decision_trail(run) -> list[tuple[str, str]] | None:
    """A run's decision trail as (label, value) pairs for display; None when undecided.

    Rules are numbered from 1 (the stored ``ruleIndex`` is 0-based, ``rules[4]`` is rule 5)
    and memory reads as people write it, with how much it grew: ``256Mi → 864Mi (×3.375)``
    for a factor, ``256Mi → 768Mi (+512Mi)`` for a static bump."""
    from armada.core.quantity import MEMORY
    from armada.core.quantity_text import growth, readable_quantity

    # Only decisions reached through the policy's rules (``core.retry.decide`` steps 6 to 9)
    # can say that no rule matched; the global cap or a gang decide before any rule is read.
    rules_consulted = (
        "retry",
        "fail_rule",
        "fail_default",
        "fail_policy_limit",
        "retry_unschedulable",
    )
    trail = run.decision or {}
    if not trail:
        return None
    label = str(trail.get("decision", ""))
    rows: list[tuple[str, str]] = [("Decision", label)]
    if trail.get("policy"):
        version = trail.get("policyVersion")
        rows.append(("Policy", f"{trail['policy']}" + (f" (version {version})" if version else "")))
    index = trail.get("ruleIndex")
    if isinstance(index, int) and not isinstance(index, bool):
        rows.append(("Matched rule", f"rule {index + 1}"))
    elif trail.get("policy") and label in rules_consulted:
        rows.append(("Matched rule", "none (default action)"))
    if trail.get("retryLimit") is not None:
        rows.append(("Budget", f"{trail.get('retriesUsed', 0)} of {trail['retryLimit']} used"))
    if trail.get("globalCap"):
        rows.append(("Global cap", f"{trail.get('globalUsed', 0)} of {trail['globalCap']} used"))
    mutation = trail.get("mutation") or {}
    memory = mutation.get("memory")
    if memory:
        before, after = memory.get("before"), memory.get("after")
        if isinstance(before, int) and isinstance(after, int):
            text = f"{readable_quantity(before, MEMORY)} → {readable_quantity(after, MEMORY)}"
            change = growth(before, after, str(memory.get("kind", "")))
            rows.append(("Memory", text + (f" ({change})" if change else "")))
        else:
            rows.append(("Memory", f"{before} → {after}"))
    if mutation.get("memorySkipped"):
        rows.append(("Memory bump skipped", str(mutation["memorySkipped"])))
    if "avoidNodes" in mutation:
        rows.append(("Nodes avoided", ", ".join(mutation["avoidNodes"]) or "none"))
    if trail.get("reason"):
        rows.append(("Reason", str(trail["reason"])))
    return rows
