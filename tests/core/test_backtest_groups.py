"""armada.core.backtest: groups of failures (``RecordedGroup``) replayed as the database sums
them, and their agreement with the replay one failure at a time."""

from __future__ import annotations

import pytest

from armada.core.backtest import (
    FAIL_TO_RETRY,
    RETRY_TO_FAIL,
    RecordedGroup,
    VerdictKey,
    verdict_key,
)
from armada.core.backtest_report import Report
from tests.core.backtest_cases import GI, HOUR, failure, replayer


def key(category: str = "flaky", retries_used: int = 0, **flags: bool) -> VerdictKey:
    values = {"gang": False, "fail_fast": False, "lease_expired": False, "job_ended": False}
    values.update(flags)
    return VerdictKey(category, "", retries_used, **values)


def group(**fields) -> RecordedGroup:
    """Three flaky failures of queue ``demo``, each of 2 cpu for an hour, reached."""
    values = {
        "queue": "demo",
        "key": key(),
        "recorded": "fail_default",
        "recorded_rule": None,
        "reached": True,
        "count": 3,
        "seconds": 3 * HOUR,
        "cpu_seconds": 3 * 2000.0 * HOUR,
    }
    values.update(fields)
    return RecordedGroup(**values)


GROUPS = [
    # (case, group fields, flip, attempts, (cpu, memory, gpu) in milli-unit-seconds)
    ("unchanged", dict(recorded="retry"), "", 0, (0.0, 0.0, 0.0)),
    ("fail->retry adds one attempt each", {}, FAIL_TO_RETRY, 3, (3 * 2000.0 * HOUR, 0.0, 0.0)),
    (
        "fail->retry grows the memory of the added attempts",
        dict(key=key("oom"), memory=4.0 * GI, gpu_seconds=3 * 1000.0 * HOUR),
        FAIL_TO_RETRY,
        3,
        (3 * 2000.0 * HOUR, 8.0 * GI * 3 * HOUR, 3 * 1000.0 * HOUR),
    ),
    (
        "a bump of the other kind is skipped",
        dict(key=key("oom"), memory=4.0 * GI, memory_kind="static"),
        FAIL_TO_RETRY,
        3,
        (3 * 2000.0 * HOUR, 4.0 * GI * 3 * HOUR, 0.0),
    ),
    ("fail->retry not reached adds nothing", dict(reached=False), FAIL_TO_RETRY, 0, (0, 0, 0)),
    (
        "retry->fail saves the later runs",
        dict(
            key=key("user-error"),
            recorded="retry",
            later_runs=4,
            later_cpu=4 * 1000.0 * HOUR,
            later_memory=4 * GI * HOUR,
            later_gpu=7.0,
        ),
        RETRY_TO_FAIL,
        4,
        (4 * 1000.0 * HOUR, 4 * GI * HOUR, 7.0),
    ),
    (
        "retry->fail not reached saves nothing",
        dict(key=key("user-error"), recorded="retry", reached=False, later_runs=4),
        RETRY_TO_FAIL,
        0,
        (0, 0, 0),
    ),
    ("a gang is not retried", dict(key=key(gang=True), recorded="retry"), RETRY_TO_FAIL, 0, None),
    ("the job had ended", dict(key=key(job_ended=True)), "", 0, (0, 0, 0)),
]


@pytest.mark.parametrize(
    ("fields", "flip", "attempts", "cost"),
    [case[1:] for case in GROUPS],
    ids=[case[0] for case in GROUPS],
)
def test_replay_group(fields, flip, attempts, cost):
    replay = replayer().replay_group(group(**fields))
    assert (replay.flip, replay.attempts, replay.count) == (flip, attempts, 3)
    if cost is not None:
        assert (replay.cpu, replay.memory, replay.gpu) == pytest.approx(cost)


def test_a_group_counts_as_its_failures_in_the_report():
    report = Report()
    report.count(replayer().replay_group(group()))
    report.count(replayer().replay_group(group(queue="other", recorded="retry", count=2)))
    document = report.document()
    assert document["overall"]["examined"] == 5
    assert (document["overall"]["failToRetry"], document["overall"]["unchanged"]) == (3, 2)
    assert document["flips"][0]["count"] == 3
    assert [q["examined"] for q in document["queues"]] == [3, 2]
    assert document["sample"] == []  # groups never enter the sample


@pytest.mark.parametrize(
    "fields",
    [
        dict(recorded="fail_default"),
        dict(category="oom", recorded="fail_rule", memory=2.0 * GI, memory_kind="factor"),
        dict(category="user-error", recorded="retry", later_runs=2, later_cpu=5.0),
        dict(category="internal", subcategory="lease-expired", lease_expired=True),
        dict(fail_fast=True, recorded="retry"),
    ],
)
def test_a_group_of_one_replays_as_the_failure_alone(fields):
    one = failure(**fields)
    alone = replayer().replay(one)
    grouped = replayer().replay_group(
        RecordedGroup(
            queue=one.queue,
            key=verdict_key(one),
            recorded=one.recorded,
            recorded_rule=one.recorded_rule,
            reached=True,
            count=1,
            memory=one.memory if alone.flip == FAIL_TO_RETRY else 0.0,
            memory_kind=one.memory_kind,
            seconds=one.seconds,
            cpu_seconds=one.cpu * one.seconds,
            gpu_seconds=one.gpu * one.seconds,
            later_runs=one.later_runs,
            later_cpu=one.later_cpu,
            later_memory=one.later_memory,
            later_gpu=one.later_gpu,
        )
    )
    assert (grouped.flip, grouped.reached, grouped.attempts) == (
        alone.flip,
        alone.reached,
        alone.attempts,
    )
    assert (grouped.cpu, grouped.memory, grouped.gpu) == pytest.approx(
        (alone.cpu, alone.memory, alone.gpu)
    )
    assert grouped.verdict == alone.verdict
