"""``armadactl watch``: one line per event, a running summary, and when to stop.

The state of each job is the state its latest event implies. A job is finished once its
latest event is ``succeeded``, ``cancelled``, ``preempted``, ``rejected`` or ``failed``
with ``retryable`` false (a ``failed`` event without ``retryable`` is final too: Armada's
failed event ends a job). A retryable failure puts the job in ``retrying`` until the
server re-queues it.

With ``--exit-if-inactive`` the watch stops once every job seen so far is finished. The
check is made only when the client has caught up with the stream: the server has said (with
a blank line) that it sent every event committed so far, and every one of them has been
handled. Never in the middle of a burst, nor because a read buffer ran dry, so a job whose
events are still on their way is not missed; and since every job's first event is
``submitted``, a job set whose every seen job is finished at that point has no other.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, tzinfo
from typing import Any, TextIO

from armada.cli.client import CAUGHT_UP
from armada.core.duration import format_duration

# Event type -> the job state it implies. Types not listed (reprioritized, cancelling, ...)
# leave the state as it was.
EVENT_STATES: dict[str, str] = {
    "submitted": "submitted",
    "queued": "queued",
    "leased": "leased",
    "lease_returned": "queued",
    "lease_expired": "queued",
    "pending": "pending",
    "running": "running",
    "succeeded": "succeeded",
    "failed": "failed",
    "cancelled": "cancelled",
    "preempted": "preempted",
    "rejected": "rejected",
}
TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled", "preempted", "rejected"})
# Summary order: the life of a job, then the endings; "seen" is a job known only from
# events that imply no state (say, a watch started with --from past its submission).
STATE_ORDER = (
    "seen",
    "submitted",
    "queued",
    "leased",
    "pending",
    "running",
    "retrying",
    "succeeded",
    "failed",
    "cancelled",
    "preempted",
    "rejected",
)
TYPE_WIDTH = 14  # len("lease_returned")
SUMMARY_INTERVAL = 5.0


def is_retryable(event: Mapping[str, Any]) -> bool:
    """The ``retryable`` flag of a failed event; absent means not retryable."""
    value = event.get("retryable")
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True


def state_after(event: Mapping[str, Any], previous: str | None) -> str | None:
    """The job's state once ``event`` has happened, given its ``previous`` state."""
    kind = str(event.get("type", ""))
    if kind == "failed" and is_retryable(event):
        return "retrying"
    return EVENT_STATES.get(kind, previous)


class JobSetTracker:
    """The latest state of every job seen in a job set."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}
        self.version = 0  # bumped whenever a state changes

    def observe(self, event: Mapping[str, Any]) -> None:
        job_id = event.get("jobId")
        if not job_id:
            return
        job_id = str(job_id)
        previous = self.states.get(job_id)
        state = state_after(event, previous) or "seen"
        if state != previous:
            self.states[job_id] = state
            self.version += 1

    def counts(self) -> Counter[str]:
        return Counter(self.states.values())

    @property
    def inactive(self) -> bool:
        """True when at least one job was seen and every job seen is finished."""
        return bool(self.states) and all(s in TERMINAL_STATES for s in self.states.values())

    def summary(self) -> str:
        """``[3 jobs] running: 1, succeeded: 2``, states in life-cycle order, zeros left out."""
        counts = self.counts()
        total = len(self.states)
        parts = [f"{s}: {counts[s]}" for s in STATE_ORDER if counts[s]]
        parts += [f"{s}: {n}" for s, n in sorted(counts.items()) if s not in STATE_ORDER]
        noun = "job" if total == 1 else "jobs"
        return f"[{total} {noun}] " + (", ".join(parts) if parts else "no jobs yet")


def format_time(created: Any, tz: tzinfo | None = None) -> str:
    """``HH:MM:SS`` of an ISO-8601 timestamp, in ``tz`` (default: local time).

    A timestamp without an offset is shown as written; an unreadable one as ``--:--:--``.
    """
    if not isinstance(created, str) or not created:
        return "--:--:--"
    try:
        moment = datetime.fromisoformat(created.strip())
    except ValueError:
        return "--:--:--"
    if moment.tzinfo is not None:
        moment = moment.astimezone(tz)
    return moment.strftime("%H:%M:%S")


def _word(value: Any) -> str:
    """A value for ``key=value``: JSON-quoted when it is empty or has blanks in it."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if not text or any(c.isspace() for c in text) or '"' in text:
        return json.dumps(text, ensure_ascii=False)
    return text


def event_field(event: Mapping[str, Any], name: str, old_name: str) -> Any:
    """``event[name]``, or ``event[old_name]`` from a server that still spells its event
    fields the old way (``failure_category`` before ``failureCategory``, ``node`` before
    ``nodeName``; see docs/armada-api-events.md)."""
    value = event.get(name)
    return event.get(old_name) if value is None else value


MESSAGE_WIDTH = 100  # a termination message or hint longer than this is cut, with "…"


def shorten(text: Any, width: int = MESSAGE_WIDTH) -> str:
    """``text`` on one line of at most ``width`` characters. Of a message on several lines
    only the last non-blank one is kept (where a traceback or a tool says what went wrong),
    marked with a leading "…"; a line that is still too long is cut, with a trailing "…"."""
    lines = [" ".join(line.split()) for line in str(text or "").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    short = lines[-1] if len(lines) == 1 else "…" + lines[-1]
    return short if len(short) <= width else short[: width - 1].rstrip() + "…"


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def decision_text(event: Mapping[str, Any]) -> str:
    """What the scheduler decided about a failure, for people: ``retry 2 of 3 (rule 4)``,
    ``not retried: rule 1 (Fail on user-error)``, ``not retried: retry limit 3 reached``,
    ``not retried: failFast``, ... Rules are numbered from 1, as in ``armadactl get job`` and
    Lookout. Empty for a ``failed`` event that no decision wrote (a preemption, a returned
    lease past the limit, an old server). An event without the budget keys (written before
    they were added) is described by its ``decisionReason``."""
    label = event.get("decision")
    if not label:
        return ""
    label = str(label)
    reason = shorten(event.get("decisionReason"), 80)
    used, limit = _number(event.get("retriesUsed")), _number(event.get("retryLimit"))
    rule = _number(event.get("rule"))
    category = event_field(event, "failureCategory", "failure_category") or "?"
    if label == "retry":
        if used is None or limit is None:
            return reason or "retry"
        text = f"retry {used + 1} of {limit} ({f'rule {rule}' if rule else 'defaultAction'})"
        delay = event.get("retryDelaySeconds")
        if isinstance(delay, int | float) and not isinstance(delay, bool) and delay > 0:
            text += f", after a retry delay of {format_duration(delay)}"
        return text
    if event.get("failFast") is True and label == "not_retried":
        why = "failFast"
    elif label == "fail_rule" and rule:
        why = f"rule {rule} (Fail on {category})"
    elif label == "fail_default":
        why = "no rule matched (defaultAction Fail)"
    elif label == "fail_policy_limit" and limit is not None:
        why = f"retry limit {limit} reached"
    elif label == "fail_global_limit" and _number(event.get("globalCap")) is not None:
        why = f"global retry limit {event['globalCap']} reached"
    elif label == "gang_skipped":
        why = "gang job (retry policies do not apply to gangs)"
    else:
        why = reason.removeprefix("Retry policy: ") or label
    return f"not retried: {why}"


def format_event(event: Mapping[str, Any], tz: tzinfo | None = None) -> str:
    """One line for an event: time, type, job id, and the details that matter for its type.

    ``failed``: exit code, reason, failure category (with the subcategory after a slash
    when there is one), retryable, then in brackets what was decided (:func:`decision_text`),
    then the category's hint and the termination message, each shortened
    (:func:`shorten`) and left out when empty; ``leased``: the node; ``ingress_info``: the
    ingress addresses by container port (:func:`ingress_text`); ``utilisation``: the largest
    reading of the period per resource (:func:`usage_text`).
    """
    kind = str(event.get("type") or "?")
    parts = [
        format_time(event.get("created"), tz),
        kind.ljust(TYPE_WIDTH),
        str(event.get("jobId") or "-"),
    ]
    if kind == "failed":
        category = event_field(event, "failureCategory", "failure_category")
        sub = event_field(event, "failureSubcategory", "failure_subcategory")
        if category and sub:
            category = f"{category}/{sub}"
        parts += [
            f"exitCode={_word(event.get('exitCode'))}",
            f"reason={_word(event.get('reason'))}",
            f"category={_word(category or None)}",
            f"retryable={'true' if is_retryable(event) else 'false'}",
        ]
        if decided := decision_text(event):
            parts.append(f"[{decided}]")
        for key in ("hint", "message"):
            if text := shorten(event.get(key)):
                parts.append(f"{key}={_word(text)}")
    elif kind == "leased":
        parts.append(f"node={_word(event_field(event, 'nodeName', 'node'))}")
    elif kind == "ingress_info":
        parts.append(f"addresses={_word(ingress_text(event.get('ingressAddresses')))}")
    elif kind == "utilisation" and (usage := usage_text(event.get("maxResourcesForPeriod"))):
        parts.append(f"max {usage}")
    return "  ".join(parts).rstrip()


USAGE_ORDER = ("cpu", "memory")  # first, as kubectl top shows them; other resources by name


def usage_text(usage: Any) -> str | None:
    """``cpu 250m, memory 100Mi, nvidia.com/gpu 1``: each resource and its quantity as the
    server wrote it (cpu and memory first, then by name), or None when there is none.

    Armada's armadactl prints nothing for a utilisation event (it keeps the largest usage
    for itself); this line shows the period's largest reading, ``maxResourcesForPeriod``.
    """
    if not isinstance(usage, Mapping):
        return None
    named = [(str(k), v) for k, v in usage.items() if v not in (None, "")]
    named.sort(key=lambda kv: (USAGE_ORDER.index(kv[0]) if kv[0] in USAGE_ORDER else 2, kv[0]))
    return ", ".join(f"{name} {_word(value)}" for name, value in named) or None


def ingress_text(addresses: Any) -> str | None:
    """``8080=host:8080,8443=host:8443`` (in port order), or None when there are none."""
    if not isinstance(addresses, Mapping) or not addresses:
        return None
    ports = sorted(addresses, key=lambda p: (len(str(p)), str(p)))  # numeric text in order
    return ",".join(f"{port}={addresses[port]}" for port in ports)


def run_watch(
    events: Iterable[Mapping[str, Any]],
    out: TextIO,
    *,
    exit_if_inactive: bool = False,
    tz: tzinfo | None = None,
    clock: Callable[[], float] = time.monotonic,
    summary_interval: float = SUMMARY_INTERVAL,
    tracker: JobSetTracker | None = None,
    raw: bool = False,
) -> int:
    """Print ``events`` as they come; returns 0 when the job set is finished (or the stream ends).

    ``events`` holds event dicts and ``CAUGHT_UP`` markers. At a marker, the summary line is
    printed if any job changed state since the last one and ``summary_interval`` seconds
    have passed (the first is printed at once); then, with ``exit_if_inactive``, the watch
    ends if every job seen is finished, with a last summary. With ``raw`` (Armada's
    ``--raw``) each event is printed as the server sent it, one JSON object a line, and no
    summary is printed.
    """
    if raw:
        return _run_raw(events, out, exit_if_inactive=exit_if_inactive, tracker=tracker)
    if tracker is None:
        tracker = JobSetTracker()
    printed_version = 0
    printed_at: float | None = None
    for event in events:
        if event is CAUGHT_UP:
            if exit_if_inactive and tracker.inactive:
                print(tracker.summary(), file=out, flush=True)
                return 0
            now = clock()
            due = printed_at is None or now - printed_at >= summary_interval
            if tracker.version != printed_version and due:
                print(tracker.summary(), file=out, flush=True)
                printed_version, printed_at = tracker.version, now
            continue
        tracker.observe(event)
        print(format_event(event, tz), file=out, flush=True)
    if tracker.version != printed_version:
        print(tracker.summary(), file=out, flush=True)
    return 0


def _run_raw(
    events: Iterable[Mapping[str, Any]],
    out: TextIO,
    *,
    exit_if_inactive: bool,
    tracker: JobSetTracker | None,
) -> int:
    tracker = tracker if tracker is not None else JobSetTracker()
    for event in events:
        if event is CAUGHT_UP:
            if exit_if_inactive and tracker.inactive:
                return 0
            continue
        tracker.observe(event)
        print(json.dumps(event, ensure_ascii=False), file=out, flush=True)
    return 0
