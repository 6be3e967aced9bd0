"""The backtest's reads: the recorded failures of a range, grouped by the database, a sample
of them one by one, the few runs the sample describes, and a read run beside another
(``Beside``).

The replay reads a handful of fields per failure (``core.backtest.VerdictKey`` and what the
costs need), so the database does the counting: first the distinct keys of the range are
read (:func:`verdict_keys`), the pure core decides each once, and those verdicts go back
into one query (:func:`recorded_groups`) that works out, per job, the first failure the
draft would not retry (whether each failure is *reached*, and what the job's later runs
cost after it) and sums the failures into groups. Hash joins and hash aggregates do it:
nothing is sorted by job, and a million failures come back as a few thousand rows.

On PostgreSQL the reads share one read-only, repeatable-read transaction (one snapshot)
where they are the outermost transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import connection, connections, transaction

from armada.core.backtest import RecordedFailure, RecordedGroup, VerdictKey
from armada.models import Job, Run
from armada.services.bulk import sql_in

WORK_MEM = "256MB"  # PostgreSQL: for the hash joins and aggregates, per backtest


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
            "id": ' COLLATE "C"',  # ids sort bytewise: their creation order, and cheaper
            "positive": "GREATEST({x}, 0)",
        }
    return {
        "num": "COALESCE(json_extract({col}, '$.\"{key}\"'), 0)",
        "int": "json_extract({col}, '$.\"{key}\"')",
        "text": "json_extract({col}, '$.\"{key}\"')",
        "seconds": "(julianday(COALESCE(r.finished_at, %s)) - julianday(r.leased_at)) * 86400.0",
        "id": "",
        "positive": "MAX({x}, 0)",
    }


def _decided(d: dict[str, str]) -> tuple[str, str]:
    """The retries used and the label recorded, as SQL over run ``r``."""
    used = d["int"].format(col="r.decision", key="retriesUsed")
    label = f"COALESCE({d['text'].format(col='r.decision', key='decision')}, 'not_retried')"
    return used, label


# The decided genuine failures finished in [since, until): ``r.`` is the run.
IN_RANGE = """r.state IN ('failed', 'lease_expired') AND r.decided_at IS NOT NULL
      AND r.finished_at >= %s AND r.finished_at < %s"""


def _flag(condition: str) -> str:
    return f"CASE WHEN {condition} THEN '1' ELSE '0' END"


def _key_sql(gang: str, fail_fast: str) -> str:
    """A failure's :class:`VerdictKey` as one text (see :func:`key_text`), in SQL over the
    columns of :func:`_failures`' inner query."""
    parts = [
        "category",
        "subcategory",
        "CAST(COALESCE(used, 0) AS text)",
        _flag(gang),
        _flag(fail_fast),
        _flag("lease_expired"),
        _flag("used IS NULL AND label = 'not_retried'"),
    ]
    return "(" + " || '|' || ".join(parts) + ")"


def key_text(key: VerdictKey) -> str:
    """The text :func:`_key_sql` makes of a failure with ``key``. Comparing one text, the
    database decides "does the draft retry this failure" with a hashed list lookup, and
    needs no join (whose size it could not estimate) with the verdicts."""
    flags = (key.gang, key.fail_fast, key.lease_expired, key.job_ended)
    return "|".join(
        [key.category, key.subcategory, str(key.retries_used)]
        + ["1" if flag else "0" for flag in flags]
    )


def _failures(
    *,
    since: datetime,
    until: datetime,
    queues: list[str] | None,
    job_sets: Sequence[str],
    now: datetime,
    verdicts: Mapping[VerdictKey, bool],
    every_run: bool = False,
) -> tuple[str, list[Any]]:
    """The failures in range of ``queues`` (None: all) and ``job_sets`` (empty: all), each
    narrowed to the scalars the replay reads (the :class:`VerdictKey`'s among them), with
    ``draft_retry``: whether the draft retries it, by ``verdicts``; ``seconds`` is how long
    it held its requests (``raw_seconds`` the same, unclamped: NULL if never leased).

    With ``every_run``, every run of those queues and job sets that ended since ``since``
    or is going on, with ``wanted`` true for the failures in range (a later run of a
    failure in range is among them: it ended after that failure). Returns the SELECT (its
    rows unordered) and its parameters."""
    d = _dialect()
    retried = [key_text(key) for key, retry in verdicts.items() if retry]
    key = _key_sql("gang_cardinality >= 2", "fail_fast")
    draft_retry = (
        f"wanted AND {key} IN ({', '.join(['%s'] * len(retried))})" if retried else "FALSE"
    )
    used, label = _decided(d)
    num = d["num"].format
    stamp = connection.ops.adapt_datetimefield_value
    start, end = stamp(since), stamp(until)
    # In the order of the text: the retried keys, "now" (ends a run still going), the range.
    params: list[Any] = [*retried, stamp(now)]
    if every_run:
        wanted = f"({IN_RANGE})"
        where = ["(r.finished_at IS NULL OR r.finished_at >= %s)"]
        params += [start, end, start]
    else:
        wanted, where = "TRUE", [IN_RANGE]
        params += [start, end]
    for column, names in (("j.queue", queues), ("j.job_set", list(job_sets) or None)):
        if names is not None:
            clause, values = sql_in(column, names or [""])
            where.append(clause)
            params += values
    # The runs are narrowed to scalars in a subquery of their own (a sort or hash of whole
    # rows, their JSON included, is twice as wide); an OFFSET keeps the planner from
    # merging it into the query around it.
    fence = ""
    if every_run:
        fence = "OFFSET 0" if connection.vendor == "postgresql" else "LIMIT -1 OFFSET 0"
    sql = f"""
    SELECT id, job_id, queue, category, subcategory, COALESCE(used, 0) AS used, label, rule,
      gang_cardinality, gang_cardinality >= 2 AS gang, fail_fast, lease_expired,
      used IS NULL AND label = 'not_retried' AS job_ended, cpu, memory, gpu,
      COALESCE({d["positive"].format(x="seconds")}, 0) AS seconds, seconds AS raw_seconds,
      memory_kind, {draft_retry} AS draft_retry, wanted
    FROM (
      SELECT r.id{d["id"]} AS id, r.job_id{d["id"]} AS job_id, j.queue,
        r.failure_category AS category, r.failure_subcategory AS subcategory,
        {used} AS used, {label} AS label, {d["int"].format(col="r.decision", key="ruleIndex")}
        AS rule, j.gang_cardinality, j.fail_fast, r.state = 'lease_expired' AS lease_expired,
        {num(col="r.requests", key="cpu")} AS cpu, {num(col="r.requests", key="memory")} AS memory,
        {num(col="r.requests", key="nvidia.com/gpu")} AS gpu, {d["seconds"]} AS seconds,
        COALESCE({d["text"].format(col="j.mutations", key="memoryKind")}, '') AS memory_kind,
        {wanted} AS wanted
      FROM {Run._meta.db_table} r JOIN {Job._meta.db_table} j ON j.id = r.job_id
      WHERE {" AND ".join(where)}
      {fence}
    ) narrowed"""
    return sql, params


KEY_COLUMNS = ("category", "subcategory", "used", "gang", "fail_fast", "lease_expired", "job_ended")


@contextmanager
def snapshot() -> Iterator[None]:
    """One transaction for the backtest's reads: on PostgreSQL, where it is the outermost
    one, read-only and repeatable-read (the keys, the groups and the sample see the same
    rows), with memory for the hash joins and no JIT (compiling costs more than it saves)."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as setup:
                if outermost:
                    setup.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                setup.execute(f"SET LOCAL work_mem = '{WORK_MEM}'")
                setup.execute("SET LOCAL jit = off")
                setup.execute("SET LOCAL parallel_tuple_cost = 0.001")
        yield


def verdict_keys(*, since: datetime, until: datetime) -> list[VerdictKey]:
    """Every :class:`VerdictKey` the failures in range may have: the distinct keys of the
    failed runs (of all queues: a superset is harmless and the runs alone are cheaper to
    read), each with and without a gang and failFast (those are the job's)."""
    d = _dialect()
    used, label = _decided(d)
    stamp = connection.ops.adapt_datetimefield_value
    sql = f"""
    SELECT DISTINCT r.failure_category, r.failure_subcategory, COALESCE({used}, 0),
      r.state = 'lease_expired', {used} IS NULL AND {label} = 'not_retried'
    FROM {Run._meta.db_table} r WHERE {IN_RANGE}"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [stamp(since), stamp(until)])
        rows = cursor.fetchall()
    return [
        VerdictKey(category, subcategory, int(used_), gang, fail_fast, bool(lease), bool(ended))
        for category, subcategory, used_, lease, ended in rows
        for gang in (False, True)
        for fail_fast in (False, True)
    ]


def recorded_groups(
    *,
    since: datetime,
    until: datetime,
    queues: list[str] | None,
    job_sets: Sequence[str] = (),
    now: datetime,
    verdicts: Mapping[VerdictKey, bool],
) -> list[RecordedGroup]:
    """The failures in range, grouped (``core.backtest.RecordedGroup``), given whether the
    draft retries each key (``verdicts`` must hold every key of :func:`verdict_keys`).

    Per job, the first failure (by run id, which is creation order) the draft would not
    retry is its *over* failure: a failure is reached when it is that one or comes before
    it (or the job has none). The job's runs after an over failure that was recorded as
    retried are what the draft saves; a later run of a failure in range ended after
    ``since``, so the runs read for it are those that ended since then or are going on.
    """
    if not verdicts:
        return []
    failures, params = _failures(
        since=since,
        until=until,
        queues=queues,
        job_sets=job_sets,
        now=now,
        verdicts=verdicts,
        every_run=True,
    )
    key_columns = ", ".join(KEY_COLUMNS)
    # Per job, in run order: is this failure reached (no earlier failure in range is one
    # the draft stops at), and what do the job's runs after it cost (the whole job's sums
    # less the sums up to it: running sums, where a frame "after it" would be summed
    # afresh for every row). One sort serves both windows.
    sql = f"""
SELECT queue, {key_columns}, label, rule, reached, extra_memory, extra_kind, COUNT(*),
  SUM(seconds), SUM(own_cpu), SUM(own_gpu), SUM(later_runs), SUM(later_cpu), SUM(later_memory),
  SUM(later_gpu)
FROM (
  SELECT queue, {key_columns}, label, rule, wanted, extra_memory, extra_kind, seconds,
    own_cpu, own_gpu, SUM(stops) OVER upto = stops AS reached,
    COUNT(*) OVER whole - COUNT(*) OVER upto AS later_runs,
    COALESCE(SUM(cpu_s) OVER whole, 0) - COALESCE(SUM(cpu_s) OVER upto, 0) AS later_cpu,
    COALESCE(SUM(memory_s) OVER whole, 0) - COALESCE(SUM(memory_s) OVER upto, 0)
      AS later_memory,
    COALESCE(SUM(gpu_s) OVER whole, 0) - COALESCE(SUM(gpu_s) OVER upto, 0) AS later_gpu
  FROM (
    SELECT job_id, id, queue, {key_columns}, label, rule, wanted, seconds,
      CASE WHEN wanted AND NOT draft_retry THEN 1 ELSE 0 END AS stops,
      CASE WHEN draft_retry AND label <> 'retry' THEN memory ELSE 0 END AS extra_memory,
      CASE WHEN draft_retry AND label <> 'retry' THEN memory_kind ELSE '' END AS extra_kind,
      cpu * seconds AS own_cpu, gpu * seconds AS own_gpu, cpu * raw_seconds AS cpu_s,
      memory * raw_seconds AS memory_s, gpu * raw_seconds AS gpu_s
    FROM ({failures}) narrowed_runs
  ) runs
  WINDOW whole AS (PARTITION BY job_id),
    upto AS (PARTITION BY job_id ORDER BY id ROWS UNBOUNDED PRECEDING)
) windowed
WHERE wanted
GROUP BY queue, {key_columns}, label, rule, reached, extra_memory, extra_kind
"""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        RecordedGroup(
            queue=row[0],
            key=VerdictKey(row[1], row[2], int(row[3]), *(bool(x) for x in row[4:8])),
            recorded=row[8],
            recorded_rule=None if row[9] is None else int(row[9]),
            reached=bool(row[10]),
            memory=float(row[11] or 0),
            memory_kind=row[12] or "",
            count=int(row[13]),
            seconds=float(row[14] or 0),
            cpu_seconds=float(row[15] or 0),
            gpu_seconds=float(row[16] or 0),
            later_runs=int(row[17]),
            later_cpu=float(row[18]),
            later_memory=float(row[19]),
            later_gpu=float(row[20]),
        )
        for row in rows
    ]


def sample_failures(
    *,
    since: datetime,
    until: datetime,
    queues: list[str] | None,
    job_sets: Sequence[str] = (),
    now: datetime,
    verdicts: Mapping[VerdictKey, bool],
    flipped: bool,
    limit: int,
) -> list[RecordedFailure]:
    """At most ``limit`` failures in range whose outcome the draft changes (``flipped``)
    or keeps, one by one, for the backtest's sample, by job and run. They are the first the
    database finds, not the first by job: the read stops as soon as it has enough."""
    if not verdicts or limit <= 0:
        return []
    failures, params = _failures(
        since=since, until=until, queues=queues, job_sets=job_sets, now=now, verdicts=verdicts
    )
    sql = f"""
SELECT b.id, b.job_id, b.queue, b.category, b.subcategory, b.lease_expired, b.used, b.label,
  b.rule, b.gang_cardinality, b.fail_fast, b.job_ended, b.cpu, b.memory, b.gpu, b.seconds,
  b.memory_kind
FROM ({failures}) b
WHERE (b.draft_retry <> (b.label = 'retry')) = CAST(%s AS boolean)
LIMIT %s
"""
    params += [flipped, limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    rows.sort(key=lambda row: (row[1], row[0]))
    return [
        RecordedFailure(
            run_id=row[0],
            job_id=row[1],
            queue=row[2],
            category=row[3],
            subcategory=row[4],
            lease_expired=bool(row[5]),
            retries_used=int(row[6]),
            recorded=row[7],
            recorded_rule=None if row[8] is None else int(row[8]),
            gang_cardinality=int(row[9]),
            fail_fast=bool(row[10]),
            job_ended=bool(row[11]),
            cpu=float(row[12]),
            memory=float(row[13]),
            gpu=float(row[14]),
            seconds=float(row[15]),
            memory_kind=row[16] or "",
        )
        for row in rows
    ]


def describe_runs(run_ids: Sequence[str]) -> dict[str, tuple[str, int | None, str]]:
    """Run id -> (job set, exit code, reason) of a few runs (the sample's)."""
    rows = Run.objects.filter(id__in=list(run_ids)).values_list(
        "id", "job__job_set", "exit_code", "reason"
    )
    return {run_id: (job_set, code, reason) for run_id, job_set, code, reason in rows}
