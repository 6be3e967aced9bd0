"""Pods, events and check configurations for the tests of ``armada.core.podchecks``
(``test_podchecks_*``), written as the API server sends them (camelCase JSON)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from armada.core.config_podchecks import PodChecks
from armada.core.podchecks import PodCheckRunner

NOW = datetime(2026, 12, 5, 10, 0, 0, tzinfo=UTC)
MIN = 60.0


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def waiting(name: str, reason: str, message: str = "") -> dict[str, Any]:
    state: dict[str, Any] = {"reason": reason}
    if message:
        state["message"] = message
    return {"name": name, "ready": False, "restartCount": 0, "state": {"waiting": state}}


def running(name: str, started_ago: float) -> dict[str, Any]:
    return {"name": name, "state": {"running": {"startedAt": ts(started_ago)}}}


def terminated(name: str, started_ago: float, finished_ago: float, code: int) -> dict[str, Any]:
    return {
        "name": name,
        "state": {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": ts(started_ago),
                "finishedAt": ts(finished_ago),
            }
        },
    }


def pod(
    in_state: float = MIN,
    node: str | None = "node-1",
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    init_spec: list[dict[str, Any]] | None = None,
    phase: str | None = "Pending",
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pod created ``in_state`` seconds ago. By default it has one waiting container, so
    that the kubelet is not silent about it."""
    if containers is None:
        containers = [waiting("main", "ContainerCreating")]
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    if init_spec is not None:
        spec["initContainers"] = init_spec
    status: dict[str, Any] = {"containerStatuses": containers}
    if phase:
        status["phase"] = phase
    if init is not None:
        status["initContainerStatuses"] = init
    if conditions is not None:
        status["conditions"] = conditions
    return {
        "metadata": {"name": "armada-j1-0", "creationTimestamp": ts(in_state)},
        "spec": spec,
        "status": status,
    }


def event(message: str, type_: str = "Warning", reason: str = "Failed") -> dict[str, Any]:
    return {"type": type_, "reason": reason, "message": message, "lastTimestamp": ts(0)}


def checks(
    events: list[dict[str, Any]] | None = None,
    containers: list[dict[str, Any]] | None = None,
    **deadlines: Any,
) -> PodChecks:
    data: dict[str, Any] = {
        "deadlineForUpdates": "1m",
        "deadlineForNodeAssignment": "1m",
        "events": events or [],
        "containerStatuses": containers or [],
    }
    data.update(deadlines)
    return PodChecks.model_validate(data)


def ev_check(regexp: str, action: str, grace: str = "1m", **more: Any) -> dict[str, Any]:
    return {"regexp": regexp, "type": "Warning", "gracePeriod": grace, "action": action, **more}


def cs_check(regexp: str, action: str, grace: str = "1m", **more: Any) -> dict[str, Any]:
    return {
        "state": "Waiting",
        "reasonRegexp": regexp,
        "gracePeriod": grace,
        "action": action,
        **more,
    }


def run(cfg: PodChecks, p: dict[str, Any], events: list[dict[str, Any]] | None = None):
    return PodCheckRunner(cfg).check(p, events or [], NOW)


PVC = "Failed to mount pvc!"
SCHEDULER = (
    "0/3 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, "
    "that the pod didn't tolerate, 2 Insufficient cpu."
)
BAD_NAME = waiting("main", "InvalidImageName", "Image name is wrong")
BACKOFF = waiting("main", "ImagePullBackOff", "Backing off")
INIT_SPEC = [{"name": "init", "image": "busybox"}]
