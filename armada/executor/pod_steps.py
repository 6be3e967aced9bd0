"""What the agent does to pods: start them, follow them to their end, stop and delete them.

The steps of a tick that touch the cluster (``executor.agent`` says in which order they
run). Each returns the reports it makes; none talks to the control plane.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from armada.core.categorizer import (
    JOB_CREATION_FAILED,
    POD_MISSING,
    STUCK_TERMINATING,
    Categorization,
    Categorizer,
    FailureSignals,
)
from armada.core.config import Executor as ExecutorConfig
from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.executor import metrics as executor_metrics
from armada.executor.backends.base import (
    Backend,
    BackendUnavailable,
    PodCreationFailed,
    PodExists,
    PodRejected,
    PodRequest,
    PodStatus,
)
from armada.executor.held import HeldRun
from armada.executor.kept_pods import expired_kept_pods, kept_until
from armada.executor.run_reports import (
    failure_report,
    ingress_report,
    internal_failure,
    progress_reports,
    signals_of,
    success_report,
)

if TYPE_CHECKING:
    from armada.executor.agent import TickReport

log = logging.getLogger(__name__)

LOG_TAIL_BYTES = 64 * 1024


@dataclass
class Deleting:
    """A failed pod being deleted before its failure is reported."""

    status: PodStatus
    category: Categorization
    asked_at: datetime
    log: str
    #: Not a failure: a lease to return once the pod is gone (a stuck pod).
    returned: RunReport | None = None


class PodSteps:
    """The pod steps of ``ExecutorAgent``, which holds the state they work on."""

    config: ExecutorConfig
    backend: Backend
    categorizer: Categorizer
    runs: dict[str, HeldRun]
    _deleting: dict[str, Deleting]
    _freed: list[str]
    _expired: list[str]
    deletions: executor_metrics.PodDeletions

    def _delete(self, name: str, now: datetime, grace_seconds: float = 0.0) -> None:
        """Ask the backend to delete pod ``name``; its deadline is timed (``executor.metrics``)."""
        self.backend.delete_pod(name, now, grace_seconds)
        self.deletions.asked(name, now, grace_seconds)

    def _delete_expired_kept(self, pods: dict[str, PodStatus], now: datetime) -> None:
        """Delete the kept pods whose retention has passed; the next report says so."""
        expired = expired_kept_pods(
            pods.values(), set(self.runs), self.config.kept_pod_retention, now
        )
        for name in expired:
            self._delete(name, now, 0.0)
        self._expired.extend(expired)

    def _stop(self, run: HeldRun, status: PodStatus | None, now: datetime) -> list[RunReport]:
        """A run to be preempted or cancelled: stop its pod with the pod's grace period, and
        report the run preempted or cancelled once the pod is gone (at once if it had none)."""
        if status is None or status.run_id != run.id:
            state = RunState.CANCELLED if run.stop_kind == "cancel" else RunState.PREEMPTED
            return [RunReport(run.id, state, now)]
        if not status.deleting:
            self._delete(status.name, now, run.grace_seconds)
        return []

    def _start(self, run: HeldRun, now: datetime, result: TickReport) -> list[RunReport]:
        request = PodRequest(
            run.pod_name,
            run.id,
            run.job_id,
            run.node,
            run.pod_spec or {},
            run.annotations,
            namespace=run.namespace,
            queue=run.queue,
            job_set=run.job_set,
            owner=run.owner,
            services=run.services,
            ingress=run.ingress,
        )
        try:
            self.backend.create_pod(request, now)
        except BackendUnavailable as exc:
            log.info(
                "pod %s not created now (%s); trying again next tick",
                run.pod_name,
                exc,
                extra={"job_id": run.job_id, "run_id": run.id, "executor": self.config.id},
            )
            return []
        except PodExists:
            return [self._collision(run, now)]
        except PodRejected as exc:
            return [self._rejected(run, exc, now)]
        except PodCreationFailed as exc:
            return [
                internal_failure(run.id, JOB_CREATION_FAILED, now, "JobCreationFailed", str(exc))
            ]
        result.created += 1
        return []

    def _rejected(self, run: HeldRun, refusal: PodRejected, now: datetime) -> RunReport:
        """The cluster refused the pod: the run fails with the refusal as its pod error,
        through the categorizer like every failure (an ``onPodError`` rule can match it).
        There is no pod, so nothing is deleted whatever the category's action."""
        category = executor_metrics.categorize(
            self.categorizer, FailureSignals(pod_error=refusal.message)
        )
        log.info(
            "pod %s refused by the cluster: %s",
            run.pod_name,
            refusal.message,
            extra={"job_id": run.job_id, "run_id": run.id, "executor": self.config.id},
        )
        return RunReport(
            run.id,
            RunState.FAILED,
            now,
            reason=refusal.reason,
            message=refusal.message,
            failure_category=category.category,
            failure_subcategory=category.subcategory,
            hint=category.hint,
        )

    def _collision(self, run: HeldRun, now: datetime) -> RunReport:
        """The pod name is taken: return the lease and have the old pod deleted."""
        log.warning(
            "pod %s already exists; returning the lease of run %s",
            run.pod_name,
            run.id,
            extra={"job_id": run.job_id, "run_id": run.id, "executor": self.config.id},
        )
        self._delete(run.pod_name, now, run.grace_seconds)
        self._freed.append(run.pod_name)
        return RunReport(
            run.id,
            RunState.LEASE_RETURNED,
            now,
            reason="PodCreationFailed",
            message=f"pod {run.pod_name} could not be created: a pod of that name already exists",
        )

    def _follow(
        self,
        run: HeldRun,
        status: PodStatus | None,
        now: datetime,
        fresh_deletions: list[HeldRun],
    ) -> list[RunReport]:
        deleting = self._deleting.get(run.id)
        if deleting is not None:
            return self._follow_deletion(run, status, deleting, now)
        if status is None or status.lost:
            if status is None and run.state == RunState.LEASED:
                return []
            message = (
                status.pod_error if status else f"pod {run.pod_name} is no longer on the cluster"
            )
            return [internal_failure(run.id, POD_MISSING, now, "PodMissing", message)]
        if status.return_lease and not status.finished_at:
            self._return_stuck(run, status, now)
            fresh_deletions.append(run)
            return []
        out = progress_reports(run, status)
        if status.ingress_addresses and not run.ingress_reported and not status.finished_at:
            run.ingress_reported = True
            out.append(ingress_report(run.id, status, now))
        if not status.finished_at:
            return out
        # A NUL would make the server refuse the whole report batch (no text column keeps one).
        log_text = self.backend.read_log(status.name, LOG_TAIL_BYTES).replace("\x00", "\ufffd")
        if status.succeeded:
            out.append(success_report(run.id, status, status.finished_at, log_text))
            return out  # the pod is deleted once the server has the report
        category = executor_metrics.categorize(self.categorizer, signals_of(status))
        if category.delete_pod:
            self._delete(status.name, now, 0.0)
            self._deleting[run.id] = Deleting(status, category, now, log_text)
            fresh_deletions.append(run)
            return out
        kept = kept_until(status, self.config.kept_pod_retention)
        out.append(failure_report(run.id, status, category, status.finished_at, log_text, kept))
        return out

    def _return_stuck(self, run: HeldRun, status: PodStatus, now: datetime) -> None:
        """The pod never ran and another attempt may fare better (the pod checks found it
        unplaced or its node silent, or the kubelet refused it for room): delete the pod and
        return the lease once it is gone (so that the name is free for the next attempt), or
        ``podDeletionTimeout`` after asking. The run never ran, so this is not a failure and
        costs the job no retry."""
        log.warning(
            "pod %s is stuck: %s; returning the lease of run %s",
            run.pod_name,
            status.return_lease,
            run.id,
            extra={"job_id": run.job_id, "run_id": run.id, "executor": self.config.id},
        )
        self._delete(run.pod_name, now, 0.0)
        returned = RunReport(
            run.id,
            RunState.LEASE_RETURNED,
            now,
            reason=status.reason or "PodStuck",
            message=status.return_lease,
            kubernetes_id=status.uid,
        )
        self._deleting[run.id] = Deleting(status, Categorization(), now, "", returned)

    def _follow_deletion(
        self, run: HeldRun, status: PodStatus | None, deleting: Deleting, now: datetime
    ) -> list[RunReport]:
        """Report the failure once the pod is gone, or as stuck-terminating when it stays;
        a returned lease is reported once the pod is gone or the time is up."""
        timed_out = now - deleting.asked_at > timedelta(seconds=self.config.pod_deletion_timeout)
        if deleting.returned is not None:
            if status is None or timed_out:
                del self._deleting[run.id]
                return [deleting.returned]
            return []
        if status is None:
            del self._deleting[run.id]
            return [
                failure_report(
                    run.id,
                    deleting.status,
                    deleting.category,
                    deleting.status.finished_at or now,
                    deleting.log,
                )
            ]
        if timed_out:
            del self._deleting[run.id]
            original = deleting.category.category or "uncategorised"
            return [
                internal_failure(
                    run.id,
                    STUCK_TERMINATING,
                    now,
                    "StuckTerminating",
                    f"pod {run.pod_name} was still terminating {self.config.pod_deletion_timeout:g}s after its "
                    f"deletion was asked for (its failure was categorised {original})",
                    deleting.log,
                )
            ]
        return []

    def _stop_orphans(self, pods: dict[str, PodStatus], now: datetime) -> None:
        """Pods whose runs are not held here: stop those still running, and delete those
        that succeeded (their reports were acknowledged). Finished failed pods are kept
        (Retain) until ``_delete_expired_kept`` deletes them."""
        for status in pods.values():
            if status.run_id in self.runs or status.deleting:
                continue
            if not status.finished_at:
                self._delete(status.name, now)  # the pod's own grace period
            elif status.succeeded:
                self._delete(status.name, now)
        for run_id in [r for r in self._deleting if r not in self.runs]:
            del self._deleting[run_id]
