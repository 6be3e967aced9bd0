"""A simulated cluster: pods finish after a time and with the outcome the job asks for.

Cheap enough for thousands of nodes and pods: a pod is a few fields, and its status is
computed from its creation time, the asked-for outcome and ``now``. See ``core.fakepod`` for
the annotations.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from armada.core.fakepod import FakeOutcome, parse_fake_outcome
from armada.executor.backends.base import PodExists, PodRequest, PodStatus


@dataclass
class _FakePod:
    request: PodRequest
    created_at: datetime
    outcome: FakeOutcome


class FakeBackend:
    def __init__(self) -> None:
        self._pods: dict[str, _FakePod] = {}

    def create_pod(self, pod: PodRequest, now: datetime) -> None:
        if pod.name in self._pods:
            raise PodExists(pod.name)
        outcome, _ = parse_fake_outcome(pod.annotations)
        self._pods[pod.name] = _FakePod(pod, now, outcome)

    def delete_pod(self, name: str) -> None:
        self._pods.pop(name, None)

    def poll(self, now: datetime) -> list[PodStatus]:
        return [self._status(p, now) for p in self._pods.values()]

    def _status(self, pod: _FakePod, now: datetime) -> PodStatus:
        o = pod.outcome
        pending_at = pod.created_at
        running_at = pending_at + timedelta(seconds=o.pending_seconds)
        container = (pod.request.pod_spec.get("containers") or [{}])[0].get("name", "main")
        base = {"name": pod.request.name, "run_id": pod.request.run_id, "pending_at": pending_at}
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
        finished_at = running_at + timedelta(seconds=o.duration_seconds)
        if now < finished_at:
            return PodStatus(**base, running_at=running_at)
        if o.succeeds:
            return PodStatus(
                **base,
                running_at=running_at,
                finished_at=finished_at,
                succeeded=True,
                exit_code=0,
                exit_codes={container: 0},
            )
        exit_code = o.exit_code
        if o.condition == "OOMKilled" and not exit_code:
            exit_code = 137
        reason = o.condition or "Error"
        message = o.termination_message or (
            f"container {container} exited with code {exit_code}" if exit_code else reason
        )
        return PodStatus(
            **base,
            running_at=running_at,
            finished_at=finished_at,
            exit_code=exit_code,
            exit_codes={container: exit_code} if exit_code is not None else {},
            reason=reason,
            message=message,
            condition=o.condition,
        )
