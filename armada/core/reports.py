"""What an executor reports about a run: a phase reached, with its outcome; and what a running
pod used (``RunUtilisation``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from armada.core.states import RunState

# Armada's ``Cause`` of a failure, by name (``api.Cause``).
CAUSE_ERROR = "Error"
CAUSE_EVICTED = "Evicted"
CAUSE_OOM = "OOM"
CAUSE_DEADLINE_EXCEEDED = "DeadlineExceeded"
CAUSE_REJECTED = "Rejected"
OOM_KILLED = "OOMKilled"


@dataclass(frozen=True)
class ContainerEnd:
    """How one container ended, as the executor saw it (``reason`` in Kubernetes' spelling:
    Completed, Error, OOMKilled, ...; ``message`` its termination message)."""

    name: str
    exit_code: int | None = None
    reason: str = ""
    message: str = ""

    @property
    def cause(self) -> str:
        return CAUSE_OOM if self.reason == OOM_KILLED else CAUSE_ERROR


def failure_cause(conditions: Iterable[str], containers: Iterable[ContainerEnd] = ()) -> str:
    """Armada's cause of a failed pod, checked in Armada's order: evicted, then past its
    deadline, then a container OOM-killed (a condition or a container's reason), else an
    error."""
    conditions = frozenset(conditions)
    if "Evicted" in conditions:
        return CAUSE_EVICTED
    if "DeadlineExceeded" in conditions:
        return CAUSE_DEADLINE_EXCEEDED
    if OOM_KILLED in conditions or any(c.reason == OOM_KILLED for c in containers):
        return CAUSE_OOM
    return CAUSE_ERROR


@dataclass(frozen=True)
class RunReport:
    """``state`` is the phase the run's pod reached at ``at``.

    ``LEASE_RETURNED`` means the run never started (for example its pod name was taken) and
    the job may be leased again. ``log`` is the tail of the pod's log, when the executor
    sends one. ``pod_kept_until`` is set on a failure whose pod the executor keeps (its
    category's action is Retain): when it will delete it (``keptPodRetention``). Reports are
    idempotent: applying a report that does not move the run forward (it is already there,
    or already ended) changes nothing.

    A ``RUNNING`` report with ``ingress_addresses`` (container port -> address, at least
    one) is the run's *ingress info*: the executor sends it on its own, after the run's
    ``RUNNING`` report, once the cluster has the addresses of the job's ingresses. The
    server records them on the run and publishes one ``ingress_info`` event; the same
    addresses sent again change nothing (``services.run_ingress``).

    ``kubernetes_id`` is the pod's UID (empty when no pod was made); ``containers`` are the
    containers that ended, each with its own outcome; ``conditions`` the pod-level signals
    of a failure (``OOMKilled``, ``Evicted``, ``DeadlineExceeded``).
    """

    run_id: str
    state: RunState
    at: datetime
    exit_code: int | None = None
    exit_codes: dict[str, int] = field(default_factory=dict)
    reason: str = ""
    message: str = ""
    failure_category: str = ""
    failure_subcategory: str = ""
    hint: str = ""
    log: str | None = None
    pod_kept_until: datetime | None = None
    ingress_addresses: dict[int, str] | None = None
    kubernetes_id: str = ""
    containers: tuple[ContainerEnd, ...] = ()
    conditions: tuple[str, ...] = ()

    @property
    def is_ingress_info(self) -> bool:
        return self.state == RunState.RUNNING and bool(self.ingress_addresses)


@dataclass(frozen=True)
class RunUtilisation:
    """What a running pod used over one utilisation period ending ``at``: resource name ->
    quantity in milli-units (``core.quantity``: cpu in millicores, memory in milli-bytes).
    ``max_usage`` and ``avg_usage`` are the largest and the mean sample of the period;
    ``cumulative`` is what the pod used since it started (cpu in millicore-seconds)."""

    run_id: str
    at: datetime
    kubernetes_id: str = ""
    max_usage: dict[str, int] = field(default_factory=dict)
    avg_usage: dict[str, int] = field(default_factory=dict)
    cumulative: dict[str, int] = field(default_factory=dict)
