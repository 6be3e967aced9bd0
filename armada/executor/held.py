"""What an executor holds between ticks: its runs, and the reports not yet acknowledged.

The agent remembers nothing else across ticks, and nothing at all across its own restarts:
a restarted executor finds its pods by their labels (each pod names its run) and holds
their runs again, reporting every phase from the start; the server ignores what it has
already seen (reports are idempotent), so nothing is counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.executor.api.messages import Lease
from armada.executor.backends.base import PodStatus


@dataclass
class HeldRun:
    """A run this executor holds: leased to it and not yet acknowledged as ended.

    ``state`` is the latest phase reported (queued for the server, acknowledged or not), so
    that a phase is reported once. ``ended`` is set once the run's last report is queued;
    the run is let go when the server acknowledges that report. ``pod_spec`` is None for a
    run adopted from a pod after a restart (its pod keeps its own grace period)."""

    id: str
    pod_name: str
    node: str = ""
    job_id: str = ""
    namespace: str = "default"
    pod_spec: dict[str, Any] | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    queue: str = ""
    job_set: str = ""
    owner: str = ""
    services: tuple[dict[str, Any], ...] = ()
    ingress: tuple[dict[str, Any], ...] = ()
    state: RunState = RunState.LEASED
    stop_kind: str = ""  # "cancel" or "preempt" once the server asked for the pod to stop
    ended: bool = False
    ingress_reported: bool = False

    @classmethod
    def of_lease(cls, lease: Lease) -> HeldRun:
        return cls(
            id=lease.run_id,
            pod_name=lease.pod_name,
            node=lease.node,
            job_id=lease.job_id,
            namespace=lease.namespace,
            pod_spec=lease.pod_spec,
            annotations=lease.annotations,
            queue=lease.queue,
            job_set=lease.job_set,
            owner=lease.owner,
            services=tuple(lease.services),
            ingress=tuple(lease.ingress),
        )

    @classmethod
    def of_pod(cls, status: PodStatus) -> HeldRun:
        return cls(id=status.run_id, pod_name=status.name)

    @property
    def grace_seconds(self) -> float:
        """The pod's ``terminationGracePeriodSeconds``; 0 (the backend's own reading of the
        pod) when the spec is not known here."""
        if self.pod_spec is None:
            return 0.0
        value = self.pod_spec.get("terminationGracePeriodSeconds", 30)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return 30.0


@dataclass(frozen=True)
class Pending:
    """A report waiting for the server's acknowledgement, with the pod it is about."""

    report: RunReport
    pod_name: str


TERMINAL_REPORTS = frozenset(
    {
        RunState.SUCCEEDED,
        RunState.FAILED,
        RunState.CANCELLED,
        RunState.PREEMPTED,
        RunState.LEASE_RETURNED,
    }
)
