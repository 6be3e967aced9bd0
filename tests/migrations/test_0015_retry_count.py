"""Migration 0015 fills Job.retry_count from the runs a decision retried: a job failed at its
first attempt counts none, a job retried twice then failed counts two, a job never failed
counts none whatever its runs say."""

from __future__ import annotations

import pytest

from tests.conftest import T0
from tests.migrations.migrating import historic_job, migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("armada", "0014_executor_settings")]
AFTER = [("armada", "0015_job_retry_count")]


def test_retry_count_is_backfilled_from_the_retried_runs():
    apps = migrate(BEFORE)
    Run = apps.get_model("armada", "Run")
    plan = {
        # job id: (failure_count, [retryable of each run])
        "j-first-fail": (1, [False]),
        "j-two-retries": (3, [True, True, False]),
        "j-retried-running": (1, [True, None]),
        "j-never-failed": (0, [None]),
    }
    for job_id, (failures, runs) in plan.items():
        historic_job(apps, job_id, failure_count=failures, run_count=len(runs))
        for n, retryable in enumerate(runs):
            Run.objects.create(
                id=f"{job_id}-r{n}",
                job_id=job_id,
                executor="e",
                node="n",
                pool="p",
                leased_at=T0,
                retryable=retryable,
            )
    try:
        apps = migrate(AFTER)
        counts = dict(apps.get_model("armada", "Job").objects.values_list("id", "retry_count"))
        assert counts == {
            "j-first-fail": 0,
            "j-two-retries": 2,
            "j-retried-running": 1,
            "j-never-failed": 0,
        }
    finally:
        migrate_to_latest()
