"""The executor agent: one tick takes work from the control plane, runs it, and reports back.

The agent talks to the control plane only through the executor API (``executor.api``) and
holds no database credentials. A tick, in order:

1. poll the backend (and, for a backend that reads a real cluster, its nodes). On the first
   tick of the process, every pod found is adopted: its run is held again, so a restarted
   executor carries on with the pods it started (each pod names its run in its labels) and
   reports them from the start. A cluster backend that has not read its cluster once yet
   (``BackendUnavailable``) ends the tick here: an empty view would report every held run
   missing and every node gone;
2. one round with the server (``LeaseJobRuns``): send the nodes and the runs held, take the
   answer. New leases are held; runs to cancel or preempt are marked; held runs the server
   no longer has active are let go (their pods are stopped if they still run). When the
   server cannot be reached, the tick goes on with what is held: pods keep running, their
   outcomes are kept, and nothing new starts;
3. create a pod for every held run that has none yet. A pod name that is taken
   (AlreadyExists, typically a pod kept from an earlier attempt) is a recoverable submit
   error: the lease is returned, and the colliding pod is deleted. A spec the backend cannot
   run fails the run as internal / job-creation-failed. A pod the cluster refuses
   (``PodRejected``: its namespace does not exist there, say) fails the run with the refusal
   as its pod error, categorised like any failure. A backend that cannot reach its
   cluster now (``BackendUnavailable``) leaves the run to be started on a later tick;
4. turn each phase a pod has passed through (pending, running, ended) into a report, oldest
   first, so that even a pod that started and ended between two ticks is reported as
   pending, running and then succeeded or failed; the job's ingress addresses, once the
   backend has them, are reported once (a running report with ``ingress_addresses``). A
   pod the backend's pod checks judge stuck for a cause another attempt may not meet
   (``return_lease``) is deleted and its lease returned once it is gone;
5. categorise every failure (``core.categorizer``). When the category's action is Delete,
   the pod is deleted and the failure is reported only once the pod is gone, so that the
   name is free before a retry can be leased; a pod still there ``podDeletionTimeout`` after
   the deletion was asked for is reported as internal / stuck-terminating instead. With
   Retain the failed pod is kept as evidence, and the report says until when
   (``keptPodRetention`` after the pod ended);
6. send every report not yet acknowledged (``ReportEvents``), in order, with the kept pods
   deleted since the last batch. A run is let go once the server acknowledges its last
   report (applied, already known, or refused with a reason); a succeeded pod is deleted
   only then, so that a crash before the acknowledgement leaves the pod to be found and
   reported again. Unacknowledged reports stay queued across ticks while the server is away;
   The same batch carries the running pods' utilisation, one per run per
   ``utilisationPeriod`` (``executor.utilisation``), and what their logs gained since the
   last batch (``executor.live_logs``: read about once a second per run, just before the
   pods' ends are turned into reports, so that a run's last pieces go before its end);
7. stop the pods of runs no longer held that still run. (The kept pods whose retention has
   passed, ``executor.kept_pods``, are deleted just before step 6, which reports them.)

A run to be preempted or cancelled has its pod stopped (SIGTERM, then SIGKILL after the pod's
``terminationGracePeriodSeconds``) and is reported so once the pod is gone. A held run whose
pod is gone (it vanished, or the backend lost it) is reported failed: internal / pod-missing.
A pod still there ``podDeletionTimeout`` past its deletion deadline is deleted again without
grace, once (a force delete, ``executor.metrics``, on backends that can).

Sessions: the first round opens a session; a newer session of the same executor id (another
process) fences this one: the server refuses its calls, and the agent stops acting on the
cluster at once and for good (``fenced``), leaving the pods to the newer process.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass
from datetime import datetime

from armada.core.categorizer import Categorizer
from armada.core.config import Executor as ExecutorConfig
from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.client import (
    ApiError,
    ApiRefused,
    ExecutorApiClient,
    Fenced,
    SessionLost,
)
from armada.executor.api.messages import (
    LeaseAnswer,
    cluster_nodes_info,
    config_nodes,
)
from armada.executor.backends.base import Backend, BackendUnavailable, PodStatus
from armada.executor.held import HeldRun, Pending
from armada.executor.live_logs import LiveLogs
from armada.executor.metrics import PodDeletions
from armada.executor.pod_steps import Deleting, PodSteps
from armada.executor.report_sending import ReportSending
from armada.executor.utilisation import UtilisationTracker

log = logging.getLogger(__name__)

#: How often the same kind of trouble with the server is logged again.
COMPLAIN_EVERY = 60.0


@dataclass
class TickReport:
    created: int = 0
    reported: int = 0
    returned: int = 0
    reachable: bool = True
    fenced: bool = False
    cluster_readable: bool = True


def default_instance() -> str:
    return f"{socket.gethostname()}/{os.getpid()}"


class ExecutorAgent(ReportSending, PodSteps):
    """Long-lived per executor process; ``tick`` is called by the executor's periodic task."""

    def __init__(
        self,
        config: ExecutorConfig,
        backend: Backend,
        api: ExecutorApiClient,
        *,
        instance: str | None = None,
    ) -> None:
        self.config = config
        self.backend = backend
        self.api = api
        self.instance = instance or default_instance()
        self.categorizer = Categorizer(config.error_categories)
        self.nodes = config_nodes(config)
        self.session = ""
        self.fenced = False
        self.runs: dict[str, HeldRun] = {}
        self.outbox: list[Pending] = []
        self._adopted = False
        self._deleting: dict[str, Deleting] = {}
        self._freed: list[str] = []  # kept pods deleted to free their names, not yet sent
        self._expired: list[str] = []  # kept pods deleted past their retention, not yet sent
        self._complained: dict[str, float] = {}
        self.utilisation = UtilisationTracker(backend, config.utilisation_period)
        self.live_logs = LiveLogs(backend)
        self.deletions = PodDeletions(config.pool, config.pod_deletion_timeout)

    # --- the tick ------------------------------------------------------------------------

    def tick(self, now: datetime) -> TickReport:
        result = TickReport()
        if self.fenced:
            result.fenced = True
            return result
        try:
            pods = {s.name: s for s in self.backend.poll(now)}
            self.deletions.seen(pods, now, self.backend)  # executor.metrics
            self._refresh_nodes()
        except BackendUnavailable as exc:
            # The cluster has not been read yet: nothing is known of its pods or nodes, so
            # no round (held runs are not reported missing, no node is reported gone).
            self._complain("cluster", f"the cluster cannot be read yet: {exc}")
            result.cluster_readable = False
            return result
        if not self._adopted:
            self._adopt(pods)
        answer = self._round()
        if self.fenced:
            result.fenced = True
            return result
        result.reachable = answer is not None
        reports: list[RunReport] = []
        if answer is not None:
            reports += self._take(answer, pods, now)
        for run in list(self.runs.values()):
            if run.ended:
                continue
            status = pods.get(run.pod_name)
            if run.stop_kind:
                reports += self._stop(run, status, now)
            elif run.state == RunState.LEASED and status is None:
                reports += self._start(run, now, result)
            elif run.state == RunState.LEASED and status.run_id != run.id:
                reports.append(self._collision(run, now))
        if result.created:
            pods = {s.name: s for s in self.backend.poll(now)}
        # Before the ends are reported: a pod that ended has its last piece read here.
        self.live_logs.observe(pods, self.runs, now)
        fresh_deletions: list[HeldRun] = []
        for run in list(self.runs.values()):
            status = pods.get(run.pod_name)
            if run.ended or run.stop_kind or (status is not None and status.run_id != run.id):
                continue  # reported, being stopped, or a collision: handled above
            reports += self._follow(run, status, now, fresh_deletions)
        if fresh_deletions:
            # Deletions asked for in this tick may be done already: report those at once.
            after = {s.name: s for s in self.backend.poll(now)}
            self.deletions.seen(after, now, self.backend)
            for run in fresh_deletions:
                reports += self._follow_deletion(
                    run, after.get(run.pod_name), self._deleting[run.id], now
                )
        result.returned = sum(1 for r in reports if r.state == RunState.LEASE_RETURNED)
        self._queue(reports)
        self._delete_expired_kept(pods, now)
        self.utilisation.observe(pods, self.runs, now)
        result.reported = self._flush(now)
        if self.fenced:
            result.fenced = True
            return result
        self._stop_orphans(pods, now)
        return result

    def _refresh_nodes(self) -> None:
        """A backend that reads its cluster's nodes (``kubernetes``) reports them as they are
        now; the others report the configured ones."""
        read = getattr(self.backend, "nodes", None)
        if read is None:
            return
        nodes = read()
        if nodes is None:
            raise BackendUnavailable("the cluster's nodes have not been read yet")
        self.nodes = cluster_nodes_info(nodes, self.config.tracked_node_labels)

    # --- the server ----------------------------------------------------------------------

    def _call(self, what: str, call):
        """Run ``call``; on failure log it (once a minute per kind) and return None. Fenced
        stops the agent for good; a lost session is opened again next tick."""
        try:
            value = call()
        except Fenced as exc:
            self.fenced = True
            log.error(
                "executor %s: fenced, so this process stops acting on the cluster: %s",
                self.config.id,
                exc,
                extra={"executor": self.config.id},
            )
            return None
        except SessionLost as exc:
            self.session = ""
            self._complain("session", f"{what}: {exc}; opening a new session", logging.WARNING)
            return None
        except ApiRefused as exc:
            self._complain("refused", f"{what} refused: {exc}", logging.ERROR)
            return None
        except ApiError as exc:
            self._complain("unavailable", f"{what}: the server is unreachable: {exc}")
            return None
        if self._complained:
            log.info("executor %s: the server answers again", self.config.id)
            self._complained.clear()
        return value

    def _complain(self, kind: str, message: str, level: int = logging.WARNING) -> None:
        clock = time.monotonic()
        if clock - self._complained.get(kind, -COMPLAIN_EVERY) >= COMPLAIN_EVERY:
            self._complained[kind] = clock
            log.log(level, "executor %s: %s", self.config.id, message)

    def _open_session(self) -> str:
        if not self.session:
            response = self.api.open_session(
                pb.OpenSessionRequest(
                    executor_id=self.config.id,
                    pool=self.config.pool,
                    backend=self.config.backend,
                    tracked_node_labels=self.config.tracked_node_labels,
                    instance=self.instance,
                )
            )
            self.session = response.session
            log.info(
                "executor %s: session opened (%s)",
                self.config.id,
                self.instance,
                extra={"executor": self.config.id},
            )
        return self.session

    def _round(self) -> LeaseAnswer | None:
        def lease() -> LeaseAnswer:
            return self.api.lease(
                pb.LeaseRequest(
                    executor_id=self.config.id,
                    session=self._open_session(),
                    pool=self.config.pool,
                    nodes=self.nodes,
                    run_ids=list(self.runs),
                )
            )

        return self._call("a lease round", lease)

    def _take(self, answer: LeaseAnswer, pods: dict[str, PodStatus], now: datetime) -> list:
        """Hold the new leases, mark the stops, let go of what the server no longer has."""
        out: list[RunReport] = []
        for lease in answer.leases:
            if lease.run_id not in self.runs and lease.run_id not in answer.stop:
                self.runs[lease.run_id] = HeldRun.of_lease(lease)
        for kind, ids in (("cancel", answer.cancel), ("preempt", answer.preempt)):
            for run_id in ids:
                run = self.runs.get(run_id)
                if run is not None:
                    run.stop_kind = run.stop_kind or kind
                else:  # never started here: nothing to stop
                    state = RunState.CANCELLED if kind == "cancel" else RunState.PREEMPTED
                    out.append(RunReport(run_id, state, now))
        for run_id in answer.stop:
            run = self.runs.pop(run_id, None)
            self._deleting.pop(run_id, None)
            if run is None:
                continue
            status = pods.get(run.pod_name)
            if status is not None and status.run_id == run_id and not status.finished_at:
                log.info(
                    "run %s is no longer active on the server; stopping its pod %s",
                    run_id,
                    run.pod_name,
                    extra={"run_id": run_id, "executor": self.config.id},
                )
                self._delete(run.pod_name, now, run.grace_seconds)
        return out

    # --- pods ----------------------------------------------------------------------------

    def _adopt(self, pods: dict[str, PodStatus]) -> None:
        """Hold the runs of the pods found at start-up (see step 1)."""
        self._adopted = True
        for status in pods.values():
            if status.run_id and status.run_id not in self.runs:
                self.runs[status.run_id] = HeldRun.of_pod(status)
        if self.runs:
            log.info(
                "executor %s: found %d pods of earlier runs; carrying on with them",
                self.config.id,
                len(self.runs),
                extra={"executor": self.config.id},
            )
