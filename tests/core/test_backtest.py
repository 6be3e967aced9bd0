"""armada.core.backtest: one recorded failure replayed under a draft, and the sums.

Each table names its cases after what they exercise; the arithmetic cases spell out the
expected attempts and costs so that a wrong factor or a double count shows up.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from armada.core.backoff import Backoff
from armada.core.backtest import (
    FAIL_TO_RETRY,
    RETRY_TO_FAIL,
    RecordedFailure,
    Replayer,
    bumped_memory,
)
from armada.core.backtest_report import ESTIMATE_NOTE, Report, Tally, success_rates
from armada.core.policy import MemoryBump, Mutation, RetryPolicy, Rule
from armada.core.resource_cost import Cost
from armada.core.retry import RetrySettings

GI = 2**30 * 1000  # one GiB in milli-units
HOUR = 3600.0
SETTINGS = RetrySettings(enabled=False, global_max_retries=5)  # the draft turns it on

DRAFT = RetryPolicy(
    name="draft",
    retry_limit=2,
    default_action="Fail",
    rules=(
        Rule("Fail", "user-error"),  # rule 1
        Rule("Retry", "oom", mutate=Mutation(memory=MemoryBump(factor=2.0))),  # rule 2
        Rule("Retry", "flaky"),  # rule 3
        Rule("Retry", "internal", "lease-expired"),  # rule 4
    ),
)


def failure(**fields) -> RecordedFailure:
    """A failure of job ``j1`` in queue ``demo``: 2 cpu, 4Gi, one hour, nothing after it."""
    values = {
        "run_id": "r1",
        "job_id": "j1",
        "queue": "demo",
        "job_set": "set-1",
        "category": "flaky",
        "subcategory": "",
        "lease_expired": False,
        "retries_used": 0,
        "recorded": "fail_default",
        "cpu": 2000.0,
        "memory": 4.0 * GI,
        "seconds": HOUR,
    }
    values.update(fields)
    return RecordedFailure(**values)


def replayer(**kwargs) -> Replayer:
    return Replayer(
        policy=kwargs.pop("policy", DRAFT),
        settings=kwargs.pop("settings", SETTINGS),
        never_retried=kwargs.pop("never_retried", {("internal", "stuck-terminating")}),
        **kwargs,
    )


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


# --- the sums ---------------------------------------------------------------------------------


def test_report_sums_per_queue_and_overall_and_orders_flips():
    engine = replayer()
    rows = [
        failure(run_id="a", job_id="ja", queue="b-queue", recorded="fail_default"),
        failure(run_id="b", job_id="jb", queue="a-queue", recorded="fail_default"),
        failure(
            run_id="c",
            job_id="jc",
            queue="a-queue",
            category="oom",
            recorded="fail_rule",
            recorded_rule=0,
        ),
        failure(
            run_id="d",
            job_id="jd",
            queue="a-queue",
            category="user-error",
            recorded="retry",
            recorded_rule=4,
            later_runs=1,
            later_cpu=1000.0 * HOUR,
        ),
        failure(run_id="e", job_id="je", queue="a-queue", recorded="retry"),
    ]
    report = Report(sample_size=3).add_all(engine.replay(r) for r in rows)
    # the yield arrives after the replays
    report.rates, report.default_rate = {"flaky": 0.5}, 0.25
    document = report.document()
    overall = document["overall"]
    assert overall["examined"] == 5
    assert overall["examined"] == (
        overall["unchanged"] + overall["retryToFail"] + overall["failToRetry"]
    )
    assert (overall["failToRetry"], overall["retryToFail"], overall["unchanged"]) == (3, 1, 1)
    assert (overall["extraAttempts"], overall["savedAttempts"]) == (3, 1)
    # two flaky (0.5 each) and one oom (no yield for oom: the overall 0.25)
    assert overall["estimatedSucceeded"] == pytest.approx(1.25)
    # 2 cpu for an hour per extra run; the oom one with 8Gi instead of 4Gi
    assert overall["extraCost"] == {"coreHours": 6.0, "memoryGibHours": 16.0, "gpuHours": 0.0}
    assert overall["savedCost"]["coreHours"] == pytest.approx(1.0)
    assert [q["queue"] for q in document["queues"]] == ["a-queue", "b-queue"]
    assert document["queues"][1]["failToRetry"] == 1
    assert document["flips"][0] == {
        "from": "fail",
        "to": "retry",
        "category": "flaky",
        "subcategory": "",
        "recordedRule": None,
        "draftRule": 3,
        "count": 2,
    }
    assert {
        (f["from"], f["category"], f["recordedRule"], f["draftRule"]) for f in document["flips"][1:]
    } == {("fail", "oom", 1, 2), ("retry", "user-error", 5, 1)}
    # flipped failures first, and no more than asked
    assert [s["runId"] for s in document["sample"]] == ["a", "b", "c"]
    assert document["sample"][0]["recorded"] == "fail_default"
    assert document["sample"][0]["draft"] == "retry"


def test_sample_fills_up_with_unchanged_failures():
    report = Report(sample_size=5).add_all(
        replayer().replay(failure(run_id=f"r{i}", job_id=f"j{i}", recorded=label))
        for i, label in enumerate(["retry", "fail_default", "retry"])
    )
    assert [s["runId"] for s in report.sample()] == ["r1", "r0", "r2"]


def test_named_queues_without_failures_are_listed_with_zeros():
    report = Report()
    report.ensure_queues(["quiet"])
    assert report.document()["queues"] == [{"queue": "quiet", **Tally().as_dict()}]


@pytest.mark.parametrize(
    ("rows", "rates", "default"),
    [
        ([], {}, 0.0),
        ([{"category": "oom", "retriedJobs": 4, "succeededJobs": 3}], {"oom": 0.75}, 0.75),
        (
            [
                {"category": "oom", "rule": 2, "retriedJobs": 2, "succeededJobs": 2},
                {"category": "oom", "rule": None, "retriedJobs": 2, "succeededJobs": 0},
                {"category": "gpu", "rule": 1, "retriedJobs": 4, "succeededJobs": 1},
                {"category": "idle", "rule": 1, "retriedJobs": 0, "succeededJobs": 0},
            ],
            {"oom": 0.5, "gpu": 0.25},
            3 / 8,
        ),
    ],
    ids=["no-history", "one-category", "rules-of-a-category-add-up"],
)
def test_success_rates(rows, rates, default):
    got, overall = success_rates(rows)
    assert got == pytest.approx(rates)
    assert overall == pytest.approx(default)


def test_the_estimate_note_says_it_is_an_estimate():
    assert "estimate" in ESTIMATE_NOTE


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
