"""A Kubernetes pod, as the JSON the API server sends, read as our :class:`PodStatus`.

Only dicts are read here (``v1.Pod`` and ``v1.Event`` with their camelCase keys), so this
needs no Kubernetes client and is tested with pods written out as JSON.

How the fields are found:

- ``pending_at`` is the pod's creation; ``running_at`` the earliest start of a main
  container (running or already terminated), else ``status.startTime`` for a pod in phase
  Running; ``finished_at`` is set for phases Succeeded and Failed only: the latest
  ``finishedAt`` of a container, else the latest condition transition, else ``now``. A pod
  whose containers have all ended while its phase is still Running is not finished: the
  kubelet has yet to say how it ended.
- ``containers`` holds every main container that terminated (for a finished pod, the last
  termination of one that was restarted) and every regular init container that failed.
  Sidecars (init containers with ``restartPolicy: Always``) are left out: they are stopped
  when the pod ends, and their exit codes say nothing of the job.
- ``conditions``: ``Evicted`` when ``status.reason`` is Evicted, or a ``DisruptionTarget``
  condition says the pod was pushed off its node for the node's or the cluster's sake (the
  eviction API, e.g. a drain; the kubelet under node pressure or shutting the node down; the
  scheduler preempting it; a ``NoExecute`` taint). A DisruptionTarget of the pod garbage
  collector (``DeletionByPodGC``: its node is gone) is not an eviction but a lost node.
  ``DeadlineExceeded`` when ``status.reason`` says so (``activeDeadlineSeconds``);
  ``OOMKilled`` when a container was OOM-killed.
- ``reason`` and ``message`` are the pod's own (``status.reason``, ``status.message``); for
  a failed pod without them, the first container that exited non-zero's reason and
  termination message (or a sentence with its exit code), else the DisruptionTarget's
  reason and the pod error.
- ``pod_error`` says why a failed pod failed when its containers do not. When none of them
  terminated: the pod's own message (``UnexpectedAdmissionError``, ``OutOfcpu``,
  ``NodeAffinity``, ``NodeLost``) and the message of a DisruptionTarget that is not an
  eviction (``PodGC: node no longer exists``). When none of them ever ran, also the latest
  Warning event's message. A text that an earlier one contains is left out; the rest are
  joined one a line.
- A pod the kubelet's admission refused for room (``OutOfcpu``, ``OutOfmemory``, ...) before
  any container ran sets ``return_lease``: the room may be free on the next attempt.
- Pod checks (:mod:`armada.core.podchecks`) run on Pending pods not being deleted. ``Fail``
  makes the pod a finished failure at ``now``, the check's message its pod error and the
  check's cause its reason; ``Retry`` sets ``return_lease`` and leaves the pod unfinished.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from armada.core.podchecks import FAIL, RETRY, PodCheckRunner, parse_time
from armada.executor.backends.base import ContainerResult, PodStatus
from armada.executor.backends.kubernetes.manifests import RUN_ID

EVICTED = "Evicted"
DEADLINE_EXCEEDED = "DeadlineExceeded"
OOM_KILLED = "OOMKilled"
STUCK_REASON = "PodStuck"

# DisruptionTarget reasons that mean the pod was evicted. Kubernetes 1.26/1.27 spelt the
# scheduler's PreemptionByKubeScheduler; DeletionByPodGC (node gone) is not here.
EVICTION_REASONS = frozenset(
    {
        "EvictionByEvictionAPI",
        "TerminationByKubelet",
        "PreemptionByScheduler",
        "PreemptionByKubeScheduler",
        "DeletionByTaintManager",
    }
)

Json = Mapping[str, Any]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def pod_status(
    pod: Json, events: Sequence[Json], now: datetime, checks: PodCheckRunner
) -> PodStatus:
    """What ``pod`` (with the ``events`` about it) says at ``now`` (module docstring)."""
    meta: Json = pod.get("metadata") or {}
    spec: Json = pod.get("spec") or {}
    status: Json = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    deleting = bool(meta.get("deletionTimestamp"))
    finished = phase in ("Succeeded", "Failed")

    mains: list[Json] = list(status.get("containerStatuses") or ())
    inits = _regular_inits(spec, status)
    containers = _results(mains, inits, finished)
    conditions = _conditions(status, containers)

    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    failing = next((c for c in containers if c.exit_code not in (0, None)), None)
    if phase == "Failed" and not reason:
        if failing is not None:
            reason = failing.reason or "Error"
            message = failing.message or (
                f"container {failing.name} exited with code {failing.exit_code}"
            )
        else:
            reason = str(_disruption(status).get("reason") or "")

    fields: dict[str, Any] = {
        "name": str(meta.get("name") or ""),
        "run_id": str((meta.get("labels") or {}).get(RUN_ID) or ""),
        "node": str(spec.get("nodeName") or ""),
        "pending_at": parse_time(meta.get("creationTimestamp")),
        "running_at": _running_at(mains, status, phase),
        "containers": containers,
        "conditions": conditions,
        "deleting": deleting,
        "uid": str(meta.get("uid") or ""),
    }
    if phase == "Failed" and _refused_by_kubelet(reason, mains, inits):
        # The kubelet's admission refused the pod (the node's room was still held, say by
        # a pod being stopped for it): it never ran, so its lease is returned, not failed.
        return PodStatus(**fields, reason=reason, message=message, return_lease=message or reason)
    if phase == "Failed":
        pod_error = _pod_error(status, mains, inits, containers, events)
        if pod_error and not message:
            message = pod_error
        return PodStatus(
            **fields,
            finished_at=_finished_at(mains, inits, status, now),
            reason=reason,
            message=message,
            pod_error=pod_error,
        )
    if phase == "Succeeded":
        return PodStatus(
            **fields,
            finished_at=_finished_at(mains, inits, status, now),
            succeeded=True,
            reason=reason,
            message=message,
        )
    if phase == "Pending" and not deleting:
        result = checks.check(pod, events, now)
        if result.action == FAIL:
            return PodStatus(
                **fields,
                finished_at=now,
                reason=result.cause or STUCK_REASON,
                message=result.message,
                pod_error=result.message,
            )
        if result.action == RETRY:
            return PodStatus(**fields, reason=reason, message=message, return_lease=result.message)
    return PodStatus(**fields, reason=reason, message=message)


def _refused_by_kubelet(reason: str, mains: list[Json], inits: list[Json]) -> bool:
    """Admission refusals for room (``OutOfcpu``, ``OutOfmemory``, ``OutOfpods``, ...), before
    any container ran. ``UnexpectedAdmissionError`` and the node-affinity refusals are not
    among them: they say something of the node or the job, and are failures."""
    return reason.startswith("OutOf") and not any(_ran(cs) for cs in (*mains, *inits))


def _regular_inits(spec: Json, status: Json) -> list[Json]:
    """Init container statuses without the sidecars'."""
    sidecars = {
        c.get("name")
        for c in spec.get("initContainers") or ()
        if c.get("restartPolicy") == "Always"
    }
    return [s for s in status.get("initContainerStatuses") or () if s.get("name") not in sidecars]


def _terminated(cs: Json, finished: bool) -> Json | None:
    """How the container ended: its current state, or for a finished pod its last one."""
    terminated = (cs.get("state") or {}).get("terminated")
    if terminated is None and finished:
        terminated = (cs.get("lastState") or {}).get("terminated")
    return terminated


def _result(cs: Json, terminated: Json) -> ContainerResult:
    code = terminated.get("exitCode")
    return ContainerResult(
        name=str(cs.get("name") or ""),
        exit_code=code if isinstance(code, int) else None,
        reason=str(terminated.get("reason") or ""),
        message=str(terminated.get("message") or ""),
    )


def _results(mains: list[Json], inits: list[Json], finished: bool) -> tuple[ContainerResult, ...]:
    out: list[ContainerResult] = []
    for cs in inits:
        terminated = _terminated(cs, finished)
        if terminated is not None and terminated.get("exitCode") != 0:
            out.append(_result(cs, terminated))
    for cs in mains:
        terminated = _terminated(cs, finished)
        if terminated is not None:
            out.append(_result(cs, terminated))
    return tuple(out)


def _disruption(status: Json) -> Json:
    """The pod's DisruptionTarget condition when it holds, else empty."""
    for c in status.get("conditions") or ():
        if c.get("type") == "DisruptionTarget" and c.get("status") == "True":
            return c
    return {}


def _evicted(status: Json) -> bool:
    return status.get("reason") == EVICTED or _disruption(status).get("reason") in EVICTION_REASONS


def _conditions(status: Json, containers: Iterable[ContainerResult]) -> tuple[str, ...]:
    found = []
    if _evicted(status):
        found.append(EVICTED)
    if status.get("reason") == DEADLINE_EXCEEDED:
        found.append(DEADLINE_EXCEEDED)
    if any(c.reason == OOM_KILLED for c in containers):
        found.append(OOM_KILLED)
    return tuple(found)


def _ran(cs: Json) -> bool:
    state, last = cs.get("state") or {}, cs.get("lastState") or {}
    return any(s.get(k) for s in (state, last) for k in ("running", "terminated"))


def _running_at(mains: list[Json], status: Json, phase: str) -> datetime | None:
    starts = []
    for cs in mains:
        state, last = cs.get("state") or {}, cs.get("lastState") or {}
        for found in (state.get("running"), state.get("terminated"), last.get("terminated")):
            started = parse_time((found or {}).get("startedAt"))
            if started is not None:
                starts.append(started)
    if starts:
        return min(starts)
    return parse_time(status.get("startTime")) if phase == "Running" else None


def _finished_at(mains: list[Json], inits: list[Json], status: Json, now: datetime) -> datetime:
    ends = [parse_time((_terminated(cs, True) or {}).get("finishedAt")) for cs in (*mains, *inits)]
    known = [t for t in ends if t is not None]
    if not known:
        known = [
            t
            for t in (
                parse_time(c.get("lastTransitionTime")) for c in status.get("conditions") or ()
            )
            if t is not None
        ]
    return max(known) if known else now


def _latest_warning(events: Iterable[Json]) -> str:
    def when(event: Json) -> datetime | None:
        for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
            t = parse_time(event.get(key) or (event.get("series") or {}).get("lastObservedTime"))
            if t is not None:
                return t
        return None

    warnings = [(when(e), i, e) for i, e in enumerate(events) if e.get("type") == "Warning"]
    if not warnings:
        return ""
    # Latest by time; events without a time count as oldest; ties go to the later one listed.
    latest = max(warnings, key=lambda w: (w[0] is not None, w[0] or _EPOCH, w[1]))
    return str(latest[2].get("message") or "")


def _pod_error(
    status: Json,
    mains: list[Json],
    inits: list[Json],
    containers: tuple[ContainerResult, ...],
    events: Sequence[Json],
) -> str:
    """Why a failed pod failed as a whole (module docstring); empty when its containers
    tell."""
    parts: list[str] = []
    if not containers:
        parts.append(str(status.get("message") or ""))
        disruption = _disruption(status)
        if disruption.get("reason") not in EVICTION_REASONS:
            parts.append(str(disruption.get("message") or ""))
    if not any(_ran(cs) for cs in (*mains, *inits)):
        parts.append(_latest_warning(events))
    kept: list[str] = []
    for part in parts:  # a text another part already says adds nothing
        if part and not any(part in k for k in kept):
            kept.append(part)
    return "\n".join(kept)
