"""Which kept pods have outlived the executor's ``keptPodRetention``.

A failed pod of a Retain category stays on the cluster as evidence once its failure is
reported (``executor.agent``). It is kept for ``keptPodRetention`` after it ended; the first
tick after that deletes it. The time is measured from the pod's own end, which the backend
keeps (the local backend across executor restarts), so the agent needs no memory of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

from armada.executor.backends.base import PodStatus


def kept_until(status: PodStatus, retention_seconds: float) -> datetime | None:
    """When a failed pod kept from now on is to be deleted; None for a pod not ended."""
    if status.finished_at is None:
        return None
    return status.finished_at + timedelta(seconds=retention_seconds)


def expired_kept_pods(
    pods: Iterable[PodStatus],
    active_run_ids: Collection[str],
    retention_seconds: float,
    now: datetime,
) -> list[str]:
    """The names of the kept pods to delete at ``now``: failed, ended, of a run no longer
    active here, not being deleted already, and ended at least ``retention_seconds`` ago."""
    out: list[str] = []
    for status in pods:
        if status.run_id in active_run_ids or status.deleting or status.succeeded:
            continue
        until = kept_until(status, retention_seconds)
        if until is not None and now >= until:
            out.append(status.name)
    return out
