"""A simulated cluster: pods finish after a time and with the outcome the job asks for.

Cheap enough for thousands of nodes and pods: a pod is a few fields, and its status is
computed from its creation time, the asked-for outcome (``core.fakepod``) and ``now``.
Given a state directory (as every executor process gives it), the pods also live in a file
there (``fake_store``), as a real cluster lives outside its executor: an executor killed and
started again finds its pods as they were and carries on. Without one (tests of a single
agent), they live in memory only.

A job's ``services`` are accepted and simulated by nothing. Its ``ingress`` items get
addresses once the pod runs: ``<pod name>.<namespace>.ingress.fake.invalid:<port>`` for
each of their ports. The ``.invalid`` domain never resolves: the addresses are for
following the flow (the ``ingress_info`` event), not for connecting.

Each pod gets a random UID when it is created (Kubernetes' ``metadata.uid``), kept for its
life. Its usage (``usage``, for the ``utilisation`` events) is simulated: a running pod uses
what its containers request (a limit stands for a missing request), and its cumulative cpu
grows with that rate from the moment it started running.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from armada.core.fakepod import FakeOutcome, parse_fake_outcome
from armada.core.quantity import CPU, Resources
from armada.core.utilisation import UsageSample
from armada.executor.backends.base import (
    ContainerResult,
    LogPosition,
    LogRead,
    PodExists,
    PodRequest,
    PodStatus,
    check_namespace,
    log_read,
)
from armada.executor.backends.fake_store import FakePodStore, StoredPod

OOM_EXIT_CODE = 137
FAKE_INGRESS_DOMAIN = "ingress.fake.invalid"


def fake_ingress_addresses(pod: PodRequest) -> dict[int, str]:
    """The simulated addresses of a pod's ingresses, by container port (see the module)."""
    return {
        port: f"{pod.name}.{pod.namespace}.{FAKE_INGRESS_DOMAIN}:{port}"
        for item in pod.ingress
        for port in item.get("ports") or ()
    }


def simulated_usage(pod_spec: Mapping[str, Any]) -> Resources:
    """What a fake pod uses while it runs: the sum of its containers' requests (a limit
    stands for a missing request); nothing for a spec that cannot be read."""
    total = Resources()
    try:
        for container in pod_spec.get("containers") or []:
            resources = container.get("resources") or {}
            asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
            total = total + Resources.parse(asked)
    except (ValueError, TypeError, AttributeError):
        return Resources()
    return total


@dataclass
class _FakePod:
    request: PodRequest
    created_at: datetime
    outcome: FakeOutcome
    delete_at: datetime | None = None
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))


def _status(pod: _FakePod, now: datetime) -> PodStatus:
    o = pod.outcome
    container = (pod.request.pod_spec.get("containers") or [{}])[0].get("name", "main")
    running_at = pod.created_at + timedelta(seconds=o.pending_seconds)
    finished_at = running_at + timedelta(seconds=o.duration_seconds)
    base = {
        "name": pod.request.name,
        "run_id": pod.request.run_id,
        "pending_at": pod.created_at,
        "deleting": pod.delete_at is not None,
        "uid": pod.uid,
    }
    if o.pod_error:
        if now < running_at:
            return PodStatus(**base)
        return PodStatus(
            **base,
            finished_at=running_at,
            reason="PodError",
            message=o.pod_error,
            pod_error=o.pod_error,
        )
    if now < running_at:
        return PodStatus(**base)
    if now < finished_at:
        return PodStatus(**base, running_at=running_at)
    if o.node_lost:
        message = f"node {pod.request.node} was lost while the pod ran"
        return PodStatus(
            **base,
            running_at=running_at,
            finished_at=finished_at,
            reason="NodeLost",
            message=message,
            pod_error=message,
        )
    if o.succeeds:
        result = ContainerResult(container, 0, "Completed", o.termination_message)
        return PodStatus(
            **base,
            running_at=running_at,
            finished_at=finished_at,
            succeeded=True,
            containers=(result,),
        )
    exit_code = o.exit_code or (OOM_EXIT_CODE if o.condition == "OOMKilled" else None)
    if o.condition in ("Evicted", "DeadlineExceeded"):
        exit_code = o.exit_code or 143
    reason = o.condition or "Error"
    message = o.termination_message or (o.log.strip().splitlines() or [""])[-1]
    result = ContainerResult(
        container, exit_code, "OOMKilled" if o.condition == "OOMKilled" else "Error", message
    )
    return PodStatus(
        **base,
        running_at=running_at,
        finished_at=finished_at,
        containers=(result,),
        conditions=(o.condition,) if o.condition else (),
        reason=reason,
        message=message or f"container {container} exited with code {exit_code}",
    )


class FakeBackend:
    """A simulated cluster with the given ``namespaces`` (a pod in another is refused); its
    pods kept in ``state_dir`` too when one is given (see the module docstring)."""

    def __init__(
        self, namespaces: Iterable[str] = ("default",), state_dir: Path | None = None
    ) -> None:
        self.namespaces = frozenset(namespaces)
        self._pods: dict[str, _FakePod] = {}
        self._deleting: set[str] = set()  # names of pods that take time to go
        self._store = FakePodStore(state_dir) if state_dir is not None else None
        if self._store is not None:
            for stored in self._store.load():
                outcome, _ = parse_fake_outcome(stored.request.annotations)
                pod = _FakePod(
                    stored.request, stored.created_at, outcome, stored.delete_at, stored.uid
                )
                self._pods[stored.request.name] = pod
                if pod.delete_at is not None:
                    self._deleting.add(stored.request.name)

    def _keep(self, pod: _FakePod) -> None:
        if self._store is not None:
            self._store.put(StoredPod(pod.request, pod.created_at, pod.delete_at, pod.uid))

    def _drop(self, name: str) -> None:
        self._pods.pop(name, None)
        self._deleting.discard(name)
        if self._store is not None:
            self._store.remove(name)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def create_pod(self, pod: PodRequest, now: datetime) -> None:
        check_namespace(pod, self.namespaces)
        if pod.name in self._pods:
            raise PodExists(pod.name)
        outcome, _ = parse_fake_outcome(pod.annotations)
        self._pods[pod.name] = made = _FakePod(pod, now, outcome)
        self._keep(made)

    def delete_pod(self, name: str, now: datetime, grace_seconds: float = 0.0) -> None:
        pod = self._pods.get(name)
        if pod is None or pod.delete_at is not None:
            return
        if pod.outcome.deletion_seconds <= 0:
            self._drop(name)
            return
        pod.delete_at = now + timedelta(seconds=pod.outcome.deletion_seconds)
        self._deleting.add(name)
        self._keep(pod)

    def force_delete_pod(self, name: str, now: datetime) -> None:
        """Remove the pod at once, however long its deletion would take (as Kubernetes' delete
        with no grace removes a pod's object)."""
        self._drop(name)

    def poll(self, now: datetime) -> list[PodStatus]:
        self._forget_deleted(now)
        out = []
        for pod in self._pods.values():
            status = _status(pod, now)
            if pod.request.ingress and status.running_at is not None:
                status = replace(status, ingress_addresses=fake_ingress_addresses(pod.request))
            out.append(status)
        return out

    def usage(self, pods: list[PodStatus], now: datetime) -> dict[str, UsageSample]:
        """The simulated usage of the running ``pods`` (see the module docstring)."""
        out = {}
        for status in pods:
            pod = self._pods.get(status.name)
            if pod is None or status.running_at is None or status.finished_at is not None:
                continue
            using = simulated_usage(pod.request.pod_spec)
            if not using:
                continue
            seconds = max(0.0, (now - status.running_at).total_seconds())
            cumulative = {CPU: round(using[CPU] * seconds)} if using[CPU] else {}
            out[status.name] = UsageSample(now, dict(using), cumulative)
        return out

    def read_log(self, name: str, limit_bytes: int = 1_000_000) -> str:
        """The log the pod wrote by its end (all of it while ``logInterval`` is unset)."""
        pod = self._pods.get(name)
        if pod is None:
            return ""
        o = pod.outcome
        written = o.log if not o.log_interval_seconds else o.log_written(o.duration_seconds)
        return written[-limit_bytes:] if limit_bytes > 0 else ""

    def read_log_since(
        self, name: str, since: Mapping[str, LogPosition], limit_bytes: int, now: datetime
    ) -> list[LogRead] | None:
        """What the pod's one container wrote by ``now`` past ``since[""]`` (its log as
        ``core.fakepod`` times it), the last ``limit_bytes`` of it at most."""
        pod = self._pods.get(name)
        if pod is None:
            return None
        o = pod.outcome
        running = (now - pod.created_at).total_seconds() - o.pending_seconds
        if o.pod_error or running < 0:
            return []
        data = o.log_written(min(running, o.duration_seconds)).encode()
        known = since.get("", LogPosition()).offset
        start = max(known, len(data) - limit_bytes)
        read = log_read("", start, data[start:], skipped=start > known)
        return [read] if read is not None else []

    def _forget_deleted(self, now: datetime) -> None:
        for name in [n for n in self._deleting if self._pods[n].delete_at <= now]:
            self._drop(name)
