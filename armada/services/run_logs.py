"""Storing runs' logs: the pieces executors send while runs run, and the tail a run ends with.

What is kept, and why appending is idempotent, is ``core.runlog``'s: per run the last
``ARMADA_RUN_LOG_KIB`` KiB (``settings.RUN_LOG_LIMIT_BYTES``) after a marker line counting
the bytes dropped, per container the offset the pieces reached, and whether the run's final
tail has come. Outcomes of a piece (one each, in the order given):

- **applied**: it brought bytes the log did not have;
- **duplicate**: it brought none (sent again after a lost answer, or the run's final log is
  stored already): nothing changed;
- **refused**, with the reason: the run is not this executor's. Nothing changed.

Locks: the run's log row (``RunLog``), ``FOR NO KEY UPDATE``, in run id order, and nothing
else: never the run or its job, so that the pieces of a running job do not wait on its
scheduling. The report transaction that ends a run (``services.run_reports``) takes its runs
and jobs first, then their log rows (``run_logs_finish``), then the event-log lock: the
order of ``services.locking``. An append made at the same time as the run's end either
commits first (and the final tail replaces it) or waits for the end and finds the log
final. Readers take no lock: a row is read in one committed state, each piece whole or not
at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from django.conf import settings
from django.db import transaction

from armada.core.runlog import LogPiece, StoredLog, append, finish
from armada.models import Run, RunLog
from armada.services.locking import lock
from armada.services.report_outcomes import Outcome, ReportOutcome

_FIELDS = ("text", "truncated", "updated_at", "dropped", "offsets", "container", "final")


def run_log_limit() -> int:
    """The most bytes of a run's log kept (``ARMADA_RUN_LOG_KIB``)."""
    return settings.RUN_LOG_LIMIT_BYTES


def stored_log(row: RunLog | None) -> StoredLog:
    if row is None:
        return StoredLog()
    return StoredLog.of_text(
        row.text,
        dropped=row.dropped,
        offsets=row.offsets or {},
        container=row.container,
        final=row.final,
    )


def _row(run_id: str, log: StoredLog, now: datetime) -> RunLog:
    return RunLog(
        run_id=run_id,
        text=log.text,
        truncated=log.truncated,
        updated_at=now,
        dropped=log.dropped,
        offsets=dict(log.offsets),
        container=log.container,
        final=log.final,
    )


def _locked_rows(run_ids: Sequence[str]) -> dict[str, RunLog]:
    return {row.run_id: row for row in lock(RunLog.objects.filter(run_id__any=list(run_ids)))}


def run_logs_append(
    *, executor_id: str, pieces: Sequence[LogPiece], now: datetime
) -> list[ReportOutcome]:
    """Append ``pieces`` of ``executor_id``'s runs in one transaction (see the module)."""
    if not pieces:
        return []
    limit = run_log_limit()
    wanted = sorted({p.run_id for p in pieces})
    with transaction.atomic():
        own = sorted(
            Run.objects.filter(id__any=wanted, executor=executor_id).values_list("id", flat=True)
        )
        if own:
            RunLog.objects.bulk_create(
                [RunLog(run_id=run_id, updated_at=now) for run_id in own],
                ignore_conflicts=True,
            )
        rows = _locked_rows(own)
        logs = {run_id: stored_log(row) for run_id, row in rows.items()}
        outcomes: list[ReportOutcome] = []
        changed: set[str] = set()
        for piece in pieces:
            if piece.run_id not in logs:
                outcomes.append(
                    ReportOutcome(
                        Outcome.REFUSED,
                        f"run {piece.run_id} is not a run of executor {executor_id}",
                    )
                )
                continue
            result = append(logs[piece.run_id], piece, limit)
            if not result.applied:
                outcomes.append(ReportOutcome(Outcome.DUPLICATE, result.reason))
                continue
            logs[piece.run_id] = result.log
            changed.add(piece.run_id)
            outcomes.append(ReportOutcome(Outcome.APPLIED))
        if changed:
            RunLog.objects.bulk_update(
                [_row(run_id, logs[run_id], now) for run_id in sorted(changed)], list(_FIELDS)
            )
    return outcomes


def run_logs_finish(*, logs: Mapping[str, str], now: datetime) -> None:
    """Store the final tails ``logs`` (run id -> text) of runs that ended in the caller's
    transaction, whose runs it holds locked: each replaces what the pieces brought, and the
    log is final (``core.runlog.finish``). An empty tail keeps what was streamed; a run
    with neither gets no row."""
    if not logs:
        return
    limit = run_log_limit()
    rows = _locked_rows(sorted(logs))
    out = []
    for run_id in sorted(logs):
        row = rows.get(run_id)
        if row is None and not logs[run_id]:
            continue  # an empty log is not worth a row
        out.append(_row(run_id, finish(stored_log(row), logs[run_id], limit), now))
    RunLog.objects.bulk_create(
        out,
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["run"],
        update_fields=list(_FIELDS),
    )
