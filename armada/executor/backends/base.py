"""The small interface every executor backend implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


class PodExists(Exception):
    """A pod of that name exists already (Kubernetes' AlreadyExists): a recoverable submit error."""


@dataclass(frozen=True)
class PodRequest:
    name: str
    run_id: str
    job_id: str
    node: str
    pod_spec: dict[str, Any]
    annotations: dict[str, str]


@dataclass(frozen=True)
class PodStatus:
    """Where a pod has got to. Timestamps are set for every phase it has passed through."""

    name: str
    run_id: str
    pending_at: datetime | None = None
    running_at: datetime | None = None
    finished_at: datetime | None = None
    succeeded: bool = False
    exit_code: int | None = None
    exit_codes: dict[str, int] = field(default_factory=dict)
    reason: str = ""
    message: str = ""
    condition: str = ""
    pod_error: str = ""


class Backend(Protocol):
    def create_pod(self, pod: PodRequest, now: datetime) -> None:
        """Create the pod; raises PodExists when the name is taken."""

    def poll(self, now: datetime) -> list[PodStatus]:
        """The status of every pod this backend knows."""

    def delete_pod(self, name: str) -> None:
        """Delete the pod; deleting a missing pod is not an error."""
