"""Step 6 of the executor agent's tick (``executor.agent``): sending the reports not yet
acknowledged (``ReportEvents``), in order and in batches, with the kept pods deleted, the
utilisation samples and the live log pieces, and acting on each answer (a refused report is
logged; a run whose end is acknowledged is let go, and its succeeded pod deleted).
Unacknowledged reports stay queued across ticks while the server is away."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from armada.core.config import Executor as ExecutorConfig
from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.messages import log_chunk_message, run_event, run_utilisation_message
from armada.executor.held import TERMINAL_REPORTS, HeldRun, Pending
from armada.executor.live_logs import LiveLogs
from armada.executor.utilisation import UtilisationTracker

log = logging.getLogger("armada.executor.agent")

#: Reports per ReportEvents call, and about how many bytes (logs are the big part).
REPORT_BATCH = 1000
REPORT_BATCH_BYTES = 16 * 1024 * 1024


class ReportSending:
    """The report-sending half of ``ExecutorAgent``, which gives the attributes below."""

    config: ExecutorConfig
    api: Any
    session: str  # "" while none is open
    runs: dict[str, HeldRun]
    outbox: list[Pending]
    utilisation: UtilisationTracker
    live_logs: LiveLogs
    _freed: list[str]
    _expired: list[str]
    _call: Callable[..., Any]
    _delete: Callable[[str, datetime], Any]

    def _queue(self, reports: list[RunReport]) -> None:
        for report in reports:
            run = self.runs.get(report.run_id)
            pod_name = run.pod_name if run is not None else ""
            if run is not None:
                if report.state in TERMINAL_REPORTS:
                    run.ended = True
                run.state = report.state
            self.outbox.append(Pending(report, pod_name))

    def _flush(self, now: datetime) -> int:
        """Send the queued reports in batches; returns how many the server applied."""
        applied = 0
        usage = self.utilisation.take()
        pieces = self.live_logs.take()
        while self.session and (self.outbox or self._freed or self._expired or usage or pieces):
            batch, size = [], sum(len(p.data) for p in pieces)
            for pending in self.outbox[:REPORT_BATCH]:
                size += len(pending.report.log or "") + 512
                if batch and size > REPORT_BATCH_BYTES:
                    break
                batch.append(pending)
            request = pb.ReportRequest(
                executor_id=self.config.id,
                session=self.session,
                events=[run_event(p.report) for p in batch],
                kept_pods_deleted=sorted({*self._freed, *self._expired}),
                kept_pods_expired=len(self._expired),
                utilisation=[run_utilisation_message(u) for u in usage],
                utilisation_period_seconds=self.utilisation.period if usage else 0.0,
                log_chunks=[log_chunk_message(p) for p in pieces],
            )
            results = self._call("a report", lambda request=request: self.api.report(request))
            if results is None:
                return applied
            self._freed, self._expired = [], []
            self.utilisation.sent(usage)
            usage = []
            self.live_logs.sent(pieces)
            pieces = self.live_logs.take()  # those past one call's bytes, if any
            del self.outbox[: len(batch)]
            for pending, outcome in zip(batch, results, strict=True):
                applied += outcome.outcome == pb.APPLIED
                self._acknowledged(pending, outcome, now)
        return applied

    def _acknowledged(self, pending: Pending, outcome: pb.EventResult, now: datetime) -> None:
        report = pending.report
        if outcome.outcome == pb.REFUSED:
            log.warning(
                "report %s of run %s refused: %s",
                report.state,
                report.run_id,
                outcome.reason,
                extra={"run_id": report.run_id, "executor": self.config.id},
            )
        if report.state not in TERMINAL_REPORTS:
            return
        run = self.runs.get(report.run_id)
        if run is not None and run.ended:
            del self.runs[report.run_id]
        if report.state == RunState.SUCCEEDED and pending.pod_name:
            self._delete(pending.pod_name, now)
