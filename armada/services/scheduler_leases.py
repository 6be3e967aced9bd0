"""Writing a scheduling round's leases: step 4 of the cycle (``services.scheduler``).

One transaction claims the jobs still queued (and not waiting for a retry delay past the
cycle's ``now``) with one statement per few thousand, rows locked in id order, then creates
their runs and appends their ``leased`` events; a job cancelled or changed since the round
read it is left alone and seen again at the next sync.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime

from django.db import connection, transaction

from armada.core.away import AwayOption, toleration_json
from armada.core.scheduling import Lease
from armada.core.states import EventType, JobState, RunState
from armada.models import Job, Run
from armada.services import latest_run
from armada.services.bulk import insert_rows, values_table
from armada.services.events import NewEvent, events_append
from armada.services.ids import new_id
from armada.services.job_state_metrics import job_state_leases_count
from armada.services.jobdb_rows import moment

log = logging.getLogger("armada.services.scheduler")


def pod_name(job_id: str) -> str:
    return f"armada-{job_id}-0"


def plan_runs(leases: list[tuple[str, Lease]]) -> dict[str, tuple[str, str, str, str]]:
    """Each leased job's new run: ``{job: (run id, executor, node, pool)}`` (a job leased in
    two pools' rounds keeps its first)."""
    planned: dict[str, tuple[str, str, str, str]] = {}
    for pool, lease in leases:
        if lease.job_id not in planned:
            planned[lease.job_id] = (new_id(), lease.executor, lease.node, pool)
    return planned


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
    made them already."""
    new_runs = plan_runs(leases) if planned is None else planned
    with transaction.atomic():
        if fence is not None:
            fence()
        rows = _claim_queued(new_runs, now)
        runs, events = [], []
        jobs: dict[str, tuple[str, datetime]] = {}  # job -> (queue, submitted), for metrics
        # Equal requests and payloads are one object each, so that COPY encodes each once
        # (``bulk.insert_rows``); nothing changes them once made.
        shared_requests: dict[tuple, dict] = {}
        payloads: dict[tuple[str, str, str], dict] = {}
        for job_id, (run_id, executor, node, pool) in new_runs.items():
            row = rows.get(job_id)
            if row is None:
                continue
            job_id, queue, job_set, requests, submitted = row
            jobs[job_id] = (queue, moment(submitted))
            if not isinstance(requests, dict):
                requests = json.loads(requests)
            requests = shared_requests.setdefault(tuple(sorted(requests.items())), requests)
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
                # Every row gives the same fields (a COPY's columns are the batch's).
                "away_node_type": "",
                "scheduled_priority": None,
                "away_tolerations": [],
            }
            option = away.get(job_id) if away else None
            if option is None:
                payload = payloads.get((executor, node, pool))
                if payload is None:
                    payload = payloads[(executor, node, pool)] = {
                        "clusterId": executor,
                        "nodeName": node,
                        "pool": pool,
                    }
            else:
                payload = {"clusterId": executor, "nodeName": node, "pool": pool}
                run["away_node_type"] = option.label
                run["scheduled_priority"] = option.priority
                run["away_tolerations"] = [toleration_json(t) for t in option.tolerations]
                payload["awayNodeType"] = option.label
                payload["scheduledAtPriority"] = option.priority
            runs.append(run)
            events.append(
                NewEvent(
                    EventType.LEASED,
                    queue=queue,
                    job_set=job_set,
                    job_id=job_id,
                    run_id=run_id,
                    created=now,
                    payload=payload,
                )
            )
        leased = [r["job_id"] for r in runs]
        insert_rows(Run, runs)
        events_append(events=events)
        job_state_leases_count(runs=runs, jobs=jobs)
        if written is not None:
            # Only once they are really committed (not when an outer transaction still
            # holds them: the next sync then reads them as any change).
            transaction.on_commit(functools.partial(written.extend, runs))
    if new_run_ids is not None:
        new_run_ids.update((r["job_id"], r["id"]) for r in runs)
    log.info("scheduling cycle leased %d job(s)", len(runs))
    return leased


_CLAIM_BATCH = 5000


def _claim_queued(
    new_runs: Mapping[str, tuple[str, str, str, str]], now: datetime
) -> dict[str, tuple]:
    """Move the jobs of ``new_runs`` (job -> its new run, executor, node and pool) that are
    still queued, and not waiting for a retry delay past ``now``, to leased, with the new run
    as their latest (``services.latest_run``), in one statement per few thousand (the row
    lock, the check and the change at once); returns ``{id: (id, queue, job set, requests,
    submitted at)}`` of the jobs moved. Call inside the transaction that also writes their
    runs and events."""
    table = connection.ops.quote_name(Job._meta.db_table)
    at = connection.ops.adapt_datetimefield_value(now)
    claimed: dict[str, tuple] = {}
    ordered = sorted(new_runs)
    latest = latest_run.lease_assignments("v.run", "v.ex", "v.node", "v.pool")
    with connection.cursor() as cursor:
        for start in range(0, len(ordered), _CLAIM_BATCH):
            batch = ordered[start : start + _CLAIM_BATCH]
            values, params = values_table(
                "v(job, run, ex, node, pool)",
                [(job_id, *new_runs[job_id]) for job_id in batch],
            )
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
            cursor.execute(
                f"WITH {values} UPDATE {table} SET state = %s, last_transition_at = %s,"
                f" run_count = run_count + 1, retry_not_before = NULL, {latest} FROM v"
                f" WHERE {table}.id = v.job AND {where} AND state = %s"
                " RETURNING id, queue, job_set, requests, submitted_at",
                [
                    *params,
                    JobState.LEASED.value,
                    at,
                    JobState.QUEUED.value,
                    at,
                    JobState.QUEUED.value,
                ],
            )
            claimed.update((row[0], row) for row in cursor.fetchall())
    return claimed
