"""The backtest's reads: the recorded failures of a range, grouped by the database, a sample
of them one by one, and the few runs the sample describes.

The replay reads a handful of fields per failure (``core.backtest.VerdictKey`` and what the
costs need), so the database does the counting: first the distinct keys of the range are
read (:func:`verdict_keys`), the pure core decides each once, and those verdicts go back
into one query (:func:`recorded_groups`) that works out, per job, the first failure the
draft would not retry (whether each failure is *reached*, and what the job's later runs
cost after it) and sums the failures into groups. Hash joins and hash aggregates do it:
nothing is sorted by job, and a million failures come back as a few thousand rows.

On PostgreSQL the reads share one read-only, repeatable-read transaction (one snapshot:
``services.side_reads``) where they are the outermost transaction, and the grouping runs as
several queries at once, each over a share of the jobs, all in that snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from armada.core.backtest import RecordedFailure, RecordedGroup, VerdictKey
from armada.models import Job, Run
from armada.services.bulk import sql_in
from armada.services.side_reads import in_shares


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
            "sep": "chr(31)",
            "after_sep": "substr({x}, strpos({x}, chr(31)) + 1)",
        }
    return {
        "num": "COALESCE(json_extract({col}, '$.\"{key}\"'), 0)",
        "int": "json_extract({col}, '$.\"{key}\"')",
        "text": "json_extract({col}, '$.\"{key}\"')",
        "seconds": "(julianday(COALESCE(r.finished_at, %s)) - julianday(r.leased_at)) * 86400.0",
        "id": "",
        "positive": "MAX({x}, 0)",
        "sep": "char(31)",
        "after_sep": "substr({x}, instr({x}, char(31)) + 1)",
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
    share: tuple[int, int] = (0, 1),
) -> tuple[str, list[Any]]:
    """The failures in range of ``queues`` (None: all) and ``job_sets`` (empty: all), each
    narrowed to the scalars the replay reads (the :class:`VerdictKey`'s among them), with
    ``draft_retry``: whether the draft retries it, by ``verdicts``; ``seconds`` is how long
    it held its requests (``raw_seconds`` the same, unclamped: NULL if never leased).

    With ``every_run``, every run of those queues and job sets that ended since ``since``
    or is going on, with ``wanted`` true for the failures in range (a later run of a
    failure in range is among them: it ended after that failure). ``share`` (i, n): only
    the jobs of the i-th of n shares, by a hash of their ids (PostgreSQL). Returns the
    SELECT (its rows unordered) and its parameters."""
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
    index, count = share
    if count > 1:
        for column in ("r.job_id", "j.id"):  # on both sides, so that each hashes its jobs
            where.append(f"mod(hashtext({column}) & 2147483647, {int(count)}) = {int(index)}")
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
    scope = {"since": since, "until": until, "queues": queues, "job_sets": job_sets, "now": now}

    def share_rows(index: int, count: int) -> list[tuple]:
        return _grouped_rows(**scope, verdicts=verdicts, share=(index, count))

    return _groups([row for rows in in_shares(share_rows) for row in rows])


def _grouped_rows(*, verdicts: Mapping[VerdictKey, bool], **scope: Any) -> list[tuple]:
    """The grouping query of :func:`recorded_groups` over one share of the jobs."""
    failures, params = _failures(**scope, verdicts=verdicts, every_run=True)
    key_columns = ", ".join(KEY_COLUMNS)
    d = _dialect()
    sep = d["sep"]
    # the over failure's group, without its id
    later_of = f"CASE WHEN reached THEN NULL ELSE {d['after_sep'].format(x='over_key')} END"
    over_key = f" || {sep} || ".join(
        [
            "id",
            "queue",
            "category",
            "subcategory",
            "CAST(used AS text)",
            *(_flag(column) for column in KEY_COLUMNS[3:]),
            "label",
            "COALESCE(CAST(rule AS text), '')",
        ]
    )
    # One pass per job in run order (one sort, one window): whether each run comes after
    # the job's first failure the draft stops at (its "over" failure), and that failure's
    # group, as a text that starts with its id (the least id of the stops so far is the
    # first). A failure not after it is reached; a run after it is one the draft saves,
    # summed into the over failure's group (``_groups``).
    sql = f"""
SELECT wanted, queue, {key_columns}, label, rule, extra_memory, extra_kind,
  {later_of} AS over_key, COUNT(*), SUM(seconds),
  SUM(own_cpu), SUM(own_gpu), SUM(cpu_s), SUM(memory_s), SUM(gpu_s)
FROM (
  SELECT wanted, queue, {key_columns}, label, rule, extra_memory, extra_kind, seconds, own_cpu,
    own_gpu, cpu_s, memory_s, gpu_s, SUM(stops) OVER upto = stops AS reached,
    MIN(stop_key{d["id"]}) OVER upto AS over_key
  FROM (
    SELECT job_id, id, queue, {key_columns}, label, rule, wanted, seconds,
      CASE WHEN wanted AND NOT draft_retry THEN 1 ELSE 0 END AS stops,
      CASE WHEN wanted AND NOT draft_retry THEN {over_key} END AS stop_key,
      CASE WHEN draft_retry AND label <> 'retry' THEN memory ELSE 0 END AS extra_memory,
      CASE WHEN draft_retry AND label <> 'retry' THEN memory_kind ELSE '' END AS extra_kind,
      cpu * seconds AS own_cpu, gpu * seconds AS own_gpu, cpu * raw_seconds AS cpu_s,
      memory * raw_seconds AS memory_s, gpu * raw_seconds AS gpu_s
    FROM ({failures}) narrowed_runs
  ) runs
  WINDOW upto AS (PARTITION BY job_id ORDER BY id ROWS UNBOUNDED PRECEDING)
) windowed
GROUP BY wanted, queue, {key_columns}, label, rule, extra_memory, extra_kind, {later_of}
"""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _groups(rows: list[tuple]) -> list[RecordedGroup]:
    """The rows of :func:`recorded_groups`' query as groups: a row of failures (``wanted``)
    counts in its own group, reached when it has no over key; a row with an over key adds
    its runs to the later runs of that failure's group (which is reached, and has no extra
    memory: the draft does not retry it)."""
    groups: dict[tuple, RecordedGroup] = {}
    for row in rows:
        wanted, queue, *key, label, rule, memory, kind, over = row[:14]
        count, seconds, own_cpu, own_gpu, cpu, mem, gpu = row[14:]
        if wanted:
            verdict = VerdictKey(key[0], key[1], int(key[2]), *(bool(x) for x in key[3:]))
            rule = None if rule is None else int(rule)
            name = (queue, verdict, label, rule, over is None, float(memory or 0), kind or "")
            group = groups.get(name)
            if group is None:
                group = groups[name] = RecordedGroup(
                    queue, verdict, label, rule, over is None, 0, name[5], name[6]
                )
            group.count += int(count)
            group.seconds += float(seconds or 0)
            group.cpu_seconds += float(own_cpu or 0)
            group.gpu_seconds += float(own_gpu or 0)
        if over is not None:
            o_queue, category, subcategory, used, *flags, o_label, o_rule = over.split("\x1f")
            verdict = VerdictKey(category, subcategory, int(used), *(f == "1" for f in flags))
            name = (o_queue, verdict, o_label, int(o_rule) if o_rule else None, True, 0.0, "")
            group = groups.get(name)
            if group is None:
                group = groups[name] = RecordedGroup(*name[:5], 0)
            group.later_runs += int(count)
            group.later_cpu += float(cpu or 0)
            group.later_memory += float(mem or 0)
            group.later_gpu += float(gpu or 0)
    return list(groups.values())


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
