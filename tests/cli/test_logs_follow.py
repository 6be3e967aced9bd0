"""``armadactl logs -f`` (``cli.logs_follow``): prints each new byte once as the stored log
grows, says when bytes were dropped between two reads, and returns when the run ends."""

from __future__ import annotations

from armada.cli.logs_follow import follow_log
from armada.core.runlog import marker_line
from tests.cli.helpers import run


def entry(text: str, state: str = "running", dropped: int = 0) -> dict:
    return {"log": marker_line(dropped) + text, "dropped": dropped, "runState": state}


def follow(*entries: dict) -> tuple[str, list[str], int]:
    reads = iter(entries)
    out: list[str] = []
    notes: list[str] = []
    sleeps: list[float] = []
    last = follow_log(lambda: next(reads), out.append, notes.append, sleep=sleeps.append)
    assert last is entries[-1]
    return "".join(out), notes, len(sleeps)


def test_new_lines_are_printed_once_until_the_run_ends():
    text, notes, sleeps = follow(
        entry(""),
        entry("tick 1\n"),
        entry("tick 1\n"),  # nothing new this second
        entry("tick 1\ntick 2\n"),
        entry("tick 1\ntick 2\ntick 3\n", state="cancelled"),
    )
    assert text == "tick 1\ntick 2\ntick 3\n" and notes == [] and sleeps == 4


def test_a_log_whose_start_is_dropped_keeps_its_place():
    text, notes, _ = follow(
        entry("a\nb\n"),
        entry("b\nc\n", dropped=2),  # a was dropped; c is new
        entry("e\n", dropped=8, state="succeeded"),  # c's successor d dropped unseen
    )
    assert text == "a\nb\nc\ne\n"
    assert notes == ["[2 bytes were written and dropped before they were read]"]


def test_a_log_of_a_run_that_ended_is_printed_once_and_returns():
    text, notes, sleeps = follow(entry("done\n", state="failed", dropped=100))
    assert text == marker_line(100) + "done\n" and sleeps == 0 and notes == []


def test_logs_follow_of_an_ended_run_prints_it_and_says_how_it_ended(capsys, fake_armada):
    fake_armada.run_logs["r1"] = {"runId": "r1", "jobId": "j", **entry("tail\n", "succeeded")}
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "-f", "r1")
    assert (code, out, err.strip()) == (0, "tail\n", "Run r1 ended: succeeded.")
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "--follow", "r3")
    assert (code, out, err.strip()) == (1, "", "Error: run r3 does not exist")
