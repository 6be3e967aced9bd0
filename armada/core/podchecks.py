"""Is a pod that has not started stuck, and if so, should its run fail or go elsewhere?

The executor asks this of every pod in phase ``Pending`` (and only of those: the caller
applies the checks to Pending pods, and any other phase gets ``Wait`` here). Pods and events
are Kubernetes JSON as the API server sends them (``v1.Pod``, ``v1.Event``: camelCase keys,
RFC 3339 timestamps). The answer is an action:

- ``Wait``: nothing is wrong yet, or nothing we are told to act on;
- ``Retry``: the pod is stuck for a reason of the node or the cluster; the lease is
  returned and the job scheduled again, without counting the attempt as a failure;
- ``Fail``: the pod is stuck for a reason of the job (an image that does not exist, a
  missing secret); the run fails.

How it is decided, in this order (the first two end the decision):

1. With ``deadlineForInitContainers`` set, a pod whose first (non-sidecar) init container
   started more than that long ago and whose init containers have not all completed
   successfully fails (cause ``PodStartupIssue``).
2. A pod not bound to a node (no ``spec.nodeName``) for more than
   ``deadlineForNodeAssignment`` is retried (cause ``NoNodeAssigned``).
3. A bound pod of which the kubelet has written nothing, neither a container status nor an
   event (the scheduler's ``Scheduled`` and ``FailedScheduling`` do not count), is on a
   node that does not work: retried after ``deadlineForUpdates`` (cause
   ``NoStatusUpdates``), waited for until then.
4. Otherwise every event is put to the event checks and every container status (init
   containers included) to the container checks (:mod:`armada.core.config_podchecks` says
   how one check matches); the strongest action asked for wins (``Fail`` over ``Retry``
   over ``Wait``) and the messages of the checks that acted are joined, one a line
   (cause ``PodStartupIssue`` unless the result is ``Wait``).

Time in state, which the deadlines of steps 2 and 3 and the checks' grace periods are
compared with, runs from the pod's last status change: the latest of its creation, its
conditions' ``lastTransitionTime``, its containers' ``running.startedAt`` and
``terminated.finishedAt``. A pod from which none of these can be read gets ``Wait``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from armada.core.config_podchecks import ContainerStatusCheck, EventCheck, PodChecks
from armada.core.duration import format_duration

Action = Literal["Wait", "Retry", "Fail"]
WAIT: Action = "Wait"
RETRY: Action = "Retry"
FAIL: Action = "Fail"
_STRENGTH: dict[str, int] = {WAIT: 0, RETRY: 1, FAIL: 2}

NO_CAUSE = ""
POD_STARTUP_ISSUE = "PodStartupIssue"
NO_STATUS_UPDATES = "NoStatusUpdates"
NO_NODE_ASSIGNED = "NoNodeAssigned"

# Events the scheduler writes about a pod; they say nothing of its node's kubelet.
SCHEDULER_EVENT_REASONS = frozenset({"Scheduled", "FailedScheduling"})


@dataclass(frozen=True)
class PodCheckResult:
    """What the checks ask for (``Wait``, ``Retry`` or ``Fail``), why (one of the causes
    above, ``""`` when nothing is wrong) and a message for people."""

    action: Action = WAIT
    cause: str = NO_CAUSE
    message: str = ""


def strongest(a: Action, b: Action) -> Action:
    """``Fail`` over ``Retry`` over ``Wait``."""
    return a if _STRENGTH[a] >= _STRENGTH[b] else b


def parse_time(value: Any) -> datetime | None:
    """A Kubernetes timestamp (``"2026-12-05T10:00:00Z"``, with or without fractions of a
    second) as an aware datetime; None for a missing or unreadable one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def container_statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The pod's container statuses: main containers first, then init containers."""
    status = pod.get("status") or {}
    return [*(status.get("containerStatuses") or ()), *(status.get("initContainerStatuses") or ())]


def last_status_change(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod last changed state (see the module docstring); None if unknown."""
    status = pod.get("status") or {}
    times = [parse_time((pod.get("metadata") or {}).get("creationTimestamp"))]
    for cs in container_statuses(pod):
        state = cs.get("state") or {}
        times.append(parse_time((state.get("running") or {}).get("startedAt")))
        times.append(parse_time((state.get("terminated") or {}).get("finishedAt")))
    for condition in status.get("conditions") or ():
        times.append(parse_time(condition.get("lastTransitionTime")))
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo else now.replace(tzinfo=UTC)


@dataclass(frozen=True)
class _InitProgress:
    """How far the regular init containers (sidecars excluded) have got."""

    first_started: datetime | None
    all_succeeded: bool
    errors: tuple[str, ...]
    current: str | None
    current_started: datetime | None


def _init_progress(pod: Mapping[str, Any]) -> _InitProgress:
    by_name = {
        s.get("name"): s for s in (pod.get("status") or {}).get("initContainerStatuses") or ()
    }
    regular = succeeded = 0
    first: datetime | None = None
    current: tuple[datetime, str] | None = None
    errors: list[str] = []
    for container in (pod.get("spec") or {}).get("initContainers") or ():
        if container.get("restartPolicy") == "Always":
            continue  # a sidecar: it runs alongside the main containers, it never completes
        regular += 1
        state = (by_name.get(container.get("name")) or {}).get("state") or {}
        running, terminated = state.get("running"), state.get("terminated")
        started = parse_time((running or terminated or {}).get("startedAt"))
        if started is not None and (first is None or started < first):
            first = started
        if terminated is not None:
            code = terminated.get("exitCode")
            if code == 0:
                succeeded += 1
            else:
                errors.append(f"init container {container.get('name')} exited with code {code}")
        elif (
            running is not None
            and started is not None
            and (current is None or started > current[0])
        ):
            current = (started, str(container.get("name")))
    return _InitProgress(
        first_started=first,
        all_succeeded=regular > 0 and succeeded == regular,
        errors=tuple(errors),
        current=current[1] if current else None,
        current_started=current[0] if current else None,
    )


@dataclass(frozen=True)
class _Compiled:
    regexp: re.Pattern[str]
    inverse: bool
    grace: float
    action: Action
    name: str

    def matches(self, text: str) -> bool:
        return self.inverse != bool(self.regexp.search(text))


class PodCheckRunner:
    """The checks of a :class:`PodChecks` configuration, with their regular expressions
    compiled once; :meth:`check` applies them to one pod."""

    def __init__(self, checks: PodChecks) -> None:
        self.checks = checks
        self._events = [
            (c.type, _compile(c, c.regexp, i, "events")) for i, c in enumerate(checks.events)
        ]
        self._containers = [
            _compile(c, c.reason_regexp, i, "containerStatuses")
            for i, c in enumerate(checks.container_statuses)
        ]

    def check(
        self, pod: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: datetime
    ) -> PodCheckResult:
        """The action ``pod`` calls for at ``now``, given the events about it."""
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if phase != "Pending":
            return PodCheckResult()
        changed = last_status_change(pod)
        if changed is None:
            return PodCheckResult()
        now = _aware(now)
        cfg = self.checks

        if cfg.deadline_for_init_containers > 0:
            stuck = _init_deadline_passed(pod, now, cfg.deadline_for_init_containers)
            if stuck:
                return PodCheckResult(FAIL, POD_STARTUP_ISSUE, stuck)

        in_state = (now - changed).total_seconds()
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        if not bound and in_state > cfg.deadline_for_node_assignment:
            deadline = format_duration(cfg.deadline_for_node_assignment)
            return PodCheckResult(
                RETRY,
                NO_NODE_ASSIGNED,
                f"the pod was not bound to a node within {deadline}; returning the lease",
            )
        if bound and _kubelet_silent(pod, events):
            deadline = format_duration(cfg.deadline_for_updates)
            if in_state > cfg.deadline_for_updates:
                return PodCheckResult(
                    RETRY,
                    NO_STATUS_UPDATES,
                    f"the node's kubelet wrote no status or event for the pod within "
                    f"{deadline}; the node is likely broken, returning the lease",
                )
            return PodCheckResult(
                WAIT,
                NO_STATUS_UPDATES,
                f"no status or event from the node's kubelet yet; waiting up to {deadline}",
            )

        action: Action = WAIT
        messages: list[str] = []
        for found, message in (
            *(self._event_action(e, in_state) for e in events),
            *(self._container_action(cs, in_state) for cs in container_statuses(pod)),
        ):
            action = strongest(action, found)
            if found != WAIT:
                messages.append(message)
        if action == WAIT:
            return PodCheckResult()
        return PodCheckResult(action, POD_STARTUP_ISSUE, "\n".join(messages))

    def _event_action(self, event: Mapping[str, Any], in_state: float) -> tuple[Action, str]:
        """The first check matching ``event`` decides: its action once its grace period is
        over (strictly), else Wait."""
        text = str(event.get("message") or "")
        for event_type, check in self._events:
            if event.get("type") != event_type or not check.matches(text):
                continue
            if in_state > check.grace:
                reason = event.get("reason") or "event"
                return check.action, f'check "{check.name}" matched {reason}: {text}'
            return WAIT, ""
        return WAIT, ""

    def _container_action(self, cs: Mapping[str, Any], in_state: float) -> tuple[Action, str]:
        """The first check matching a waiting container's reason decides: its action once
        its grace period is reached (a grace period of 0 acts at once), else Wait."""
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting is None:
            return WAIT, ""
        reason = str(waiting.get("reason") or "")
        for check in self._containers:
            if not check.matches(reason):
                continue
            if in_state >= check.grace:
                detail = waiting.get("message") or "no message"
                return check.action, (
                    f"container {cs.get('name')} has been waiting with reason {reason} "
                    f"({detail}) for {format_duration(check.grace)} or more "
                    f'(check "{check.name}")'
                )
            return WAIT, ""
        return WAIT, ""


def _compile(
    check: EventCheck | ContainerStatusCheck, regexp: str, index: int, key: str
) -> _Compiled:
    return _Compiled(
        re.compile(regexp),
        check.inverse,
        check.grace_period,
        check.action,
        check.name or f"{key}[{index}]",
    )


def _init_deadline_passed(pod: Mapping[str, Any], now: datetime, deadline: float) -> str:
    """Why the init containers are past ``deadline``; empty when they are not."""
    progress = _init_progress(pod)
    if progress.first_started is None or progress.all_succeeded:
        return ""
    if (now - progress.first_started).total_seconds() <= deadline:
        return ""
    lines = [f"the init containers did not complete within {format_duration(deadline)}"]
    lines.extend(progress.errors)
    if progress.current is not None and progress.current_started is not None:
        running_for = format_duration((now - progress.current_started).total_seconds())
        lines.append(f"init container {progress.current} has been running for {running_for}")
    return "\n".join(lines)


def _kubelet_silent(pod: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> bool:
    """No container status and no event but the scheduler's: the kubelet never wrote."""
    if container_statuses(pod):
        return False
    return all(e.get("reason") in SCHEDULER_EVENT_REASONS for e in events)


def check_pod(
    pod: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    now: datetime,
    checks: PodChecks,
) -> PodCheckResult:
    """:meth:`PodCheckRunner.check` for a single use (it compiles the checks each time)."""
    return PodCheckRunner(checks).check(pod, events, now)
