"""The lines armadactl watch prints and when it stops (units, no server).

No Django, no database: the fake server of conftest.py speaks the REST contract.
"""

from __future__ import annotations

import io
from datetime import UTC, timedelta, timezone
from typing import Any

import pytest

from armada.cli.client import CAUGHT_UP
from armada.cli.watch import JobSetTracker, format_event, format_time, run_watch, usage_text
from tests.cli.fake_armada import event

# -- watch lines and termination ---------------------------------------------------------


@pytest.mark.parametrize(
    ("evt", "line"),
    [
        (event(1, "submitted", "j1"), "10:00:00  submitted       j1"),
        (event(2, "queued", "j1", second=1), "10:00:01  queued          j1"),
        (
            event(3, "leased", "j1", second=2, nodeName="node-7", clusterId="c1", pool="cpu"),
            "10:00:02  leased          j1  node=node-7",
        ),
        (  # a server from before the rename spelled the event fields the old way
            event(3, "leased", "j1", second=2, node="node-7", cluster="c1", pool="cpu"),
            "10:00:02  leased          j1  node=node-7",
        ),
        (event(4, "pending", "j1", second=3), "10:00:03  pending         j1"),
        (event(5, "running", "j1", second=4, nodeName="node-7"), "10:00:04  running         j1"),
        (event(6, "succeeded", "j1", second=5), "10:00:05  succeeded       j1"),
        (event(7, "cancelled", "j1", second=6), "10:00:06  cancelled       j1"),
        (event(8, "preempted", "j1", second=7), "10:00:07  preempted       j1"),
        (event(9, "lease_returned", "j1", second=8), "10:00:08  lease_returned  j1"),
        (event(10, "reprioritized", "j1", second=9), "10:00:09  reprioritized   j1"),
        (
            event(
                11,
                "failed",
                "j1",
                second=10,
                exitCode=137,
                exitCodes={"main": 137},
                reason="OOMKilled",
                message="container main was killed",
                retryable=False,
                failureCategory="resources",
                failureSubcategory="oom",
                nodeName="node-7",
            ),
            "10:00:10  failed          j1  exitCode=137  reason=OOMKilled  category=resources/oom  retryable=false"
            '  message="container main was killed"',  # the termination message, last
        ),
        (
            event(
                11,
                "failed",
                "j1",
                second=10,
                exitCode=137,
                reason="OOMKilled",
                retryable=False,
                failure_category="resources",
                failure_subcategory="oom",
            ),
            "10:00:10  failed          j1  exitCode=137  reason=OOMKilled  category=resources/oom  retryable=false",
        ),
        (
            event(
                12,
                "failed",
                "j1",
                second=11,
                exitCode=1,
                reason="Error in app",
                failureCategory="user",
                retryable=True,
            ),
            '10:00:11  failed          j1  exitCode=1  reason="Error in app"  category=user  retryable=true',
        ),
        (
            {"id": 13, "type": "failed", "jobId": "j1"},
            "--:--:--  failed          j1  exitCode=-  reason=-  category=-  retryable=false",
        ),
        (
            {"id": 14, "type": "leased", "jobId": "j2", "created": "garbage"},
            "--:--:--  leased          j2  node=-",
        ),
        (  # the period's largest reading, cpu and memory first (Armada prints none)
            event(
                15,
                "utilisation",
                "j1",
                second=12,
                clusterId="c1",
                nodeName="node-7",
                podName="armada-j1-0",
                maxResourcesForPeriod={"nvidia.com/gpu": "1", "memory": "100Mi", "cpu": "250m"},
                avgResourcesForPeriod={"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"},
                totalCumulativeUsage={"cpu": "42"},
            ),
            "10:00:12  utilisation     j1  max cpu 250m, memory 100Mi, nvidia.com/gpu 1",
        ),
        (  # a reading without figures (or from a server that sent none) prints none
            event(16, "utilisation", "j1", second=13, maxResourcesForPeriod={}),
            "10:00:13  utilisation     j1",
        ),
    ],
)
def test_event_lines(evt: dict[str, Any], line: str) -> None:
    assert format_event(evt, UTC) == line


def test_usage_text_orders_resources_and_keeps_the_servers_quantities() -> None:
    assert usage_text({"memory": "1Gi", "cpu": "2"}) == "cpu 2, memory 1Gi"
    assert usage_text({"ephemeral-storage": "5Gi", "memory": "13000Ki"}) == (
        "memory 13000Ki, ephemeral-storage 5Gi"
    )
    assert usage_text({"cpu": 1.5, "memory": None}) == "cpu 1.5"  # odd values, as they are
    assert usage_text({"weird": "a b"}) == 'weird "a b"'
    assert usage_text({}) is None and usage_text(None) is None and usage_text("cpu") is None


def test_utilisation_events_do_not_change_a_jobs_state() -> None:
    tracker = JobSetTracker()
    tracker.observe(event(1, "running", "j1"))
    tracker.observe(event(2, "utilisation", "j1", maxResourcesForPeriod={"cpu": "1"}))
    assert tracker.states == {"j1": "running"}


def test_event_time_is_converted_to_the_chosen_zone() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert format_time("2025-03-04T23:30:15Z", plus_two) == "01:30:15"
    assert format_time("2025-03-04T23:30:15.123456+01:00", UTC) == "22:30:15"
    assert format_time("2025-03-04T23:30:15", plus_two) == "23:30:15"  # no offset: as written


def test_tracker_exits_only_when_every_seen_job_is_finished() -> None:
    tracker = JobSetTracker()
    assert not tracker.inactive  # nothing seen yet: keep waiting
    steps: list[tuple[dict[str, Any], bool]] = [
        (event(1, "submitted", "a"), False),
        (event(2, "submitted", "b"), False),
        (event(3, "submitted", "c"), False),
        (event(4, "succeeded", "a"), False),
        (event(5, "failed", "b", retryable=True), False),  # will be retried
        (event(6, "cancelled", "c"), False),
        (event(7, "queued", "b"), False),
        (event(8, "leased", "b"), False),
        (event(9, "failed", "b", retryable=False), True),
    ]
    for evt, inactive in steps:
        tracker.observe(evt)
        assert tracker.inactive is inactive, evt
    assert tracker.summary() == "[3 jobs] succeeded: 1, failed: 1, cancelled: 1"


def test_tracker_preempted_is_final_and_lease_returned_is_not() -> None:
    tracker = JobSetTracker()
    for evt in (event(1, "leased", "a"), event(2, "lease_returned", "a")):
        tracker.observe(evt)
    assert not tracker.inactive
    assert tracker.states == {"a": "queued"}
    tracker.observe(event(3, "preempted", "a"))
    assert tracker.inactive


def test_tracker_counts_jobs_seen_only_through_informational_events() -> None:
    tracker = JobSetTracker()
    tracker.observe(event(1, "reprioritized", "a"))
    assert not tracker.inactive
    assert tracker.summary() == "[1 job] seen: 1"


def test_run_watch_waits_for_caught_up_before_exiting() -> None:
    events: list[Any] = [
        event(1, "submitted", "a"),
        event(2, "succeeded", "a", second=3),  # a is done, but b's submission follows in this burst
        event(3, "submitted", "b", second=4),
        CAUGHT_UP,
        event(4, "running", "b", second=5),
        CAUGHT_UP,
        event(5, "succeeded", "b", second=9),
        CAUGHT_UP,
        event(6, "submitted", "never-printed"),
    ]
    buffer = io.StringIO()
    clock = iter([0.0, 1.0, 10.0])
    code = run_watch(events, buffer, exit_if_inactive=True, tz=UTC, clock=lambda: next(clock))
    assert code == 0
    assert buffer.getvalue().splitlines() == [
        "10:00:00  submitted       a",
        "10:00:03  succeeded       a",
        "10:00:04  submitted       b",
        "[2 jobs] submitted: 1, succeeded: 1",
        # no summary after event 4: one second since the last is too soon
        "10:00:05  running         b",
        "10:00:09  succeeded       b",
        "[2 jobs] succeeded: 2",
    ]


def test_run_watch_without_exit_flag_keeps_going_and_summarises_at_the_end() -> None:
    events: list[Any] = [
        event(1, "submitted", "a"),
        event(2, "succeeded", "a"),
        CAUGHT_UP,
        event(3, "submitted", "b"),
    ]
    buffer = io.StringIO()
    assert run_watch(events, buffer, tz=UTC, clock=lambda: 0.0) == 0
    lines = buffer.getvalue().splitlines()
    assert lines[2] == "[1 job] succeeded: 1"
    assert lines[-1] == "[2 jobs] submitted: 1, succeeded: 1"
