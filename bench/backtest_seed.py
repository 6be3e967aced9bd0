"""The recorded history ``bench/backtest.py`` and ``bench/retry_cost.py`` measure: 20 queues,
jobs of one to four decided genuine failures each (failed runs and some expired leases, with
categories, exit codes and the decision trails policy ``bench`` gave them: retries, then a
terminal label), a succeeded last run for most retried jobs, spread over the 30 days before
``NOW``, written with ``COPY``. Also the stricter ``DRAFT`` the backtest replays."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SPAN = timedelta(days=30)
QUEUES = 20
BATCH = 50_000
GI = 2**30 * 1000
RECORDED = {
    "name": "bench",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {
            "action": "Retry",
            "onCategory": "oom",
            "mutate": {"resources": {"memory": {"factor": 1.5}}},
        },
        {"action": "Retry", "onCategory": "gpu"},
        {"action": "Retry", "onCategory": "internal"},
    ],
}
DRAFT = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "bench-draft",
    "retryLimit": 2,
    "defaultAction": "Retry",
    "rules": [
        {"action": "Fail", "onCategory": "user-error", "onSubcategory": "bad-arguments"},
        {"action": "Retry", "onCategory": "user-error"},
        {"action": "Fail", "onCategory": "oom"},
        {"action": "Retry", "onCategory": "gpu", "onSubcategory": "xid-79"},
        {"action": "Fail", "onCategory": "gpu"},
        {"action": "Retry", "onCategory": "internal", "onSubcategory": "lease-expired"},
    ],
}
CATEGORIES = {
    "oom": (["container-oom", "node-oom"], 30),
    "user-error": (["exit-1", "python-exception", "bad-arguments"], 35),
    "gpu": (["xid-79", "ecc-error", "nccl-timeout"], 15),
    "internal": (["lease-expired", "node-failure"], 20),
}
RULE_OF = {"user-error": 0, "oom": 1, "gpu": 2, "internal": 3}


def _trail(label: str, used: int, rule: int | None) -> dict:
    return {
        "decision": label,
        "retry": label == "retry",
        "policy": "bench",
        "policyVersion": 1,
        "ruleIndex": rule,
        "retriesUsed": used,
        "retryLimit": 3,
        "globalUsed": used,
        "globalCap": 5,
        "gangSkipped": False,
        "mutation": {},
        "reason": f"bench: {label}",
    }


def seed(n_failures: int, rnd: random.Random) -> tuple[int, int]:
    """Jobs with 1-4 decided failures each until ``n_failures``; returns (jobs, runs)."""
    from django.db import transaction

    from armada.models import Job, Queue, Run
    from armada.services.bulk import insert_rows

    Queue.objects.bulk_create(
        [
            Queue(
                name=f"queue-{i:02d}",
                retry_policies=["bench"],
                created_at=NOW - SPAN,
                updated_at=NOW - SPAN,
            )
            for i in range(QUEUES)
        ]
    )
    names = list(CATEGORIES)
    weights = [CATEGORIES[c][1] for c in names]
    jobs: list[dict] = []
    runs: list[dict] = []
    failures = n_jobs = n_runs = 0
    started = time.perf_counter()

    def flush() -> None:
        nonlocal n_jobs, n_runs
        with transaction.atomic():
            insert_rows(Job, jobs)
            insert_rows(Run, runs)
        n_jobs += len(jobs)
        n_runs += len(runs)
        jobs.clear()
        runs.clear()
        print(
            f"  seeded {n_jobs:,} jobs, {n_runs:,} runs ({failures:,} failures, "
            f"{time.perf_counter() - started:.0f} s)",
            flush=True,
        )

    index = 0
    while failures < n_failures:
        index += 1
        job_id = f"j{index:015d}"
        queue = f"queue-{rnd.randrange(QUEUES):02d}"
        category = rnd.choices(names, weights=weights)[0]
        subcategory = rnd.choice(CATEGORIES[category][0])
        cpu, memory = rnd.choice([(1000, 2 * GI), (2000, 8 * GI), (8000, 32 * GI)])
        gpu = 1000 if category == "gpu" else 0
        requests = {"cpu": cpu, "memory": memory} | ({"nvidia.com/gpu": gpu} if gpu else {})
        count = min(n_failures - failures, rnd.choices([1, 2, 3, 4], [40, 30, 20, 10])[0])
        moment = NOW - SPAN + timedelta(seconds=rnd.random() * (SPAN.total_seconds() - 86400))
        retried_to_the_end = rnd.random() < 0.6
        n_failed = 0
        for attempt in range(count):
            last = attempt == count - 1
            if category == "user-error":
                label, rule = "fail_rule", 0
            elif last and not retried_to_the_end:
                label, rule = (
                    ("fail_policy_limit" if attempt >= 3 else "fail_rule"),
                    RULE_OF[category],
                )
            else:
                label, rule = "retry", RULE_OF[category]
            seconds = rnd.randrange(60, 4 * 3600)
            expired = category == "internal" and subcategory == "lease-expired"
            runs.append(
                {
                    "id": f"{index:016d}{attempt:02d}",
                    "job_id": job_id,
                    "executor": "cluster-0",
                    "node": f"node-{rnd.randrange(100)}",
                    "pool": "default",
                    "state": "lease_expired" if expired else "failed",
                    "requests": requests,
                    "leased_at": moment,
                    "finished_at": moment + timedelta(seconds=seconds),
                    "exit_code": None if expired else rnd.choice([1, 2, 137, 139]),
                    "reason": "OOMKilled" if category == "oom" else "Error",
                    "failure_category": category,
                    "failure_subcategory": subcategory,
                    "retryable": label == "retry",
                    "decision": _trail(label, attempt, rule),
                    "decided_at": moment + timedelta(seconds=seconds),
                }
            )
            moment += timedelta(seconds=seconds + 30)
            failures += 1
            n_failed += 1
            if label != "retry":
                break
        ended_with_retry = runs[-1]["decision"]["decision"] == "retry"
        if ended_with_retry:
            runs.append(
                {
                    "id": f"{index:016d}99",
                    "job_id": job_id,
                    "executor": "cluster-0",
                    "node": "node-0",
                    "pool": "default",
                    "state": "succeeded",
                    "requests": requests,
                    "leased_at": moment,
                    "finished_at": moment + timedelta(seconds=rnd.randrange(60, 7200)),
                    "exit_code": 0,
                    "reason": "",
                    "failure_category": "",
                    "failure_subcategory": "",
                    "retryable": None,
                    "decision": {},
                    "decided_at": None,
                }
            )
        jobs.append(
            {
                "id": job_id,
                "queue_id": queue,
                "job_set": f"set-{index % 500}",
                "owner": "bench",
                "priority_class": "armada-default",
                "pod_spec": {"containers": [{"name": "main", "image": "bench"}]},
                "requests": requests,
                "state": "succeeded" if ended_with_retry else "failed",
                "submitted_at": NOW - SPAN,
                "last_transition_at": moment,
                "failure_count": n_failed,
                "retry_count": n_failed - (0 if ended_with_retry else 1),
                "failure_category": "" if ended_with_retry else category,
                "failure_subcategory": "" if ended_with_retry else subcategory,
            }
        )
        if len(runs) >= BATCH:
            flush()
    flush()
    with transaction.atomic():
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return n_jobs, n_runs
