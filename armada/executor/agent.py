"""The executor agent: one tick registers or heart-beats, starts leased runs, reports progress.

A tick, in order:
1. register the executor and its nodes (first tick of the process) or send a heartbeat;
2. create a pod for every run leased to this executor that has none yet. A pod name that is
   taken (AlreadyExists, typically a pod kept from an earlier attempt) is a recoverable
   submit error: the lease is returned, and the colliding pod is deleted. A spec the backend
   cannot run fails the run as internal / job-creation-failed. A pod the cluster refuses
   (``PodRejected``: its namespace does not exist there, say) fails the run with the refusal
   as its pod error, categorised like any failure, so that retry policies see it too;
3. poll the backend and turn each phase a pod has passed through (pending, running, ended)
   into a report, oldest first, so that even a pod that started and ended between two ticks
   is reported as pending, running and then succeeded or failed;
4. categorise every failure (``core.categorizer``). When the category's action is Delete,
   the pod is deleted and the failure is reported only once the pod is gone, so that the
   name is free before a retry can be leased; a pod still there ``podDeletionTimeout`` after
   the deletion was asked for is reported as internal / stuck-terminating instead. With
   Retain the failed pod is kept as evidence, and the report says until when
   (``keptPodRetention`` after the pod ended). Succeeded pods are deleted;
5. apply all reports in one transaction, with the pods' logs;
6. delete the kept pods whose retention has passed (``executor.kept_pods``) and record
   them, with the kept pods deleted sooner to free a name (``services.kept_pods``).
A run to be preempted or cancelled has its pod stopped (SIGTERM, then SIGKILL after the pod's
``terminationGracePeriodSeconds``) and is reported so once the pod is gone.
A run that is pending or running in the database but whose pod is gone (it vanished, or
the backend lost it) is reported failed: internal / pod-missing. Pods of runs that are no
longer active here (cancelled, expired elsewhere) and still running are stopped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from armada.core.categorizer import (
    INTERNAL,
    JOB_CREATION_FAILED,
    POD_MISSING,
    STUCK_TERMINATING,
    Categorization,
    Categorizer,
    ContainerSignal,
    FailureSignals,
)
from armada.core.config import Executor as ExecutorConfig
from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.executor.backends import make_backend
from armada.executor.backends.base import (
    Backend,
    PodCreationFailed,
    PodExists,
    PodRejected,
    PodRequest,
    PodStatus,
)
from armada.executor.kept_pods import expired_kept_pods, kept_until
from armada.services.executors import (
    ActiveRun,
    executor_heartbeat,
    executor_register,
    runs_active_for_executor,
)
from armada.services.kept_pods import kept_pods_deleted
from armada.services.runs import runs_apply_reports

log = logging.getLogger(__name__)

LOG_TAIL_BYTES = 64 * 1024


@dataclass
class TickReport:
    created: int = 0
    reported: int = 0
    returned: int = 0


@dataclass
class _Deleting:
    """A failed pod being deleted before its failure is reported."""

    status: PodStatus
    category: Categorization
    asked_at: datetime
    log: str


def signals_of(status: PodStatus) -> FailureSignals:
    return FailureSignals(
        containers=tuple(
            ContainerSignal(c.name, c.exit_code, c.reason, c.message) for c in status.containers
        ),
        conditions=frozenset(status.conditions),
        pod_error=status.pod_error,
    )


def progress_reports(run: ActiveRun, status: PodStatus) -> list[RunReport]:
    """Reports for the phases ``status`` has passed that ``run`` has not (success included)."""
    out: list[RunReport] = []
    order = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
    reached = order.index(run.state) if run.state in order else len(order)
    if status.pending_at and reached < 1:
        out.append(RunReport(run.id, RunState.PENDING, status.pending_at))
    if status.running_at and reached < 2:
        out.append(RunReport(run.id, RunState.RUNNING, status.running_at))
    return out


def failure_report(
    run_id: str,
    status: PodStatus,
    category: Categorization,
    at: datetime,
    log_text: str | None,
    pod_kept_until: datetime | None = None,
) -> RunReport:
    return RunReport(
        run_id,
        RunState.FAILED,
        at,
        exit_code=status.exit_code,
        exit_codes=status.exit_codes,
        reason=status.reason or "Error",
        message=status.message or status.pod_error,
        failure_category=category.category,
        failure_subcategory=category.subcategory,
        hint=category.hint,
        log=log_text,
        pod_kept_until=pod_kept_until,
    )


def internal_failure(
    run_id: str,
    subcategory: str,
    at: datetime,
    reason: str,
    message: str,
    log_text: str | None = None,
) -> RunReport:
    return RunReport(
        run_id,
        RunState.FAILED,
        at,
        reason=reason,
        message=message,
        failure_category=INTERNAL,
        failure_subcategory=subcategory,
        log=log_text,
    )


class ExecutorAgent:
    """Long-lived per worker process; ``tick`` is called by the executor's periodic task."""

    def __init__(self, config: ExecutorConfig, backend: Backend | None = None) -> None:
        self.config = config
        if backend is None:
            from django.conf import settings

            backend = make_backend(config, settings.VAR_DIR)
        self.backend = backend
        self.categorizer = Categorizer(config.error_categories)
        self.registered = False
        self._deleting: dict[str, _Deleting] = {}
        self._freed: list[str] = []  # kept pods deleted in this tick to free their names

    def tick(self, now: datetime) -> TickReport:
        result = TickReport()
        if not self.registered or not executor_heartbeat(executor_id=self.config.id, now=now):
            executor_register(config=self.config, now=now)
            self.registered = True
        runs = runs_active_for_executor(executor_id=self.config.id)
        pods = {s.name: s for s in self.backend.poll(now)}
        reports: list[RunReport] = []
        for run in runs:
            if run.stop_requested:
                reports += self._stop(run, pods.get(run.pod_name), now)
            elif run.state == RunState.LEASED and run.pod_name not in pods:
                reports += self._start(run, now, result)
            elif run.state == RunState.LEASED and pods[run.pod_name].run_id != run.id:
                reports.append(self._collision(run, pods[run.pod_name], now))
        if result.created:
            pods = {s.name: s for s in self.backend.poll(now)}
        to_delete: list[str] = []
        fresh_deletions: list[ActiveRun] = []
        for run in runs:
            status = pods.get(run.pod_name)
            if run.stop_requested or (status is not None and status.run_id != run.id):
                continue  # being stopped, or a collision: handled above
            reports += self._follow(run, status, now, to_delete, fresh_deletions)
        if fresh_deletions:
            # Deletions asked for in this tick may be done already: report those at once.
            after = {s.name: s for s in self.backend.poll(now)}
            for run in fresh_deletions:
                reports += self._follow_deletion(
                    run, after.get(run.pod_name), self._deleting[run.id], now
                )
        result.returned = sum(1 for r in reports if r.state == RunState.LEASE_RETURNED)
        result.reported = runs_apply_reports(executor_id=self.config.id, reports=reports, now=now)
        for name in to_delete:
            self.backend.delete_pod(name, now)
        self._stop_orphans(runs, pods, now)
        self._delete_expired_kept(runs, pods, now)
        return result

    def _delete_expired_kept(
        self, runs: list[ActiveRun], pods: dict[str, PodStatus], now: datetime
    ) -> None:
        """Delete the kept pods whose retention has passed, and record them with those
        deleted sooner in this tick to free a name (one transaction, only when any)."""
        expired = expired_kept_pods(
            pods.values(), {r.id for r in runs}, self.config.kept_pod_retention, now
        )
        for name in expired:
            self.backend.delete_pod(name, now, 0.0)
        freed, self._freed = self._freed, []
        if expired or freed:
            kept_pods_deleted(
                executor_id=self.config.id,
                pod_names={*expired, *freed},
                expired=len(expired),
                now=now,
            )

    def _stop(self, run: ActiveRun, status: PodStatus | None, now: datetime) -> list[RunReport]:
        """A run to be preempted or cancelled: stop its pod with the pod's grace period, and
        report the run preempted or cancelled once the pod is gone (at once if it had none)."""
        if status is None or status.run_id != run.id:
            state = RunState.CANCELLED if run.stop_kind == "cancel" else RunState.PREEMPTED
            return [RunReport(run.id, state, now)]
        if not status.deleting:
            self.backend.delete_pod(status.name, now, _grace(run.pod_spec))
        return []

    def _start(self, run: ActiveRun, now: datetime, result: TickReport) -> list[RunReport]:
        request = PodRequest(
            run.pod_name,
            run.id,
            run.job_id,
            run.node,
            run.pod_spec,
            run.annotations,
            namespace=run.namespace,
        )
        try:
            self.backend.create_pod(request, now)
        except PodExists:
            return [self._collision(run, None, now)]
        except PodRejected as exc:
            return [self._rejected(run, exc, now)]
        except PodCreationFailed as exc:
            return [
                internal_failure(run.id, JOB_CREATION_FAILED, now, "JobCreationFailed", str(exc))
            ]
        result.created += 1
        return []

    def _rejected(self, run: ActiveRun, refusal: PodRejected, now: datetime) -> RunReport:
        """The cluster refused the pod: the run fails with the refusal as its pod error,
        through the categorizer like every failure (an ``onPodError`` rule can match it).
        There is no pod, so nothing is deleted whatever the category's action."""
        category = self.categorizer.categorize(FailureSignals(pod_error=refusal.message))
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

    def _collision(self, run: ActiveRun, existing: PodStatus | None, now: datetime) -> RunReport:
        """The pod name is taken: return the lease and have the old pod deleted."""
        log.warning(
            "pod %s already exists; returning the lease of run %s",
            run.pod_name,
            run.id,
            extra={"job_id": run.job_id, "run_id": run.id, "executor": self.config.id},
        )
        self.backend.delete_pod(run.pod_name, now, _grace(run.pod_spec))
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
        run: ActiveRun,
        status: PodStatus | None,
        now: datetime,
        to_delete: list[str],
        fresh_deletions: list[ActiveRun],
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
        out = progress_reports(run, status)
        if not status.finished_at:
            return out
        log_text = self.backend.read_log(status.name, LOG_TAIL_BYTES)
        if status.succeeded:
            out.append(
                RunReport(
                    run.id,
                    RunState.SUCCEEDED,
                    status.finished_at,
                    exit_code=0,
                    exit_codes=status.exit_codes,
                    log=log_text,
                )
            )
            to_delete.append(status.name)
            return out
        category = self.categorizer.categorize(signals_of(status))
        if category.delete_pod:
            self.backend.delete_pod(status.name, now, 0.0)
            self._deleting[run.id] = _Deleting(status, category, now, log_text)
            fresh_deletions.append(run)
            return out
        kept = kept_until(status, self.config.kept_pod_retention)
        out.append(failure_report(run.id, status, category, status.finished_at, log_text, kept))
        return out

    def _follow_deletion(
        self, run: ActiveRun, status: PodStatus | None, deleting: _Deleting, now: datetime
    ) -> list[RunReport]:
        """Report the failure once the pod is gone, or as stuck-terminating when it stays."""
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
        if now - deleting.asked_at > timedelta(seconds=self.config.pod_deletion_timeout):
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

    def _stop_orphans(
        self, runs: list[ActiveRun], pods: dict[str, PodStatus], now: datetime
    ) -> None:
        """Pods whose runs are no longer active here: stop those still running. Finished
        failed pods are kept (Retain) until ``_delete_expired_kept`` deletes them; succeeded ones
        were deleted when reported."""
        active = {r.id for r in runs}
        for status in pods.values():
            if status.run_id in active or status.deleting:
                continue
            if not status.finished_at:
                self.backend.delete_pod(status.name, now)  # the pod's own grace period
        for run_id in [r for r in self._deleting if r not in active]:
            del self._deleting[run_id]


def _grace(pod_spec: dict) -> float:
    value = pod_spec.get("terminationGracePeriodSeconds", 30)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 30.0
