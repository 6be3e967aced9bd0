"""A run's log under parallel clients, on PostgreSQL: one executor appending pieces (and
sending some again, as after a lost answer) while readers read the log through the API's
selector and the run ends with its final tail. Every read sees whole lines in order, none
twice and none missing between the marker and the end, with ``dropped`` and the offsets
agreeing with the text; after the end the log is exactly the final tail, whatever the
pieces still sent. No deadlock, no failed transaction."""

from __future__ import annotations

import random
import re
import threading

import pytest
from django.db import connection

from armada.core.reports import RunReport
from armada.core.runlog import marker_line
from armada.core.states import RunState
from armada.models import RunLog
from armada.services.run_logs import run_logs_append, stored_log
from armada.services.run_reports import runs_apply_report_batch
from tests.conftest import at
from tests.racing import Race, deadlocks
from tests.services.run_log_world import EXECUTOR, line, piece_of, running_run

pytestmark = pytest.mark.django_db(transaction=True)

SECONDS = 4.0
LIMIT = 40 * 11  # forty lines: the bound is reached early and often
LINES = 100_000  # a line number past any (a final log's reads end there)
LINE = re.compile(r"line (\d{5})\n")


def numbers(content: str) -> list[int]:
    found = LINE.findall(content)
    assert "".join(line(int(n)) for n in found) == content, content[:200]
    return [int(n) for n in found]


def check(entry: RunLog, final_text: str) -> int:
    """The invariants of one read (see the module); returns the last line's number."""
    log = stored_log(entry)
    assert entry.text.startswith(marker_line(log.dropped))
    assert entry.truncated == (log.dropped > 0)
    if entry.final:
        assert entry.text == final_text
        return LINES
    seen = numbers(log.content)
    if not seen:
        return -1
    assert seen == list(range(seen[0], seen[-1] + 1)), "a line missing or twice"
    assert log.dropped == seen[0] * 11  # every earlier byte counted as dropped
    assert log.offsets[""] == (seen[-1] + 1) * 11
    return seen[-1]


def test_appends_reads_and_the_end_race_without_losing_or_doubling_a_byte(settings, queue, owner):
    if connection.vendor != "postgresql":
        pytest.skip("parallel writers and row locks are PostgreSQL's")
    run = running_run(settings, owner)
    settings.RUN_LOG_LIMIT_BYTES = LIMIT
    pieces_in_all = 100  # two lines each: the pod writes 200 lines, then ends
    final_lines = 2 * pieces_in_all
    final_text = "".join(line(i) for i in range(final_lines - 40, final_lines))
    final_dropped = (final_lines - 40) * 11
    final_stored = marker_line(final_dropped) + final_text
    sent = threading.Event()
    rng = random.Random(7)
    race = Race()
    before = deadlocks()

    def append(n: int) -> None:
        """Piece n while there are lines left, then earlier pieces again (answers lost)."""
        if n >= pieces_in_all:
            first = 2 * rng.randrange(pieces_in_all)
            run_logs_append(executor_id=EXECUTOR, pieces=[piece_of(run.id, first, 2)], now=at(10))
            return
        pieces = [piece_of(run.id, 2 * n, 2)]
        if n and rng.random() < 0.3:  # the last answer was lost: sent again, joined
            pieces.insert(0, piece_of(run.id, 2 * n - 2, 4))
        run_logs_append(executor_id=EXECUTOR, pieces=pieces, now=at(10))
        if n == pieces_in_all - 5:  # the end races the last pieces
            sent.set()

    def end(n: int) -> None:
        if n:
            race.stop.wait()
            return
        while not sent.wait(0.05) and not race.stop.is_set():  # the end waits for the pieces
            pass
        report = RunReport(run.id, RunState.SUCCEEDED, at(20), exit_code=0, log=final_text)
        runs_apply_report_batch(executor_id=EXECUTOR, reports=[report], now=at(20))

    last_seen: dict[int, int] = {}

    def reader(k: int):
        def read(n: int) -> None:
            entry = RunLog.objects.filter(run=run).first()
            if entry is None:
                return
            upto = check(entry, final_stored)
            assert upto >= last_seen.get(k, -1), "a reader saw the log go back"
            last_seen[k] = upto

        return read

    race.run(
        {"append": append, "end": end, "read-1": reader(1), "read-2": reader(2)},
        SECONDS,
        until=lambda counts: counts["append"] > pieces_in_all + 10 and counts["read-1"] > 10,
    )

    assert race.errors == []
    assert race.counts["append"] > pieces_in_all and race.counts["read-1"] > 10
    entry = RunLog.objects.get(run=run)
    assert entry.final and entry.text == final_stored and entry.dropped == final_dropped
    assert deadlocks() == before
