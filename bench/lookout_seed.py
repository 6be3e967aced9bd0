"""Seeding the Lookout benchmark's database (``bench/lookout.py``): a million jobs of ~100
queues of Zipf-like sizes, their runs and events, written with ``COPY``; and the sample of job
ids the load visits when the database was kept from an earlier run."""

from __future__ import annotations

import random
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

QUEUES = 100
JOB_SETS = 10_000
BATCH = 50_000
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SPAN = timedelta(days=60)
PASSWORD = "bench-password"  # noqa: S105 - a throw-away database

CATEGORIES = {
    "oom": ["container-oom", "node-oom"],
    "user-error": ["exit-1", "python-exception", "bad-arguments", "segfault"],
    "gpu": ["xid-79", "ecc-error", "nccl-timeout"],
    "internal": ["image-pull", "pod-deleted", "executor-lost"],
    "network": ["dns", "connection-reset"],
    "node-failure": ["node-not-ready", "disk-pressure"],
}
CATEGORY_WEIGHTS = {
    "oom": 30,
    "user-error": 35,
    "gpu": 10,
    "internal": 12,
    "network": 6,
    "node-failure": 7,
}
# State of a job by age: live states only among the newest jobs.
OLD_STATES = (["succeeded"] * 66) + (["failed"] * 26) + (["cancelled"] * 5) + (["preempted"] * 3)
NEW_STATES = (
    (["queued"] * 40) + (["running"] * 25) + (["leased"] * 3) + (["pending"] * 2) + OLD_STATES[::3]
)
CLUSTERS = [f"cluster-{i}" for i in range(10)]


# --- ids ---------------------------------------------------------------------------------


def ulid_at(moment: datetime, rnd: random.Random) -> str:
    from armada.services.ids import id_at

    return id_at(int(moment.timestamp() * 1000), rnd.getrandbits(80))


# --- seeding -----------------------------------------------------------------------------


def seed(n_jobs: int, rnd: random.Random) -> dict:
    """Fill the database; returns what the load needs (ids of some jobs)."""
    from django.db import connection, transaction

    from armada.models import Event, Job, Queue, Run
    from armada.services.bulk import insert_rows

    t_start = time.perf_counter()
    Queue.objects.bulk_create(
        [
            Queue(name=f"queue-{i:03d}", created_at=NOW - SPAN, updated_at=NOW - SPAN)
            for i in range(QUEUES)
        ]
    )
    # Team i submits to queue i; team sizes follow a Zipf-like law (queue-000 is the largest).
    team_weights = [1 / (i + 1) ** 0.9 for i in range(QUEUES)]
    teams = rnd.choices(range(QUEUES), weights=team_weights, k=JOB_SETS)
    per_team: dict[int, int] = defaultdict(int)
    sets = []
    for team in teams:
        sets.append(
            (
                team,
                f"team-{team}/exp-{per_team[team]}",
                NOW - SPAN + timedelta(seconds=rnd.random() * SPAN.total_seconds()),
            )
        )
        per_team[team] += 1
    sets.sort(key=lambda s: s[2])
    sizes = [rnd.paretovariate(1.5) for _ in sets]
    scale = n_jobs / sum(sizes)
    counts = [max(1, int(s * scale)) for s in sizes]
    counts[-1] += n_jobs - sum(counts)  # exactly n_jobs (the last set absorbs the rounding)
    if counts[-1] < 1:
        counts[-1] = 1
    new_after = NOW - timedelta(days=2)
    categories = list(CATEGORY_WEIGHTS)
    cat_weights = list(CATEGORY_WEIGHTS.values())
    pod_spec = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example/train:1.4",
                "resources": {"requests": {"cpu": "2", "memory": "8Gi"}},
            }
        ]
    }
    samples: list[str] = []
    heavy: list[str] = []
    jobs: list[dict] = []
    runs: list[dict] = []
    events: list[dict] = []
    total_jobs = total_runs = total_events = 0

    def flush() -> None:
        nonlocal total_jobs, total_runs, total_events
        with transaction.atomic():
            insert_rows(Job, jobs)
            insert_rows(Run, runs)
            insert_rows(Event, events)
        total_jobs += len(jobs)
        total_runs += len(runs)
        total_events += len(events)
        jobs.clear()
        runs.clear()
        events.clear()
        print(
            f"  seeded {total_jobs:,} jobs, {total_runs:,} runs, {total_events:,} events "
            f"({time.perf_counter() - t_start:.0f} s)",
            flush=True,
        )

    for (team, job_set, start), count in zip(sets, counts, strict=True):
        queue = f"queue-{team:03d}"
        owner = f"user-{team}-{rnd.randrange(5)}"
        moment = start
        for _ in range(count):
            moment += timedelta(milliseconds=rnd.randrange(1, 200))
            job_id = ulid_at(moment, rnd)
            state = rnd.choice(NEW_STATES if moment > new_after else OLD_STATES)
            cat = sub = ""
            n_runs = 0 if state == "queued" else 1
            if state == "failed":
                cat = rnd.choices(categories, weights=cat_weights)[0]
                sub = rnd.choice(CATEGORIES[cat])
                n_runs = rnd.choice((1, 1, 2, 3, 4))
            elif state == "succeeded" and rnd.random() < 0.08:
                n_runs = 2  # succeeded on a retry
            elif state == "cancelled" and rnd.random() < 0.5:
                n_runs = 0
            is_heavy = len(heavy) < 20 and rnd.random() < 0.0001
            if is_heavy:
                n_runs, state = 20, "failed"
                cat, sub = "gpu", "xid-79"
                heavy.append(job_id)
            if rnd.random() < 0.01 and len(samples) < 20_000:
                samples.append(job_id)
            transition = moment
            run_moment = moment
            memory = 8 * 1024**3 * 1000
            for r in range(n_runs):
                last = r == n_runs - 1
                run_moment += timedelta(seconds=rnd.randrange(1, 120))
                run_id = ulid_at(run_moment, rnd)
                cluster = rnd.choice(CLUSTERS)
                running_at = run_moment + timedelta(seconds=rnd.randrange(2, 60))
                finished_at = running_at + timedelta(seconds=rnd.randrange(30, 7200))
                if last:
                    run_state = {"cancelled": "cancelled", "preempted": "preempted"}.get(
                        state, state
                    )
                else:
                    run_state = "failed"
                live = run_state in ("leased", "pending", "running")
                failed = run_state == "failed"
                rcat = (
                    (cat if last else rnd.choices(categories, weights=cat_weights)[0])
                    if failed
                    else ""
                )
                rsub = (sub if last else rnd.choice(CATEGORIES[rcat])) if failed else ""
                decision: dict = {}
                retryable = None
                if failed:
                    retryable = (not last) or rnd.random() < 0.3
                    decision = {
                        "decision": "retry"
                        if not last
                        else rnd.choice(("fail_rule", "fail_default", "fail_policy_limit")),
                        "policy": "gpu-retry" if rcat == "gpu" else "default",
                        "policyVersion": rnd.randint(1, 4),
                        "ruleIndex": rnd.choice((0, 1, None)),
                        "retriesUsed": r,
                        "retryLimit": 3,
                        "reason": f"{rcat}/{rsub}",
                    }
                    if rcat == "oom":
                        decision["mutation"] = {
                            "memory": {"before": memory, "after": memory * 3 // 2, "kind": "x1.5"}
                        }
                        memory = memory * 3 // 2
                runs.append(
                    {
                        "id": run_id,
                        "job_id": job_id,
                        "executor": cluster,
                        "node": f"{cluster}-node-{rnd.randrange(500):03d}",
                        "pool": "gpu" if team % 4 == 0 else "cpu",
                        "state": run_state,
                        "requests": {"cpu": 2000, "memory": memory},
                        "pod_name": f"armada-{job_id}-{r}",
                        "leased_at": run_moment,
                        "pending_at": run_moment + timedelta(seconds=1),
                        "running_at": running_at if run_state != "leased" else None,
                        "finished_at": None if live else finished_at,
                        "exit_code": None
                        if live or run_state in ("cancelled", "preempted")
                        else (0 if run_state == "succeeded" else rnd.choice((1, 1, 2, 137, 139))),
                        "reason": "" if not failed else {"oom": "OOMKilled"}.get(rcat, "Error"),
                        "message": "" if not failed else f"{rsub}: see the log",
                        "failure_category": rcat,
                        "failure_subcategory": rsub,
                        "retryable": retryable,
                        "decision": decision,
                        "decided_at": finished_at if failed else None,
                    }
                )
                if is_heavy or (moment > new_after) or rnd.random() < 0.02:
                    repeat = 100 if is_heavy else 1
                    for k in range(repeat):
                        for etype in ("leased", "pending", "running", run_state):
                            if (
                                etype in ("leased", "pending", "running")
                                and k
                                and etype != "running"
                            ):
                                continue
                            events.append(
                                {
                                    "created": run_moment,
                                    "queue": queue,
                                    "job_set": job_set,
                                    "job_id": job_id,
                                    "run_id": run_id,
                                    "type": etype,
                                    "payload": {
                                        "clusterId": cluster,
                                        "nodeName": f"{cluster}-node-1",
                                        "reason": rsub,
                                        "failureCategory": rcat,
                                    },
                                }
                            )
                transition = finished_at if not live else running_at
            latest = runs[-1] if n_runs else None  # copied onto the job (services.latest_run)
            jobs.append(
                {
                    **_latest_columns(latest),
                    "id": job_id,
                    "queue_id": queue,
                    "job_set": job_set,
                    "owner": owner,
                    "priority": rnd.choice((0, 0, 0, 1, 2, 5)),
                    "priority_class": rnd.choice(("armada-default", "armada-preemptible")),
                    "pod_spec": pod_spec,
                    "annotations": {"team": f"team-{team}", "experiment": job_set},
                    "requests": {"cpu": 2000, "memory": memory},
                    "state": state,
                    "submitted_at": moment,
                    "last_transition_at": transition,
                    "failure_count": max(0, n_runs - 1) + (1 if state == "failed" else 0),
                    "retry_count": max(0, n_runs - 1),
                    "run_count": n_runs,
                    "terminal_reason": {"failed": "failed", "cancelled": "cancelled by user"}.get(
                        state, ""
                    ),
                    "failure_category": cat,
                    "failure_subcategory": sub,
                }
            )
            if len(jobs) >= BATCH:
                flush()
    if jobs:
        flush()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE armada_job")
        cursor.execute("VACUUM ANALYZE armada_run")
        cursor.execute("VACUUM ANALYZE armada_event")
    print(f"seeded and analysed in {time.perf_counter() - t_start:.0f} s", flush=True)
    return {"samples": samples, "heavy": heavy, "job_sets": _job_sets(samples)}


def _latest_columns(run: dict | None) -> dict:
    """The job's copy of its latest run, as ``services.latest_run`` keeps it."""
    from armada.services.latest_run import FIELDS, NO_RUN

    if run is None:
        return dict(zip(FIELDS, NO_RUN, strict=True))
    return {
        "latest_run_id": run["id"],
        "latest_executor": run["executor"],
        "latest_node": run["node"],
        "latest_pool": run["pool"],
        "latest_exit_code": run["exit_code"],
        "latest_retryable": run["retryable"],
        "latest_decision": run["decision"].get("decision", ""),
    }


def sample_jobs() -> dict:
    """Job ids to visit, from a database seeded earlier (``--keep``)."""
    from django.db import connection

    from armada.models import Job

    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM armada_job TABLESAMPLE SYSTEM (2) LIMIT 20000")
        samples = [r[0] for r in cursor.fetchall()]
    heavy = list(Job.objects.filter(run_count=20).values_list("id", flat=True)[:20])
    return {"samples": samples, "heavy": heavy, "job_sets": _job_sets(samples)}


def _job_sets(samples: list[str]) -> list[tuple[str, str]]:
    """(queue, job set) of some sampled jobs: the groups the load opens."""
    from armada.models import Job

    return list(
        Job.objects.filter(id__in=samples[:300]).values_list("queue_id", "job_set").distinct()
    )
