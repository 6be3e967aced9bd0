"""The backtest's reads: the recorded failures streamed from the database, the few runs its
sample describes, and a read run beside another (``Beside``).

The failures come in job and run order, with the sums over each job's later runs computed
by the database (window functions), so that the replay (``core.backtest``) needs nothing
else per row and memory stays flat however many rows there are. On PostgreSQL they stream
through a server-side cursor in a read-only transaction of their own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from django.db import connection, connections, transaction

from armada.core.backtest import RecordedFailure
from armada.models import Job, Run
from armada.services.bulk import sql_in

CHUNK = 5000
WORK_MEM = "128MB"  # PostgreSQL: for the window's sort, per backtest (server side)


class Beside:
    """``function(**kwargs)`` run beside the block, in a thread with its own database
    connection (closed after), when the caller is in no transaction: the block's query and
    this one then run side by side. Inside a transaction (a test's, say) another connection
    would not see the same rows, so it runs after the block instead. ``result`` holds what
    it returned; an error it raised is raised when the block ends."""

    def __init__(self, function: Callable[..., Any], **kwargs: Any) -> None:
        self.function, self.kwargs = function, kwargs
        self.result: Any = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            self.result = self.function(**self.kwargs)
        except BaseException as exc:  # handed to the caller's thread
            self._error = exc
        finally:
            connections.close_all()

    def __enter__(self) -> Beside:
        if not connection.in_atomic_block:
            self._thread = threading.Thread(target=self._run, name="backtest-yield", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if self._thread is None:
            if kind is None:
                self.result = self.function(**self.kwargs)
            return
        self._thread.join()
        if kind is None and self._error is not None:
            raise self._error


def _dialect() -> dict[str, str]:
    """The SQL pieces that differ between PostgreSQL and SQLite."""
    if connection.vendor == "postgresql":
        return {
            "num": "COALESCE(({col}->>'{key}')::double precision, 0)",
            "int": "({col}->>'{key}')::bigint",
            "text": "({col}->>'{key}')",
            "seconds": "EXTRACT(EPOCH FROM (COALESCE(r.finished_at, %s) - r.leased_at))"
            "::double precision",
        }
    return {
        "num": "COALESCE(json_extract({col}, '$.\"{key}\"'), 0)",
        "int": "json_extract({col}, '$.\"{key}\"')",
        "text": "json_extract({col}, '$.\"{key}\"')",
        "seconds": "(julianday(COALESCE(r.finished_at, %s)) - julianday(r.leased_at)) * 86400.0",
    }


def _query(*, queues: list[str] | None, job_sets: list[str]) -> tuple[str, list[Any]]:
    """The failures query and its filters' values (see :func:`recorded_failures`).

    One pass over the runs that ended after ``since`` (or have not ended) of the queues and
    job sets asked for, each narrowed to the scalars the replay needs, in job and run order,
    with the window sums of the runs after it; the decided genuine failures in range are
    kept. A later run of a failure in range always ended after ``since``, so nothing the sums
    need is left out. Ids sort bytewise (``C``), which is their creation order and much
    cheaper than a language's collation; the window's order is the output's, so no second
    sort is needed.
    """
    d = _dialect()

    def num(col: str, key: str) -> str:
        return d["num"].format(col=col, key=key)

    def text(col: str, key: str) -> str:
        return d["text"].format(col=col, key=key)

    run, job = Run._meta.db_table, Job._meta.db_table
    where = ["(r.finished_at IS NULL OR r.finished_at >= %s)"]
    params: list[Any] = []
    if queues is not None:
        clause, values = sql_in("j.queue", queues or [""])
        where.append(clause)
        params += values
    if job_sets:
        clause, values = sql_in("j.job_set", job_sets)
        where.append(clause)
        params += values
    postgres = connection.vendor == "postgresql"
    collate = ' COLLATE "C"' if postgres else ""
    # The runs are narrowed to scalars before they are sorted (a sort of whole rows, their
    # JSON included, is twice as wide): an OFFSET keeps the planner from merging the two.
    fence = "OFFSET 0" if postgres else "LIMIT -1 OFFSET 0"
    later = "(PARTITION BY job_id ORDER BY id ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)"
    used = d["int"].format(col="r.decision", key="retriesUsed")
    sql = f"""
SELECT id, job_id, queue, category, subcategory, lease_expired, COALESCE(used, 0), label,
  rule, gang_cardinality, fail_fast, used IS NULL AND label = 'not_retried', cpu, memory, gpu,
  seconds, memory_kind, later_runs, later_cpu, later_memory, later_gpu
FROM (
  SELECT id, job_id, queue, category, subcategory, lease_expired, used, label, rule,
    gang_cardinality, fail_fast, cpu, memory, gpu, seconds, memory_kind, wanted,
    COUNT(*) OVER later AS later_runs,
    COALESCE(SUM(cpu * seconds) OVER later, 0) AS later_cpu,
    COALESCE(SUM(memory * seconds) OVER later, 0) AS later_memory,
    COALESCE(SUM(gpu * seconds) OVER later, 0) AS later_gpu
  FROM (
    SELECT r.id{collate} AS id, r.job_id{collate} AS job_id, j.queue,
      r.failure_category AS category, r.failure_subcategory AS subcategory,
      r.state = 'lease_expired' AS lease_expired, {used} AS used,
      COALESCE({text("r.decision", "decision")}, 'not_retried') AS label,
      {d["int"].format(col="r.decision", key="ruleIndex")} AS rule,
      j.gang_cardinality, j.fail_fast, {num("r.requests", "cpu")} AS cpu,
      {num("r.requests", "memory")} AS memory, {num("r.requests", "nvidia.com/gpu")} AS gpu,
      {d["seconds"]} AS seconds,
      COALESCE({text("j.mutations", "memoryKind")}, '') AS memory_kind,
      (r.state IN ('failed', 'lease_expired') AND r.decided_at IS NOT NULL
        AND r.finished_at >= %s AND r.finished_at < %s) AS wanted
    FROM {run} r JOIN {job} j ON j.id = r.job_id
    WHERE {" AND ".join(where)}
    {fence}
  ) runs
  WINDOW later AS {later}
) windowed
WHERE wanted
ORDER BY job_id, id
"""
    return sql, params


def recorded_failures(
    *,
    since: datetime,
    until: datetime,
    queues: list[str] | None,
    job_sets: Sequence[str] = (),
    now: datetime,
) -> Iterator[RecordedFailure]:
    """Every decided genuine failure finished in ``[since, until)`` of ``queues`` (None:
    all) and ``job_sets`` (empty: all), by job and run, streamed in chunks."""
    sql, filters = _query(queues=queues, job_sets=list(job_sets))
    stamp = connection.ops.adapt_datetimefield_value
    # In the order of the query's text: the "now" that ends a run still going (a later run
    # of a job whose failure is in range), the range of the failures kept, the start of
    # the runs read, the filters.
    start, end = stamp(since), stamp(until)
    params = [stamp(now), start, end, start, *filters]
    if connection.vendor != "postgresql":
        # SQLite reads lazily as it is; a transaction here would be an IMMEDIATE one, which
        # takes the write lock (settings.py) and would hold the scheduler up meanwhile.
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            while rows := cursor.fetchmany(CHUNK):
                for row in rows:
                    yield RecordedFailure(*row)
        return
    # In a transaction of its own, the server-side cursor streams (outside one, it would be
    # a WITH HOLD cursor: the whole result made before the first row). Read-only where it is
    # the outermost transaction; the window's sort gets more memory than a session's default.
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        with connection.cursor() as setup:
            if outermost:
                setup.execute("SET TRANSACTION READ ONLY")
            setup.execute(f"SET LOCAL work_mem = '{WORK_MEM}'")
            # Compiling this query costs seconds and gains less than that.
            setup.execute("SET LOCAL jit = off")
        # psycopg's own server-side cursor, in binary: numbers arrive without being parsed
        # from text (a second or so per million rows); its errors are wrapped as Django's.
        with connection.wrap_database_errors:
            cursor = connection.connection.cursor(name=f"backtest_{id(params)}", binary=True)
            with cursor:
                cursor.execute(sql, params)
                while rows := cursor.fetchmany(CHUNK):
                    for row in rows:
                        yield RecordedFailure(*row)


def describe_runs(run_ids: Sequence[str]) -> dict[str, tuple[str, int | None, str]]:
    """Run id -> (job set, exit code, reason) of a few runs (the sample's)."""
    rows = Run.objects.filter(id__in=list(run_ids)).values_list(
        "id", "job__job_set", "exit_code", "reason"
    )
    return {run_id: (job_set, code, reason) for run_id, job_set, code, reason in rows}
