"""What an executor reports about a run: a phase reached, with its outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from armada.core.states import RunState


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

    @property
    def is_ingress_info(self) -> bool:
        return self.state == RunState.RUNNING and bool(self.ingress_addresses)
