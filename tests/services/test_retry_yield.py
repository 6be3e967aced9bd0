"""``services.retry_yield`` over runs built straight into the database: one row per failure
category and rule that retried (rules numbered from 1, None for the defaultAction), a job
counted once per row in the range holding its first retry for it, succeeded jobs by their
retries in all, only the queues asked for."""

from __future__ import annotations

import pytest

from armada.services.queues import queue_create
from armada.services.retry_yield import retry_yield
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db


def retried(run_id: str, job_id: str, t: float, category: str, rule: int | None) -> None:
    trail = {"decision": "retry", "policy": "p", "ruleIndex": rule}
    make_run(
        run_id,
        job_id,
        state="failed",
        leased_at=at(t - 1),
        finished_at=at(t),
        failure_category=category,
        retryable=True,
        decision=trail,
    )


def failed(run_id: str, job_id: str, t: float, category: str) -> None:
    trail = {"decision": "fail_rule", "policy": "p", "ruleIndex": 0}
    make_run(
        run_id,
        job_id,
        state="failed",
        leased_at=at(t - 1),
        finished_at=at(t),
        failure_category=category,
        retryable=False,
        decision=trail,
    )


@pytest.fixture
def world(admin_user, queue):
    queue_create(actor=admin_user, data={"name": "other"}, now=T0)
    # a: oom by rule index 1 twice, then succeeded (2 retries in all)
    make_job("a", state="succeeded", retry_count=2)
    retried("a1", "a", 10, "oom", 1)
    retried("a2", "a", 20, "oom", 1)
    # b: oom by rule index 1, then gpu by the default action, then succeeded (2 retries)
    make_job("b", state="succeeded", retry_count=2)
    retried("b1", "b", 15, "oom", 1)
    retried("b2", "b", 25, "gpu", None)
    # c: oom retried once, then failed for good by a rule: retried, not succeeded
    make_job("c", state="failed", retry_count=1)
    retried("c1", "c", 12, "oom", 1)
    failed("c2", "c", 30, "user-error")
    # d: still running after a retry, in another queue
    make_job("d", queue="other", state="running", retry_count=1)
    retried("d1", "d", 11, "oom", 1)


def test_rows_per_category_and_rule(world):
    assert retry_yield(since=at(0), until=at(100)) == [
        {
            "category": "gpu",
            "rule": None,
            "retriedJobs": 1,
            "succeededJobs": 1,
            "succeededAfter": {"2": 1},
        },
        {
            "category": "oom",
            "rule": 2,
            "retriedJobs": 4,
            "succeededJobs": 2,
            "succeededAfter": {"2": 2},
        },
    ]


@pytest.mark.parametrize(
    ("since", "until", "oom_jobs"),
    [
        (0, 100, 4),
        (0, 12, 2),  # a (10), d (11); c's first retry is at 12, outside [0, 12)
        (12, 100, 2),  # b (15) and c (12): a's first oom retry was at 10
        (16, 100, 0),  # a's second retry (20) is not its first
    ],
)
def test_a_job_counts_in_the_range_of_its_first_retry(world, since, until, oom_jobs):
    rows = {row["category"]: row for row in retry_yield(since=at(since), until=at(until))}
    assert rows.get("oom", {"retriedJobs": 0})["retriedJobs"] == oom_jobs


def test_only_the_queues_asked_for(world):
    rows = retry_yield(since=at(0), until=at(100), queues=["other"])
    assert rows == [
        {"category": "oom", "rule": 2, "retriedJobs": 1, "succeededJobs": 0, "succeededAfter": {}}
    ]
    assert retry_yield(since=at(0), until=at(100), queues=[]) == []
