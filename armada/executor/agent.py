"""The executor agent: one tick registers or heart-beats, starts leased runs, reports progress.

A tick, in order:
1. register the executor and its nodes (first tick of the process) or send a heartbeat;
2. create a pod for every run leased to this executor that has none yet;
3. poll the backend and turn each phase a pod has passed through (pending, running, ended)
   into a report, oldest first, so that even a pod that started and ended between two ticks
   is reported as pending, running and then succeeded or failed;
4. apply all reports in one transaction, then delete the pods of runs that ended.
A run that is pending or running in the database but has no pod on the backend (the pod
vanished, or the backend lost it on a restart) is reported failed: internal / pod-missing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from armada.core.config import Executor as ExecutorConfig
from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.executor.backends import make_backend
from armada.executor.backends.base import Backend, PodExists, PodRequest, PodStatus
from armada.services.executors import (
    ActiveRun,
    executor_heartbeat,
    executor_register,
    runs_active_for_executor,
)
from armada.services.runs import runs_apply_reports

log = logging.getLogger(__name__)

INTERNAL = "internal"
POD_MISSING = "pod-missing"


@dataclass
class TickReport:
    created: int = 0
    reported: int = 0


def reports_for(run: ActiveRun, status: PodStatus | None, now: datetime) -> list[RunReport]:
    """The reports that bring ``run`` up to ``status``, in the order the phases happened."""
    if status is None:
        if run.state == RunState.LEASED:
            return []
        return [
            RunReport(
                run.id,
                RunState.FAILED,
                now,
                reason="PodMissing",
                message=f"pod {run.pod_name} is no longer on the cluster",
                failure_category=INTERNAL,
                failure_subcategory=POD_MISSING,
            )
        ]
    out: list[RunReport] = []
    order = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
    reached = order.index(run.state) if run.state in order else len(order)
    if status.pending_at and reached < 1:
        out.append(RunReport(run.id, RunState.PENDING, status.pending_at))
    if status.running_at and reached < 2:
        out.append(RunReport(run.id, RunState.RUNNING, status.running_at))
    if status.finished_at:
        if status.succeeded:
            out.append(
                RunReport(
                    run.id,
                    RunState.SUCCEEDED,
                    status.finished_at,
                    exit_code=0,
                    exit_codes=status.exit_codes,
                )
            )
        else:
            out.append(
                RunReport(
                    run.id,
                    RunState.FAILED,
                    status.finished_at,
                    exit_code=status.exit_code,
                    exit_codes=status.exit_codes,
                    reason=status.reason,
                    message=status.message,
                )
            )
    return out


class ExecutorAgent:
    """Long-lived per worker process; ``tick`` is called by the executor's periodic task."""

    def __init__(self, config: ExecutorConfig, backend: Backend | None = None) -> None:
        self.config = config
        self.backend = backend if backend is not None else make_backend(config)
        self.registered = False

    def tick(self, now: datetime) -> TickReport:
        result = TickReport()
        if not self.registered or not executor_heartbeat(executor_id=self.config.id, now=now):
            executor_register(config=self.config, now=now)
            self.registered = True
        runs = runs_active_for_executor(executor_id=self.config.id)
        pods = {s.run_id: s for s in self.backend.poll(now)}
        for run in runs:
            if run.state == RunState.LEASED and run.id not in pods:
                try:
                    self.backend.create_pod(
                        PodRequest(
                            run.pod_name,
                            run.id,
                            run.job_id,
                            run.node,
                            run.pod_spec,
                            run.annotations,
                        ),
                        now,
                    )
                    result.created += 1
                except PodExists:
                    log.warning("pod %s already exists for run %s", run.pod_name, run.id)
        if result.created:
            pods = {s.run_id: s for s in self.backend.poll(now)}
        reports: list[RunReport] = []
        ended: list[str] = []
        for run in runs:
            status = pods.get(run.id)
            run_reports = reports_for(run, status, now)
            reports.extend(run_reports)
            if status is not None and status.finished_at:
                ended.append(status.name)
        result.reported = runs_apply_reports(executor_id=self.config.id, reports=reports, now=now)
        for name in ended:
            self.backend.delete_pod(name)
        # Pods whose runs are no longer active here (cancelled, expired) are cleaned up too.
        active = {r.id for r in runs}
        for run_id, status in pods.items():
            if run_id not in active:
                self.backend.delete_pod(status.name)
        return result
