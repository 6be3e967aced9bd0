"""``armadactl watch --raw`` (Armada's flag): the events as the server sends them, one JSON
object a line, ending like a normal watch with ``--exit-if-inactive``; Armada's debugging
switches are accepted."""

from __future__ import annotations

import json

import pytest

from armada.cli.main import main
from tests.cli.fake_armada import FakeArmada, event

EVENTS = [
    event(1, "submitted", "a"),
    event(2, "queued", "a", second=1),
    event(3, "failed", "a", second=2, retryable=False, failureCategory="user"),
]


def test_raw_prints_each_event_as_json_and_exits_when_inactive(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.events = list(EVENTS)
    code = main(
        [
            "watch", "q1", "js1", "--raw", "--exit-if-inactive", "--force-new-events",
            "--url", fake_armada.url,
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == EVENTS  # no summary line
