"""armada.core.backtest: one recorded failure replayed under a draft (the sums are in
test_backtest_report.py, groups of failures in test_backtest_groups.py).

Each table names its cases after what they exercise; the arithmetic cases spell out the
expected attempts and costs so that a wrong factor or a double count shows up.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from armada.core.backoff import Backoff
from armada.core.backtest import FAIL_TO_RETRY, RETRY_TO_FAIL, bumped_memory
from armada.core.backtest_report import Report
from armada.core.policy import MemoryBump, Rule
from armada.core.resource_cost import Cost
from tests.core.backtest_cases import DRAFT, GI, HOUR, failure, replayer

# --- one failure: the draft's label and the flip ----------------------------------------------

VERDICTS = [
    # (case, recorded failure fields, draft label, flip, draft rule index)
    ("unchanged-retry", dict(recorded="retry"), "retry", "", 2),
    ("fail->retry", dict(recorded="fail_default"), "retry", FAIL_TO_RETRY, 2),
    (
        "retry->fail-by-rule",
        dict(category="user-error", recorded="retry"),
        "fail_rule",
        RETRY_TO_FAIL,
        0,
    ),
    (
        "retry->fail-by-default",
        dict(category="gpu", recorded="retry"),
        "fail_default",
        RETRY_TO_FAIL,
        None,
    ),
    (
        "labels-differ-outcome-same",
        dict(category="gpu", recorded="fail_rule"),
        "fail_default",
        "",
        None,
    ),
    ("policy-limit", dict(retries_used=2, recorded="retry"), "fail_policy_limit", RETRY_TO_FAIL, 2),
    (
        "global-limit",
        dict(retries_used=5, recorded="fail_global_limit"),
        "fail_global_limit",
        "",
        None,
    ),
    ("flag-off-recorded-not-retried", dict(recorded="not_retried"), "retry", FAIL_TO_RETRY, 2),
    (
        "unschedulable-counts-as-fail",
        dict(recorded="retry_unschedulable"),
        "retry",
        FAIL_TO_RETRY,
        2,
    ),
    ("gang", dict(gang_cardinality=3, recorded="gang_skipped"), "gang_skipped", "", None),
    (
        "gang-of-one-is-plain",
        dict(gang_cardinality=1, recorded="gang_skipped"),
        "retry",
        FAIL_TO_RETRY,
        2,
    ),
    ("fail-fast", dict(fail_fast=True, recorded="not_retried"), "not_retried", "", None),
    (
        "never-retried",
        dict(category="internal", subcategory="stuck-terminating", recorded="not_retried"),
        "not_retried",
        "",
        None,
    ),
    ("job-had-ended", dict(job_ended=True, recorded="not_retried"), "not_retried", "", None),
    (
        "lease-expired-matches-internal",
        dict(
            category="internal",
            subcategory="lease-expired",
            lease_expired=True,
            recorded="fail_default",
        ),
        "retry",
        FAIL_TO_RETRY,
        3,
    ),
]


@pytest.mark.parametrize(
    ("fields", "label", "flip", "rule"),
    [case[1:] for case in VERDICTS],
    ids=[case[0] for case in VERDICTS],
)
def test_replay_labels_and_flips(fields, label, flip, rule):
    result = replayer().replay(failure(**fields))
    assert result.verdict.label == label
    assert result.flip == flip
    assert result.verdict.rule_index == rule
    assert result.reached


# --- one failure: attempts and cost -----------------------------------------------------------

ARITHMETIC = [
    # (case, failure fields, extra attempts, saved attempts, cost)
    # One more run of 2 cpu and 4Gi for an hour; flaky has no bump.
    ("extra-no-bump", dict(recorded="fail_default"), 1, 0, Cost(2.0, 4.0, 0.0)),
    # The oom rule doubles memory: the extra run asks for 8Gi.
    (
        "extra-memory-bumped",
        dict(category="oom", recorded="fail_default"),
        1,
        0,
        Cost(2.0, 8.0, 0.0),
    ),
    # A job that already grew by static keeps that kind: the factor bump is skipped.
    (
        "extra-bump-other-kind-skipped",
        dict(category="oom", recorded="fail_default", memory_kind="static"),
        1,
        0,
        Cost(2.0, 4.0, 0.0),
    ),
    # A lease expiry is retried without mutation, and half an hour of GPUs.
    (
        "extra-lease-expired",
        dict(
            category="internal",
            subcategory="lease-expired",
            lease_expired=True,
            recorded="not_retried",
            gpu=1000.0,
            seconds=HOUR / 2,
        ),
        1,
        0,
        Cost(1.0, 2.0, 0.5),
    ),
    # Two later runs that held 2 cpu / 4Gi for 1h and 3h (sums in milli-unit-seconds).
    (
        "saved-later-runs",
        dict(
            category="user-error",
            recorded="retry",
            later_runs=2,
            later_cpu=2000.0 * 4 * HOUR,
            later_memory=4.0 * GI * 4 * HOUR,
        ),
        0,
        2,
        Cost(8.0, 16.0, 0.0),
    ),
    ("unchanged-costs-nothing", dict(recorded="retry", later_runs=3, later_cpu=1e9), 0, 0, Cost()),
    ("negative-duration-costs-nothing", dict(recorded="fail_default", seconds=-60.0), 1, 0, Cost()),
]


@pytest.mark.parametrize(
    ("fields", "extra", "saved", "cost"),
    [case[1:] for case in ARITHMETIC],
    ids=[case[0] for case in ARITHMETIC],
)
def test_replay_attempts_and_cost(fields, extra, saved, cost):
    result = replayer().replay(failure(**fields))
    assert (result.extra_attempts, result.saved_attempts) == (extra, saved)
    assert result.cost.core_hours == pytest.approx(cost.core_hours)
    assert result.cost.memory_gib_hours == pytest.approx(cost.memory_gib_hours)
    assert result.cost.gpu_hours == pytest.approx(cost.gpu_hours)


@pytest.mark.parametrize(
    ("memory", "bump", "previous", "expected"),
    [
        (4 * GI, MemoryBump(factor=1.5), "", 6 * GI),
        (4 * GI, MemoryBump(static=512 * 2**20 * 1000), "", 4 * GI + 512 * 2**20 * 1000),
        (4 * GI, MemoryBump(static=512 * 2**20 * 1000), "factor", 4 * GI),
        # rounded up to whole bytes, as grow_memory rounds
        (1001 * 1000, MemoryBump(factor=1.5), "", 1502 * 1000),
        (0, MemoryBump(factor=2.0), "", 0),
    ],
    ids=["factor", "static", "other-kind-skipped", "rounded-up", "no-memory"],
)
def test_bumped_memory(memory, bump, previous, expected):
    assert bumped_memory(memory, bump, previous) == expected


# --- a job's failures in order: counted once per job ------------------------------------------

JOBS = [
    # (case, [(recorded label, retries used, later runs)], flips, extra, saved)
    # The draft fails user errors: the first retry of the job saves both later runs; the
    # second failure is compared (a flip) but saves nothing more.
    ("saved-once-per-job", [("retry", 0, 2), ("retry", 1, 1)], [RETRY_TO_FAIL] * 2, 0, 2),
    # Recorded fail at the end; the draft would have ended the job at its first failure.
    ("ended-earlier", [("retry", 0, 1), ("fail_rule", 1, 0)], [RETRY_TO_FAIL, ""], 0, 1),
]


@pytest.mark.parametrize(
    ("history", "flips", "extra", "saved"),
    [case[1:] for case in JOBS],
    ids=[case[0] for case in JOBS],
)
def test_a_job_history_counts_attempts_once(history, flips, extra, saved):
    engine = replayer()
    report = Report()
    replays = [
        engine.replay(
            failure(
                run_id=f"r{i}",
                category="user-error",
                recorded=label,
                retries_used=used,
                later_runs=later,
                later_cpu=2000.0 * HOUR * later,
            )
        )
        for i, (label, used, later) in enumerate(history)
    ]
    report.add_all(replays)
    assert [r.flip for r in replays] == flips
    assert [r.reached for r in replays] == [True] + [False] * (len(history) - 1)
    assert report.overall.extra_attempts == extra
    assert report.overall.saved_attempts == saved
    assert report.overall.saved_cost.core_hours == pytest.approx(2.0 * saved)


def test_a_flip_after_the_job_ended_under_the_draft_adds_no_attempt():
    engine = replayer()
    first = engine.replay(failure(category="user-error", recorded="fail_rule"))
    later = engine.replay(failure(run_id="r2", recorded="fail_default", retries_used=1))
    assert (first.flip, first.reached) == ("", True)
    assert (later.flip, later.reached, later.extra_attempts) == (FAIL_TO_RETRY, False, 0)
    # the next job starts afresh
    other = engine.replay(failure(run_id="r3", job_id="j2", recorded="fail_default"))
    assert (other.reached, other.extra_attempts) == (True, 1)


def test_verdicts_are_cached_per_distinct_failure_and_match_an_uncached_replay():
    engine = replayer()
    rows = [failure(run_id=f"r{i}", job_id=f"j{i}", retries_used=i % 3) for i in range(30)]
    cached = [engine.replay(r).verdict for r in rows]
    assert len(engine._verdicts) == 3
    fresh = [replayer().replay(r).verdict for r in rows]
    assert cached == fresh


def test_retry_delay_is_carried_into_the_sample():
    slow = replace(
        DRAFT,
        rules=(
            Rule(
                "Retry",
                "flaky",
                backoff=Backoff(initial_seconds=30.0, factor=2.0, max_seconds=300.0),
            ),
        ),
    )
    delayed = replayer(policy=slow).replay(failure(recorded="fail_default", retries_used=1))
    assert delayed.verdict.retry_delay_seconds == 60.0
    assert Report().add_all([delayed]).sample()[0]["retryDelaySeconds"] == 60.0
    plain = replayer().replay(failure(recorded="fail_default"))
    assert Report().add_all([plain]).sample()[0]["retryDelaySeconds"] is None


def test_replaying_never_changes_the_recorded_failure():
    row = failure(category="oom", recorded="fail_default")
    before = replace(row)
    replayer().replay(row)
    assert row == before
