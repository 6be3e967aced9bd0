"""The retry-cost counters and rollups under parallel writers, on PostgreSQL: no deadlock,
no failed transaction, and rollups that agree with the runs afterwards.

Three executors report their pods, two deciders decide failures at once (as two scheduler
processes would, were the leader lease ever lost between them), a scheduler leases, two
submitters post jobs that fail (retried, or failed by a rule) or succeed, and a healer lets
retried jobs succeed on their next attempt: every one of them adds to the same counter and
rollup rows (one queue, one policy, a few categories, the same hour), while the yield rollup
is rebuilt from the runs again and again. The rows are written
under the event-log lock, after the events (docs/concurrency.md, step 6).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Sum
from django.utils import timezone

from armada.core.config import parse_config
from armada.models import Job, MetricCounter, RetryCostBucket, RetryYieldBucket, Run
from armada.services.decisions import failures_decide
from armada.services.policies import policy_create
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from armada.services.retry_cost_metrics import RUNS_COUNTER
from armada.services.retry_cost_reads import Window, yield_report
from armada.services.retry_yield import retry_yield
from armada.services.retry_yield_rollup import rebuild_yield_rollup
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from armada.services.submit import job_submit
from tests.conftest import job_file
from tests.executor_api import ApiAgent, api_agent
from tests.racing import (
    FAKE,
    Race,
    deadlocks,
    each_more_than,
    exit_code_categories,
    fake_jobs,
    flaky_policy,
)

pytestmark = pytest.mark.django_db(transaction=True)

SECONDS = 15.0
EXECUTORS = ("east", "west", "north")
POLICY = flaky_policy("busy")
CATEGORIES = exit_code_categories("Delete")


def _jobs(n: int) -> list[dict]:
    return fake_jobs(n, [{"exitCode": "3"}, {"exitCode": "1"}, {}, {"exitCode": "3"}])


def test_parallel_writers_of_the_retry_cost_never_deadlock_and_the_rollups_add_up(
    settings, queue, owner, admin_user
):
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlock detection are PostgreSQL's")
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "cyclePeriod": "100ms",
                "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
            },
            "executorTimeout": "1h",
            "executors": [
                {
                    "id": name,
                    "nodes": [
                        {
                            "name": f"{name}-n",
                            "count": 4,
                            "allocatable": {"cpu": "8", "memory": "32Gi"},
                        }
                    ],
                    "errorCategories": CATEGORIES,
                }
                for name in EXECUTORS
            ],
        }
    )
    policy_cache.__init__()
    scheduler_state_reset()
    started = timezone.now()
    policy_create(actor=admin_user, data=POLICY, now=started)
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["busy"]}, now=started)
    agents = [api_agent(config) for config in settings.ARMADA.executors]
    before = deadlocks()
    race = Race()

    def submitter(k: int) -> Callable[[int], None]:
        def step(n: int) -> None:
            data = job_file(job_set=f"set-{k}", jobs=_jobs(n))
            job_submit(actor=owner, data=data, now=timezone.now())

        return step

    def executor(agent: ApiAgent) -> Callable[[int], None]:
        return lambda _: agent.tick(timezone.now())

    def decide(_: int) -> None:
        failures_decide(now=timezone.now())

    def cycle(_: int) -> None:
        scheduler_cycle(now=timezone.now())

    def heal(_: int) -> None:
        # One row at a time (each its own statement), so the healer holds one lock at most.
        ids = Job.objects.filter(state="queued", retry_count__gt=0).values_list("id", flat=True)
        for job_id in list(ids)[:5]:
            Job.objects.filter(id=job_id).update(annotations={FAKE + "duration": "0s"})

    steps = {f"submit-{k}": submitter(k) for k in range(2)} | {
        **{f"executor-{a.config.id}": executor(a) for a in agents},
        "decide-1": decide,
        "decide-2": decide,
        "scheduler": cycle,
        "heal": heal,
        "rebuild": lambda _: rebuild_yield_rollup(),
    }
    race.run(steps, SECONDS, until=each_more_than(3, steps))
    assert race.errors == []
    assert deadlocks() == before
    assert all(race.counts[name] > 3 for name in steps), sorted(race.counts.items())

    # Afterwards (every failure decided), the rollups and counters agree with the runs.
    failures_decide(now=timezone.now())
    decided = Run.objects.filter(state="failed", decided_at__isnull=False).count()
    assert decided > 10
    for hours in (1, 24):
        rolled = RetryCostBucket.objects.filter(bucket_hours=hours, kind="failed_run")
        assert rolled.aggregate(n=Sum("runs"))["n"] == decided
    counted = MetricCounter.objects.filter(name=RUNS_COUNTER, labels__kind="failed_run")
    assert sum(c.value for c in counted) == decided
    attempts = 0  # finished runs after their job's first retried failure
    by_job: dict[str, list] = {}
    for run in Run.objects.filter(job__retry_count__gt=0).order_by("id"):
        by_job.setdefault(run.job_id, []).append(run)
    for runs in by_job.values():
        first = next(i for i, r in enumerate(runs) if r.retryable)
        attempts += sum(1 for r in runs[first + 1 :] if r.finished_at is not None)
    assert attempts > 0
    rolled = RetryCostBucket.objects.filter(bucket_hours=1, kind="retried_attempt")
    assert rolled.aggregate(n=Sum("runs"))["n"] == attempts
    window = Window(since=started - timedelta(hours=1), until=timezone.now(), bucket_hours=1)
    since, until = window.first, window.first + timedelta(hours=3)
    assert yield_report(window=window, queues=None) == retry_yield(since=since, until=until)
    assert any(row["succeededJobs"] for row in retry_yield(since=since, until=until))
    # Rebuilt meanwhile, and once more now: the same rows as the writers kept.
    rows = sorted(tuple(r[1:]) for r in RetryYieldBucket.objects.values_list())
    rebuild_yield_rollup()
    assert sorted(tuple(r[1:]) for r in RetryYieldBucket.objects.values_list()) == rows
