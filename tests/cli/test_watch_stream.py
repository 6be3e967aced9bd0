"""armadactl watch against a real HTTP server: resuming after drops, caught-up markers, Ctrl-C.

No Django, no database: the fake server of conftest.py speaks the REST contract.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from armada.cli import client as client_module
from armada.cli import commands as main_module
from tests.cli.fake_armada import FakeArmada, StreamPlan, event
from tests.cli.helpers import run

# -- watch against the server ------------------------------------------------------------

WATCH_EVENTS = [
    event(1, "submitted", "a"),
    event(2, "submitted", "b"),
    event(3, "queued", "a", second=1),
    event(4, "queued", "b", second=1),
    event(5, "leased", "a", second=2, nodeName="n1", clusterId="c1", pool="cpu"),
    event(6, "leased", "b", second=2, nodeName="n2", clusterId="c1", pool="cpu"),
    event(7, "running", "a", second=3),
    event(8, "running", "b", second=3),
    event(9, "succeeded", "a", second=4),
    event(
        10,
        "failed",
        "b",
        second=5,
        exitCode=2,
        exitCodes={"main": 2},
        reason="Error",
        message="boom",
        retryable=False,
        failureCategory="user",
        failureSubcategory="",
        nodeName="n2",
        podName="b-0",
        clusterId="c1",
    ),
]


def watched_ids(out: str) -> list[str]:
    """(type, job) of each event line of a watch's output, summaries left out."""
    return [" ".join(line.split()[1:3]) for line in out.splitlines() if not line.startswith("[")]


EXPECTED_WATCH = [f"{e['type']} {e['jobId']}" for e in WATCH_EVENTS]


@pytest.mark.parametrize(
    "plan",
    [
        StreamPlan(count=4, drop="abort", partial=True),  # chunked body broken mid-event
        StreamPlan(count=4, drop="abort"),  # chunked body broken between events
        StreamPlan(count=6, drop="close", partial=True),  # close-delimited body cut mid-line
    ],
    ids=["chunked-mid-line", "chunked-between-lines", "close-mid-line"],
)
def test_watch_resumes_after_a_drop_without_loss_or_duplicates(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, plan: StreamPlan
) -> None:
    fake_armada.events = list(WATCH_EVENTS)
    fake_armada.stream_plans = [plan]
    code, out, err = run(
        capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive", "--utc"
    )
    assert code == 0, err
    assert watched_ids(out) == EXPECTED_WATCH
    event_requests = [r for r in fake_armada.requests if r.path.endswith("/events")]
    assert [r.query for r in event_requests] == [
        {"watch": "true"},
        {"watch": "true", "from": str(plan.count)},
    ]
    assert f"reconnecting after event {plan.count}" in err
    lines = out.splitlines()
    assert (
        "10:00:05  failed          b  exitCode=2  reason=Error  category=user  retryable=false"
        "  message=boom" in lines
    )
    assert "10:00:02  leased          a  node=n1" in lines
    assert lines[-1] == "[2 jobs] succeeded: 1, failed: 1"


def test_watch_prints_events_as_they_come_on_a_close_delimited_stream(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    # The body never ends (keep-alives for 10 s): the watch must not wait for the socket
    # to close or for a buffer to fill before it sees the events.
    fake_armada.events = list(WATCH_EVENTS)
    fake_armada.stream_plans = [StreamPlan(chunked=False)]
    started = time.monotonic()
    code, out, _ = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive")
    assert code == 0
    assert time.monotonic() - started < 5
    assert watched_ids(out) == EXPECTED_WATCH
    assert len(fake_armada.paths()) == 1


def test_watch_exit_if_inactive_waits_until_the_server_has_sent_everything(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    # Job a has finished when the first read runs dry, but job b's events are still on
    # their way: only the server's blank line says that the client has everything.
    fake_armada.events = [
        event(1, "submitted", "a"),
        event(2, "succeeded", "a", second=1),
        event(3, "submitted", "b", second=2),
        event(4, "failed", "b", second=3, retryable=False),
    ]
    fake_armada.stream_plans = [StreamPlan(pause_after=2)]
    code, out, _ = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive")
    assert code == 0
    assert watched_ids(out) == ["submitted a", "succeeded a", "submitted b", "failed b"]
    assert out.splitlines()[-1] == "[2 jobs] succeeded: 1, failed: 1"


def test_watch_prints_the_usage_of_utilisation_events(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    usage = {"cpu": "250m", "memory": "100Mi"}
    fake_armada.events = [
        event(1, "submitted", "a"),
        event(2, "running", "a", second=1, nodeName="n1"),
        event(3, "utilisation", "a", second=31, maxResourcesForPeriod=usage,
              avgResourcesForPeriod={"cpu": "200m", "memory": "90Mi"}, totalCumulativeUsage={}),
        event(4, "utilisation", "a", second=59, maxResourcesForPeriod={"cpu": "2", "memory": "1Gi"}),
        event(5, "succeeded", "a", second=59),
    ]  # fmt: skip
    code, out, err = run(
        capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive", "--utc"
    )
    assert code == 0, err
    lines = out.splitlines()
    assert "10:00:31  utilisation     a  max cpu 250m, memory 100Mi" in lines
    assert "10:00:59  utilisation     a  max cpu 2, memory 1Gi" in lines
    assert lines[-1] == "[1 job] succeeded: 1"
    # --raw prints the events as the server sent them, figures and all.
    code, out, err = run(
        capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--raw", "--exit-if-inactive"
    )
    assert code == 0, err
    assert '"maxResourcesForPeriod": {"cpu": "250m", "memory": "100Mi"}' in out


def test_watch_takes_a_last_event_without_newline_and_resumes_quietly(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.events = [event(1, "submitted", "a"), event(2, "succeeded", "a")]
    fake_armada.stream_plans = [StreamPlan(drop="close", unterminated=True)]
    code, out, err = run(
        capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive"
    )
    assert code == 0
    assert watched_ids(out) == ["submitted a", "succeeded a"]
    assert err == ""  # a clean end of the body is not worth a warning
    assert [r.query.get("from") for r in fake_armada.requests] == [None, "2"]


def test_watch_from_cursor_and_quoted_path(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.events = list(WATCH_EVENTS)
    code, out, _ = run(
        capsys,
        "--url",
        fake_armada.url,
        "watch",
        "q1",
        "night ly/1",
        "--from",
        "7",
        "--exit-if-inactive",
    )
    assert code == 0
    assert watched_ids(out) == ["running b", "succeeded a", "failed b"]
    (request,) = fake_armada.requests
    assert request.path == "/api/v1/job-sets/q1/night%20ly%2F1/events"
    assert request.query == {"from": "7", "watch": "true"}


def test_watch_skips_events_a_server_sends_twice(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.events = list(WATCH_EVENTS)
    # The second connection ignores ``from`` and replays everything from the start.
    fake_armada.stream_plans = [StreamPlan(count=5, drop="abort"), StreamPlan(ignore_from=True)]
    code, out, _ = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive")
    assert code == 0
    assert watched_ids(out) == EXPECTED_WATCH


def test_watch_waits_for_a_retried_job(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.events = [
        event(1, "submitted", "a"),
        event(
            2,
            "failed",
            "a",
            exitCode=137,
            reason="OOMKilled",
            retryable=True,
            failureCategory="oom",
        ),
        event(3, "queued", "a"),
        event(4, "succeeded", "a"),
    ]
    # The first connection ends right after the retryable failure: the watch must not stop.
    fake_armada.stream_plans = [StreamPlan(count=2, drop="close")]
    code, out, _ = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive")
    assert code == 0
    assert watched_ids(out) == ["submitted a", "failed a", "queued a", "succeeded a"]
    assert out.splitlines()[-1] == "[1 job] succeeded: 1"


def test_watch_gives_up_when_the_server_stays_away(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "RECONNECT_WINDOW", 0.2)
    fake_armada.events = [event(1, "submitted", "a")]
    fake_armada.stream_plans = [StreamPlan(drop="close")] + [
        StreamPlan(count=0, drop="close")
    ] * 200
    code, out, err = run(
        capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive"
    )
    assert code == 1
    assert watched_ids(out) == ["submitted a"]
    assert "could not reconnect" in err and "resume with --from 1" in err.splitlines()[-1]


def test_watch_error_on_first_connection(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.token = "x"
    code, out, err = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1")
    assert (code, out) == (1, "")
    assert err.strip() == (
        "Error: Authentication credentials were not provided."
        " (run `armadactl login`, or set ARMADA_TOKEN)"
    )


def test_watch_rejects_a_line_that_is_not_json(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.raw_prefix = [b"\n", b"not json\n"]
    code, _, err = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1")
    assert code == 1
    assert err.strip() == "Error: the event stream sent a line that is not JSON: b'not json'"


def test_watch_ends_with_the_servers_last_record(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    """A stream whose token was revoked ends with the API's error record: the watch stops
    with its message instead of reconnecting."""
    record = (
        b'{"status":401,"message":"the stream\'s credential no longer lets you in","errors":[]}\n'
    )
    fake_armada.raw_prefix = [record]
    code, _, err = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1")
    assert code == 1
    assert "credential no longer lets you in" in err
    assert len([r for r in fake_armada.requests if r.path.endswith("/events")]) == 1


def test_ctrl_c_during_watch_prints_summary_and_resume_hint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class InterruptedClient:
        def watch_events(self, queue: str, job_set: str, **_: Any) -> Iterator[dict[str, Any]]:
            assert (queue, job_set) == ("q1", "js1")
            yield event(41, "submitted", "a")
            yield event(42, "running", "a")
            raise KeyboardInterrupt

    monkeypatch.setattr(main_module, "make_client", lambda args: InterruptedClient())
    code, out, err = run(capsys, "watch", "q1", "js1", "--from", "40", "--utc")
    assert code == 130
    assert out.splitlines()[-1] == "[1 job] running: 1"
    assert err.strip() == "Stopped; resume with --from 42"
