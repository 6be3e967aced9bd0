"""services.retry_yield_rollup: the yield read from its rollup where the rollup is complete
gives the same rows as the query over the runs, for any range; the rebuild recounts it; the
mark says from when it is complete (the parallel writers: test_retry_cost_race.py)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import F

from armada.models import RetryYieldBucket, RollupMark
from armada.services.queues import queue_create
from armada.services.retry_yield import retry_yield
from armada.services.retry_yield_rollup import (
    START,
    YIELD_MARK,
    covers_since,
    read_plan,
    rebuild_yield_rollup,
    retry_yield_read,
)
from tests.lookout.builders import make_job, make_run

D = datetime(2026, 3, 10, tzinfo=UTC)  # a midnight


def h(hours: float) -> datetime:
    return D + timedelta(hours=hours)


@pytest.mark.parametrize(
    ("since", "until", "covered", "plan"),
    [
        # Not known to be complete: all from the runs.
        (h(0.5), h(30), None, [("runs", h(0.5), h(30))]),
        # Within one hour, or no whole hour in range: the runs.
        (h(1.1), h(1.9), START, [("runs", h(1.1), h(1.9))]),
        (h(1.5), h(2.5), START, [("runs", h(1.5), h(2.5))]),
        # Whole hours inside one day, partial edges from the runs.
        (
            h(1.5),
            h(4.25),
            START,
            [("runs", h(1.5), h(2)), ("hours", h(2), h(4)), ("runs", h(4), h(4.25))],
        ),
        # Aligned ends: no runs part at all.
        (h(2), h(4), START, [("hours", h(2), h(4))]),
        # Across days: hours up to midnight, whole days, hours after the last midnight.
        (
            h(22.5),
            h(24 * 3 + 5.5),
            START,
            [
                ("runs", h(22.5), h(23)),
                ("hours", h(23), h(24)),
                ("days", h(24), h(72)),
                ("hours", h(72), h(77)),
                ("runs", h(77), h(77.5)),
            ],
        ),
        # Whole days only.
        (h(0), h(48), START, [("days", h(0), h(48))]),
        # Two partial days with no whole day between them: hours.
        (h(20), h(30), START, [("hours", h(20), h(30))]),
        # Complete only from a moment inside the range: the runs up to the next whole hour.
        (
            h(0),
            h(50),
            h(5.2),
            [
                ("runs", h(0), h(6)),
                ("hours", h(6), h(24)),
                ("days", h(24), h(48)),
                ("hours", h(48), h(50)),
            ],
        ),
        # Complete only from after the range: the runs.
        (h(0), h(10), h(12), [("runs", h(0), h(10))]),
        # An empty range.
        (h(3), h(3), START, []),
    ],
)
def test_read_plan(since, until, covered, plan):
    assert read_plan(since=since, until=until, covered=covered) == plan


def test_read_plan_tiles_any_range_exactly_once():
    rnd = random.Random(5)
    for _ in range(500):
        since = h(rnd.uniform(0, 100))
        until = since + timedelta(hours=rnd.choice([0.2, 1, 3, 30, 90]) * rnd.random())
        covered = rnd.choice([None, START, h(rnd.uniform(0, 120))])
        plan = read_plan(since=since, until=until, covered=covered)
        if since >= until:
            assert plan == []
            continue
        assert plan[0][1] == since and plan[-1][2] == until
        for (_, _, end), (_, begin, _) in zip(plan, plan[1:], strict=False):
            assert end == begin
        for source, first, last in plan:
            assert first < last
            if source != "runs":
                assert covered is not None and first >= covered
                step = 1 if source == "hours" else 24
                assert first.minute == first.second == 0 and last.minute == 0
                assert (last - first) % timedelta(hours=step) == timedelta(0)
                if step == 24:
                    assert first.hour == last.hour == 0


CATEGORIES = ("oom", "flaky", "gpu")


def _random_history(rnd: random.Random, jobs: int) -> None:
    """Jobs in two queues over three days, each with one to four runs: failures retried by
    a rule or the defaultAction, or not, and the jobs' outcomes."""
    for j in range(jobs):
        job_id = f"job-{j:04d}"
        make_job(
            job_id,
            queue=rnd.choice(["demo", "other"]),
            state=rnd.choice(["succeeded", "failed", "queued", "succeeded"]),
            retry_count=rnd.randrange(4),
        )
        moment = h(rnd.uniform(0, 70))
        for r in range(rnd.randint(1, 4)):
            moment += timedelta(minutes=rnd.choice([0, 7, 40, 95]))
            rule = rnd.choice([0, 1, None])
            make_run(
                f"run-{j:04d}-{r}",
                job_id,
                state="failed",
                leased_at=moment - timedelta(minutes=5),
                finished_at=moment,
                decided_at=moment,
                failure_category=rnd.choice(CATEGORIES),
                retryable=rnd.random() < 0.7,
                decision={"decision": "retry", "ruleIndex": rule, "policy": "p"},
            )


@pytest.fixture
def other_queue(queue, admin_user):
    queue_create(actor=admin_user, data={"name": "other"}, now=D)


@pytest.mark.django_db
def test_the_rebuilt_rollup_reads_as_the_runs_do_over_any_range(other_queue):
    rnd = random.Random(11)
    _random_history(rnd, 150)
    hourly = rebuild_yield_rollup()
    assert hourly == RetryYieldBucket.objects.filter(bucket_hours=1).count() > 20
    assert covers_since() == START
    whole = retry_yield(since=h(0), until=h(80))
    assert whole and any(row["succeededJobs"] for row in whole)
    for _ in range(40):
        since = h(rnd.uniform(-2, 70))
        until = since + timedelta(hours=rnd.uniform(0.1, 60))
        queues = rnd.choice([None, ["demo"], ["other"], []])
        assert retry_yield_read(since=since, until=until, queues=queues) == retry_yield(
            since=since, until=until, queues=queues
        ), (since, until, queues)
    # Rebuilding again gives the same rows.
    rows = sorted(tuple(r[1:]) for r in RetryYieldBucket.objects.values_list())
    rebuild_yield_rollup()
    assert sorted(tuple(r[1:]) for r in RetryYieldBucket.objects.values_list()) == rows


@pytest.mark.django_db
def test_buckets_before_the_mark_are_never_read(other_queue):
    """After an upgrade the rollup holds older history partly or not at all: reads take it
    from the runs up to the first whole hour after the mark."""
    rnd = random.Random(3)
    _random_history(rnd, 120)
    rebuild_yield_rollup()
    mark = h(30.4)
    RollupMark.objects.filter(name=YIELD_MARK).update(covers_since=mark)
    # Make every bucket that starts before the mark's next hour (or day) wrong.
    RetryYieldBucket.objects.filter(bucket_hours=1, start__lt=h(31)).update(
        retried_jobs=F("retried_jobs") + 1000
    )
    RetryYieldBucket.objects.filter(bucket_hours=24, start__lt=h(48)).update(
        retried_jobs=F("retried_jobs") + 1000
    )
    for since, until in [(h(0), h(72)), (h(20.5), h(50.25)), (h(31), h(33)), (h(29), h(30.9))]:
        assert retry_yield_read(since=since, until=until) == retry_yield(since=since, until=until)


@pytest.mark.django_db
def test_without_a_mark_the_runs_are_read(other_queue):
    rnd = random.Random(4)
    _random_history(rnd, 40)
    RollupMark.objects.all().delete()
    assert covers_since() is None
    assert retry_yield_read(since=h(0), until=h(72)) == retry_yield(since=h(0), until=h(72))
    assert RetryYieldBucket.objects.count() == 0
