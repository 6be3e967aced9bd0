"""The small interface every executor backend implements.

A backend runs pods and tells what became of them; it decides nothing. The agent
(``executor.agent``) turns what ``poll`` returns into reports, categorises failures and asks
for deletions. Every method is idempotent where the name suggests it should be: deleting a
pod twice, or a pod that is gone, is not an error.

Pod names are ``armada-<jobId>-0`` for every attempt of a job, so a pod kept from an earlier
attempt makes ``create_pod`` raise :class:`PodExists` (Kubernetes' AlreadyExists).

A backend stands for a cluster, and a cluster has namespaces: a pod in a namespace the
backend was not given is refused with :class:`PodRejected` and Kubernetes' message
(``namespaces "x" not found``), before anything else about the pod is looked at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from armada.core.utilisation import UsageSample


class PodExists(Exception):
    """A pod of that name exists already (AlreadyExists): a recoverable submit error."""


class PodRejected(Exception):
    """The cluster refused the pod with an API error about the job itself (Kubernetes'
    status ``reason`` and its message), such as a namespace the cluster does not have. The
    agent fails the run with the message as its pod error, categorised like any failure."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def check_namespace(pod: PodRequest, namespaces: frozenset[str]) -> None:
    """Refuse ``pod`` as Kubernetes does when its namespace does not exist."""
    if pod.namespace not in namespaces:
        raise PodRejected("NotFound", f'namespaces "{pod.namespace}" not found')


class ClusterConfigError(Exception):
    """A backend's cluster settings cannot be read (no kubeconfig, an unknown context, not
    running in a pod); the message names the setting."""


class BackendUnavailable(Exception):
    """The cluster cannot be asked now (its API server answers 5xx, is unreachable, or has not
    been read once yet). Nothing was done; the agent tries again on a later tick."""


class PodCreationFailed(Exception):
    """The backend could not create the pod for a reason that another attempt will not cure
    (for example a spec it cannot run); reported as internal / job-creation-failed."""


@dataclass(frozen=True)
class PodRequest:
    """A pod to start. ``services`` and ``ingress`` are the job's items in our job file's
    shape (``{"type": "NodePort"|"Headless", "ports": [..], "name": ..}`` and
    ``{"ports": [..], "annotations": {..}, "tlsEnabled": .., "certName": ..,
    "useClusterIP": ..}``); a backend that cannot create them refuses the pod with
    :class:`PodCreationFailed`."""

    name: str
    run_id: str
    job_id: str
    node: str
    pod_spec: dict[str, Any]
    annotations: dict[str, str]
    namespace: str = "default"
    queue: str = ""
    job_set: str = ""
    owner: str = ""
    services: tuple[dict[str, Any], ...] = ()
    ingress: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ContainerResult:
    """How one container ended. ``reason`` as Kubernetes spells it: Completed, Error,
    OOMKilled, DeadlineExceeded, ...; ``message`` is its termination message."""

    name: str
    exit_code: int | None
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class PodStatus:
    """Where a pod has got to. Timestamps are set for every phase it has passed through.

    ``conditions`` are pod-level signals (``Evicted``, ``DeadlineExceeded``; ``OOMKilled``
    when a container was OOM-killed); ``pod_error`` says why a pod failed without its
    containers running to an end (an image that cannot be pulled, a lost node).
    ``deleting`` is set once deletion was asked for and the pod is not gone yet. ``lost``
    means the backend lost the pod's processes and cannot tell how it ended.
    """

    name: str
    run_id: str
    pending_at: datetime | None = None
    running_at: datetime | None = None
    finished_at: datetime | None = None
    succeeded: bool = False
    containers: tuple[ContainerResult, ...] = ()
    conditions: tuple[str, ...] = ()
    reason: str = ""
    message: str = ""
    pod_error: str = ""
    deleting: bool = False
    lost: bool = False
    node: str = ""
    #: The pod checks asked for the lease to be returned (a pod stuck before it ran, on a
    #: node or for a cause another attempt may not meet): why. The agent deletes the pod
    #: and returns the lease; the attempt does not count as a failure.
    return_lease: str = ""
    #: The job's ingress addresses by container port, once the cluster has them.
    ingress_addresses: dict[int, str] = field(default_factory=dict, compare=False)
    #: The pod's Kubernetes UID (``metadata.uid``); the fake and local backends make one
    #: when they create the pod and keep it for the pod's life.
    uid: str = ""

    @property
    def exit_code(self) -> int | None:
        """The first non-zero container exit code, else 0 when all exited, else None."""
        codes = [c.exit_code for c in self.containers if c.exit_code is not None]
        nonzero = [c for c in codes if c != 0]
        if nonzero:
            return nonzero[0]
        return 0 if codes else None

    @property
    def exit_codes(self) -> dict[str, int]:
        return {c.name: c.exit_code for c in self.containers if c.exit_code is not None}


@dataclass(frozen=True)
class ClusterNode:
    """A node as a backend that reads a real cluster sees it. Quantities are Kubernetes'
    text (``"8"``, ``"32Gi"``); ``non_armada_allocated`` is what pods this executor did not
    start request on it; ``labels`` are all the node's labels (the agent sends only the
    tracked ones)."""

    name: str
    labels: dict[str, str]
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    allocatable: dict[str, str]
    unschedulable: bool = False
    non_armada_allocated: dict[str, str] = field(default_factory=dict)


class Backend(Protocol):
    def create_pod(self, pod: PodRequest, now: datetime) -> None:
        """Create and start the pod; raises PodExists when the name is taken."""

    def poll(self, now: datetime) -> list[PodStatus]:
        """The status of every pod this backend knows, including those being deleted."""

    def delete_pod(self, name: str, now: datetime, grace_seconds: float = 0.0) -> None:
        """Ask for the pod to go: running containers are stopped (SIGTERM, then SIGKILL
        after ``grace_seconds``) and the pod is removed. Returns at once; ``poll`` shows it
        with ``deleting`` until it is gone."""

    def read_log(self, name: str, limit_bytes: int = 1_000_000) -> str:
        """The pod's log (stdout and stderr), at most the last ``limit_bytes``; empty when
        the pod is unknown."""


@dataclass(frozen=True)
class LogPosition:
    """How far one container's log has been read: ``offset`` bytes of it. A backend that
    cannot read from a byte offset keeps its own place as well: the Kubernetes backend the
    time of the last line read (``mark``) and how many lines of that time it read
    (``at_mark``), and ``window``, how many times the usual request size its next read asks
    for (grown when a read of that size brought nothing new)."""

    offset: int = 0
    mark: str = ""
    at_mark: int = 0
    window: int = 1


@dataclass(frozen=True)
class LogRead:
    """New bytes of one container's log: ``data`` starts at byte ``offset`` of it (past the
    position asked from when the backend skipped bytes to keep within the limit) and ends on
    a whole character; the next read starts at ``position``. ``container`` is empty for a pod
    of one container (the stored log then has no headers), else the container's name."""

    container: str
    offset: int
    data: bytes
    position: LogPosition


def whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character cut at its end: the cut bytes are read again
    with the rest of their character next time."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0x80 == 0:
            return data  # ASCII: whole
        if byte & 0xC0 == 0xC0:  # the lead byte of the last character
            need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4
            return data if back >= need else data[:-back]
    return data


def log_read(container: str, offset: int, data: bytes, *, skipped: bool) -> LogRead | None:
    """The read of ``data``, bytes of a log from byte ``offset`` on, in whole characters
    (``skipped``: bytes before ``offset`` were skipped, so it may start inside a line: it
    then starts at the next line, or character); None when nothing whole is new."""
    if skipped:  # start at a line when one starts in it, else at a character
        newline = data.find(b"\n")
        lead = newline + 1 if 0 <= newline < len(data) - 1 else 0
        while lead < len(data) and lead < 3 and data[lead] & 0xC0 == 0x80:
            lead += 1
        data, offset = data[lead:], offset + lead
    data = whole_characters(data)
    if not data:
        return None
    return LogRead(container, offset, data, LogPosition(offset + len(data)))


class LogFollower(Protocol):
    """A backend that can read what a running pod's containers wrote since a position (for
    the live logs, ``executor.live_logs``)."""

    def read_log_since(
        self, name: str, since: Mapping[str, LogPosition], limit_bytes: int, now: datetime
    ) -> list[LogRead] | None:
        """What each container of the pod wrote after ``since[container]`` (from its start
        for a container not there), at most ``limit_bytes`` per container: of more, only
        the last ``limit_bytes`` (the read's ``offset`` says where they start). Containers
        with nothing new are left out; None when the pod is unknown."""


class UsageReader(Protocol):
    """A backend that can read what its running pods use (for the ``utilisation`` events);
    one without ``usage`` reports none."""

    def usage(self, pods: list[PodStatus], now: datetime) -> dict[str, UsageSample]:
        """A reading for each of the running ``pods`` it can read, by pod name (a pod it
        cannot read now is left out)."""


class ClusterBackend(Backend, Protocol):
    """A backend that reads its nodes from the cluster (``kubernetes``) rather than from
    the executor's configuration."""

    def nodes(self) -> list[ClusterNode] | None:
        """The cluster's nodes as last seen; None until they have been read once."""

    def close(self) -> None:
        """Stop watching the cluster."""
