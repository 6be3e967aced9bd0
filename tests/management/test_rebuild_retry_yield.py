"""``manage.py rebuild_retry_yield``: the rollup recounted from the runs, the mark moved to
the start, and a line that says what it did."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from armada.models import RetryYieldBucket, RollupMark
from armada.services.retry_yield_rollup import START, YIELD_MARK, covers_since
from tests.lookout.builders import make_job, make_run

D = datetime(2026, 3, 10, tzinfo=UTC)


def h(hours: float) -> datetime:
    return D + timedelta(hours=hours)


@pytest.mark.django_db
def test_the_command_rebuilds_and_says_what_it_covered(queue):
    make_job("job-1", state="succeeded", retry_count=1)
    make_run(
        "run-1",
        "job-1",
        state="failed",
        finished_at=h(1),
        retryable=True,
        failure_category="oom",
        decision={"decision": "retry", "ruleIndex": 0},
    )
    RollupMark.objects.filter(name=YIELD_MARK).update(covers_since=h(5))
    out = StringIO()
    call_command("rebuild_retry_yield", stdout=out)
    assert "2 hourly rows" in out.getvalue()
    assert "it covered 2026-03-10T05:00:00+00:00, now all history" in out.getvalue()
    assert covers_since() == START
    assert list(
        RetryYieldBucket.objects.order_by("bucket_hours", "retries").values_list(
            "bucket_hours",
            "start",
            "queue",
            "category",
            "rule",
            "retries",
            "retried_jobs",
            "succeeded_jobs",
        )
    ) == [
        (1, h(1), "demo", "oom", 1, 0, 1, 0),
        (1, h(1), "demo", "oom", 1, 1, 0, 1),
        (24, D, "demo", "oom", 1, 0, 1, 0),
        (24, D, "demo", "oom", 1, 1, 0, 1),
    ]
