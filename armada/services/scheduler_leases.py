"""Writing a scheduling round's leases: step 4 of the cycle (``services.scheduler``).

One transaction claims the jobs still queued (and not waiting for a retry delay past the
cycle's ``now``) with one statement per few thousand, rows locked in id order, then creates
their runs and appends their ``leased`` events; a job cancelled or changed since the round
read it is left alone and seen again at the next sync. On PostgreSQL the claiming statement
inserts the runs itself (each copies its job's requests in the database) and the events go
in with one more, so that the process encodes no row per lease (``bench/RESULTS.md``).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from armada.core.away import AwayOption, toleration_json
from armada.core.scheduling import Lease
from armada.core.states import EventType, JobState, RunState
from armada.models import Event, Job, Run
from armada.services import latest_run
from armada.services.bulk import copy_value, insert_rows, insert_select_sql, values_table
from armada.services.events import NewEvent, events_append, events_append_columns
from armada.services.ids import new_ids
from armada.services.job_state_metrics import job_state_leases_count
from armada.services.jobdb_rows import moment

log = logging.getLogger("armada.services.scheduler")


def pod_name(job_id: str) -> str:
    return f"armada-{job_id}-0"


def plan_runs(leases: list[tuple[str, Lease]]) -> dict[str, tuple[str, str, str, str]]:
    """Each leased job's new run: ``{job: (run id, executor, node, pool)}`` (a job leased in
    two pools' rounds keeps its first)."""
    first: dict[str, tuple[str, str, str]] = {}
    for pool, lease in leases:
        if lease.job_id not in first:
            first[lease.job_id] = (lease.executor, lease.node, pool)
    return {
        job_id: (run_id, *where)
        for run_id, (job_id, where) in zip(new_ids(len(first)), first.items(), strict=True)
    }


def planned_run_rows(
    planned: Mapping[str, tuple[str, str, str, str]], away: Mapping[str, AwayOption]
) -> list[dict]:
    """The planned runs as ``JobDb.note_leased`` takes them, before they are written."""
    rows = []
    for job_id, (run_id, executor, node, pool) in planned.items():
        option = away.get(job_id)
        rows.append(
            {
                "job_id": job_id,
                "id": run_id,
                "executor": executor,
                "node": node,
                "pool": pool,
                "scheduled_priority": option.priority if option is not None else None,
            }
        )
    return rows


def write_leases(
    leases: list[tuple[str, Lease]],
    now: datetime,
    new_run_ids: dict[str, str] | None = None,
    away: Mapping[str, AwayOption] | None = None,
    written: list[dict] | None = None,
    fence: Callable[[], None] | None = None,
    planned: Mapping[str, tuple[str, str, str, str]] | None = None,
) -> list[str]:
    """Create runs and move jobs to leased; only jobs still queued at commit time are leased
    (a job cancelled or changed meanwhile is left alone and seen again at the next sync).
    ``new_run_ids`` is given each leased job's new run id; ``away`` holds the jobs placed
    away from home (``core.away``), whose runs keep the node type, the priority they run at
    and their pods' extra tolerations. ``written`` is given the run rows inserted once they
    are committed (for ``services.jobdb.JobDb.note_leased``). ``fence`` is called first in
    the transaction (the scheduler's lease check, ``leader.leader_fence``): what it raises
    leaves everything unwritten. ``planned`` gives the runs (``plan_runs``) when the caller
    made them already.

    On PostgreSQL the claiming statement inserts the runs too, and the events go in column
    by column (``events_append_columns``): the run dicts made here only feed ``written`` and
    the metrics. Elsewhere the runs and events are inserted from them."""
    new_runs = plan_runs(leases) if planned is None else planned
    away = away or {}
    postgresql = connection.vendor == "postgresql"
    with transaction.atomic():
        if fence is not None:
            fence()
        rows = _claim_queued(new_runs, now, away, with_runs=postgresql)
        runs, payloads = _leased_runs(new_runs, rows, now, away)
        jobs = {job_id: (queue, moment(at)) for job_id, (_, queue, _, _, at) in rows.items()}
        if postgresql:
            events_append_columns(
                type_=EventType.LEASED,
                created=now,
                queues=[rows[r["job_id"]][1] for r in runs],
                job_sets=[rows[r["job_id"]][2] for r in runs],
                job_ids=[r["job_id"] for r in runs],
                run_ids=[r["id"] for r in runs],
                payloads=list(map(copy_value(Event._meta.get_field("payload")), payloads)),
            )
        else:
            insert_rows(Run, runs)
            events_append(
                events=[
                    NewEvent(
                        EventType.LEASED,
                        queue=rows[r["job_id"]][1],
                        job_set=rows[r["job_id"]][2],
                        job_id=r["job_id"],
                        run_id=r["id"],
                        created=now,
                        payload=payload,
                    )
                    for r, payload in zip(runs, payloads, strict=True)
                ]
            )
        job_state_leases_count(runs=runs, jobs=jobs)
        if written is not None:
            # Only once they are really committed (not when an outer transaction still
            # holds them: the next sync then reads them as any change).
            transaction.on_commit(functools.partial(written.extend, runs))
    if new_run_ids is not None:
        new_run_ids.update((r["job_id"], r["id"]) for r in runs)
    log.info("scheduling cycle leased %d job(s)", len(runs))
    return [r["job_id"] for r in runs]


def _leased_runs(
    new_runs: Mapping[str, tuple[str, str, str, str]],
    claimed: Mapping[str, tuple],
    now: datetime,
    away: Mapping[str, AwayOption],
) -> tuple[list[dict], list[dict]]:
    """The run rows of the claimed jobs (in ``new_runs``' order) and their ``leased`` events'
    payloads. Equal requests and payloads are one object each (parsed once, encoded once);
    nothing changes them once made."""
    runs: list[dict] = []
    payloads: list[dict] = []
    parsed: dict[str, dict] = {}  # requests by their JSON text
    shared: dict[tuple[str, str, str], dict] = {}
    for job_id, (run_id, executor, node, pool) in new_runs.items():
        row = claimed.get(job_id)
        if row is None:
            continue
        requests = row[3]
        if not isinstance(requests, dict):
            text = requests
            requests = parsed.get(text)
            if requests is None:
                requests = parsed[text] = json.loads(text)
        run = {
            "id": run_id,
            "job_id": job_id,
            "executor": executor,
            "node": node,
            "pool": pool,
            "state": RunState.LEASED,
            "requests": requests,
            "pod_name": pod_name(job_id),
            "leased_at": now,
            # Every row gives the same fields (``bulk.insert_rows`` takes the first row's).
            "away_node_type": "",
            "scheduled_priority": None,
            "away_tolerations": [],
        }
        option = away.get(job_id)
        if option is None:
            payload = shared.get((executor, node, pool))
            if payload is None:
                payload = shared[(executor, node, pool)] = leased_payload(executor, node, pool)
        else:
            payload = leased_payload(executor, node, pool, option)
            run["away_node_type"] = option.label
            run["scheduled_priority"] = option.priority
            run["away_tolerations"] = [toleration_json(t) for t in option.tolerations]
        runs.append(run)
        payloads.append(payload)
    return runs, payloads


def leased_payload(
    executor: str, node: str, pool: str, option: AwayOption | None = None
) -> dict[str, Any]:
    """A ``leased`` event's payload: where the run goes, and for a run away from home its
    node type and the priority it runs at."""
    payload: dict[str, Any] = {"clusterId": executor, "nodeName": node, "pool": pool}
    if option is not None:
        payload["awayNodeType"] = option.label
        payload["scheduledAtPriority"] = option.priority
    return payload


_CLAIM_BATCH = 5000


def _claim_queued(
    new_runs: Mapping[str, tuple[str, str, str, str]],
    now: datetime,
    away: Mapping[str, AwayOption],
    *,
    with_runs: bool,
) -> dict[str, tuple]:
    """Move the jobs of ``new_runs`` (job -> its new run, executor, node and pool) that are
    still queued, and not waiting for a retry delay past ``now``, to leased, with the new run
    as their latest (``services.latest_run``), in one statement per few thousand (the row
    lock, the check and the change at once); returns ``{id: (id, queue, job set, requests,
    submitted at)}`` of the jobs moved. With ``with_runs`` (PostgreSQL) the same statement
    inserts their runs (``_insert_runs_sql``, ``away`` giving the runs placed away from
    home). Call inside the transaction that also writes their runs and events."""
    table = connection.ops.quote_name(Job._meta.db_table)
    at = connection.ops.adapt_datetimefield_value(now)
    claimed: dict[str, tuple] = {}
    ordered = sorted(new_runs)
    latest = latest_run.lease_assignments("v.run", "v.ex", "v.node", "v.pool")
    with connection.cursor() as cursor:
        for start in range(0, len(ordered), _CLAIM_BATCH):
            batch = ordered[start : start + _CLAIM_BATCH]
            rows = [(job_id, *new_runs[job_id]) for job_id in batch]
            columns = "v(job, run, ex, node, pool)"
            is_away = with_runs and any(job_id in away for job_id in batch)
            if with_runs:
                columns = "v(job, run, ex, node, pool, pod" + (
                    ", away, prio, tol)" if is_away else ")"
                )
                rows = [
                    (*row, pod_name(row[0]), *_away_columns(away, row[0], is_away)) for row in rows
                ]
            values, params = values_table(columns, rows)
            # A job whose retry delay runs past ``now`` is not leased, whatever the caller
            # thought: the column is the truth (``Job.retry_not_before``); leasing clears it.
            where = (
                "id IN (SELECT job FROM v) AND state = %s"
                " AND (retry_not_before IS NULL OR retry_not_before <= %s)"
            )
            if connection.vendor == "postgresql":
                # Rows are locked in id order, like every other job lock
                # (``services.locking``), not in whatever order the plan visits them.
                where = (
                    f"id IN (SELECT id FROM {table} WHERE {where} ORDER BY id FOR NO KEY UPDATE)"
                )
            returning = ", ".join(_CLAIMED)
            update = (
                f"UPDATE {table} SET state = %s, last_transition_at = %s,"
                f" run_count = run_count + 1, retry_not_before = NULL, {latest} FROM v"
                f" WHERE {table}.id = v.job AND {where} AND state = %s"
            )
            params += [
                JobState.LEASED.value,
                at,
                JobState.QUEUED.value,
                at,
                JobState.QUEUED.value,
            ]
            if with_runs:
                extra = ", v.away, v.prio, v.tol" if is_away else ""
                insert, insert_params = _insert_runs_sql(now, is_away)
                sql = (
                    f"WITH {values}, c AS ({update} RETURNING {returning},"
                    f" v.run, v.ex, v.node, v.pool, v.pod{extra}), r AS ({insert})"
                    f" SELECT {', '.join(_CLAIMED)} FROM c"
                )
                params += insert_params
            else:
                sql = f"WITH {values} {update} RETURNING {returning}"
            cursor.execute(sql, params)
            claimed.update((row[0], row) for row in cursor.fetchall())
    return claimed


# What the claim returns of each job it moved.
_CLAIMED = ("id", "queue", "job_set", "requests", "submitted_at")


def _away_columns(away: Mapping[str, AwayOption], job_id: str, is_away: bool) -> tuple[str, ...]:
    """The away columns of a job's run as text (none when the batch has no away job)."""
    if not is_away:
        return ()
    option = away.get(job_id)
    if option is None:
        return ("", "", "[]")
    tolerations = json.dumps([toleration_json(t) for t in option.tolerations])
    return (option.label, str(option.priority), tolerations)


def _insert_runs_sql(now: datetime, is_away: bool) -> tuple[str, list]:
    """The ``INSERT`` of the claimed jobs' runs from the claim's ``c`` (its job's requests,
    copied in the database), as ``_leased_runs`` makes their rows."""
    given: dict[str, tuple[str, list]] = {
        "id": ("c.run", []),
        "job_id": ("c.id", []),
        "executor": ("c.ex", []),
        "node": ("c.node", []),
        "pool": ("c.pool", []),
        "state": ("%s", [RunState.LEASED.value]),
        "requests": ("c.requests", []),
        "pod_name": ("c.pod", []),
        "leased_at": ("%s", [connection.ops.adapt_datetimefield_value(now)]),
    }
    if is_away:
        given["away_node_type"] = ("c.away", [])
        given["scheduled_priority"] = ("NULLIF(c.prio, '')::integer", [])
        given["away_tolerations"] = ("c.tol::jsonb", [])
    return insert_select_sql(Run, given, "c")
