"""armada.core.backtest_report: replays summed per queue and overall, the flips, the sample
and the estimate from the retry yield."""

from __future__ import annotations

import pytest

from armada.core.backtest_report import ESTIMATE_NOTE, Report, Tally, success_rates
from tests.core.backtest_cases import HOUR, failure, replayer


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
