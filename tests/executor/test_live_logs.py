"""Live logs on the executor's side (``executor.live_logs``): what a running pod writes is
read about once a second, only what is new, bounded per piece and per call, and reaches the
run's stored log while the run runs, once. The fake backend through the real executor API
and services; the local backend with real processes (no mocks)."""

from __future__ import annotations

import time

import pytest

from armada.core.runlog import LogPiece
from armada.executor.backends.base import LogPosition, LogRead, PodStatus
from armada.executor.backends.local import LocalBackend
from armada.executor.live_logs import LiveLogs
from armada.models import Run, RunLog
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file
from tests.executor.test_local_backend import backend, remove, request, sh, wait_for  # noqa: F401

FAKE = "fake.armadaproject.io/"
TICKS = "".join(f"tick {i}\n" for i in range(1, 21))


class Counting:
    """A backend whose live reads are counted."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.reads = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def read_log_since(self, *args):
        self.reads += 1
        return self.inner.read_log_since(*args)


@pytest.mark.django_db
def test_a_running_pods_lines_reach_its_run_log_while_it_runs_once_each(
    settings, queue, owner, api
):
    agent = fake_agent(settings)
    counted = Counting(agent.backend)
    agent.backend = counted
    agent.live_logs = LiveLogs(counted)
    ann = {FAKE + "duration": "20s", FAKE + "log": TICKS, FAKE + "logInterval": "1s"}
    job_id = job_submit(actor=owner, data=job_file(jobs=[job(annotations=ann)]), now=at(0))[0]
    scheduler_cycle(now=at(1))
    agent.tick(at(2))  # the pod starts and runs: tick 1 is written at once
    run = Run.objects.get(job_id=job_id)

    seen = []
    for step in range(1, 9):  # ticks every 0.5 s: a read every other tick
        agent.tick(at(2 + step / 2))
        body = api.get(f"/api/v1/runs/{run.id}/log").json()
        seen.append(body["log"])
        assert body["runState"] == "running"
    assert seen[-1] == "".join(f"tick {i}\n" for i in range(1, 6))  # 4 s after it started
    assert all(later.startswith(earlier) for earlier, later in zip(seen, seen[1:], strict=False))
    assert counted.reads == 1 + 4  # at the start, then once a second

    agent.tick(at(30))  # it ended: the final tail holds every line, once
    entry = RunLog.objects.get(run=run)
    assert entry.final and entry.text == TICKS and not entry.truncated


def status(name: str = "p", run_id: str = "r1", ended: bool = False) -> PodStatus:
    return PodStatus(
        name,
        run_id,
        pending_at=at(0),
        running_at=at(0),
        finished_at=at(5) if ended else None,
    )


class Script:
    """A backend whose pod writes ``text`` (bytes) as the test grows it."""

    def __init__(self) -> None:
        self.text = b""

    def read_log_since(self, name, since, limit_bytes, now):
        known = since.get("", LogPosition()).offset
        start = max(known, len(self.text) - limit_bytes)
        if start >= len(self.text):
            return []
        return [LogRead("", start, self.text[start:], LogPosition(len(self.text)))]


def test_a_read_takes_only_what_is_new_and_at_most_a_piece_of_it():
    script = Script()
    logs = LiveLogs(script, piece_bytes=8)
    script.text = b"abc\n"
    logs.observe({"p": status()}, ["r1"], at(0))
    assert logs.take() == [LogPiece("r1", "", 0, b"abc\n")]
    logs.sent(logs.take())
    script.text += b"0123456789\n"  # more than a piece: only its last 8 bytes
    logs.observe({"p": status()}, ["r1"], at(0.5))
    assert logs.take() == []  # not a second yet
    logs.observe({"p": status()}, ["r1"], at(1))
    assert logs.take() == [LogPiece("r1", "", 7, b"3456789\n")]


def test_pieces_wait_for_an_answer_joined_and_bounded():
    script = Script()
    logs = LiveLogs(script, piece_bytes=8)
    for second, more in enumerate((b"ab\n", b"cd\n", b"efgh\n")):
        script.text += more
        logs.observe({"p": status()}, ["r1"], at(second))
    # Never sent (the server was away): one piece, its last 8 bytes, at their offset.
    assert logs.take() == [LogPiece("r1", "", 3, b"cd\nefgh\n")]
    taken = logs.take()
    script.text += b"ij\n"
    logs.observe({"p": status()}, ["r1"], at(3))
    logs.sent(taken)  # the answer came for what was taken; the joined piece stays
    assert logs.take() == [LogPiece("r1", "", 6, b"efgh\nij\n")]


def test_a_call_carries_at_most_its_budget_of_pieces():
    logs = LiveLogs(object())
    for i in range(5):
        logs.outbox[(f"r{i}", "")] = LogPiece(f"r{i}", "", 0, b"x" * 100)
    assert [p.run_id for p in logs.take(250)] == ["r0", "r1"]
    assert len(logs.take(10)) == 1  # one at least, whatever its size


def test_an_ended_pod_is_read_once_more_at_once_then_no_more():
    script = Script()
    logs = LiveLogs(script)
    script.text = b"one\n"
    logs.observe({"p": status()}, ["r1"], at(0))
    script.text += b"two\n"
    logs.observe({"p": status(ended=True)}, ["r1"], at(0.1))  # less than a second: read
    assert logs.take()[-1] == LogPiece("r1", "", 0, b"one\ntwo\n")
    script.text += b"three\n"
    logs.observe({"p": status(ended=True)}, ["r1"], at(5))
    assert logs.take()[-1].data == b"one\ntwo\n"
    logs.observe({}, [], at(6))  # the run is let go: forgotten
    assert logs.runs == {}


# --- the local backend ---------------------------------------------------------------------


def test_local_reads_follow_each_file_by_offset(backend: LocalBackend) -> None:  # noqa: F811
    writer = sh("for i in 1 2 3; do echo tick $i; sleep 0.2; done; sleep 30")
    backend.create_pod(request("ticking", writer), at(0))
    wait_for(backend, "ticking", lambda s: s.running_at is not None)
    since: dict[str, LogPosition] = {}
    got = b""
    give_up = time.monotonic() + 20
    while b"tick 3\n" not in got and time.monotonic() < give_up:
        for read in backend.read_log_since("ticking", since, 1024, at(0)) or []:
            assert read.container == "" and read.offset == len(got)
            got += read.data
            since[read.container] = read.position
        time.sleep(0.05)
    assert got == b"tick 1\ntick 2\ntick 3\n"
    assert backend.read_log_since("ticking", since, 1024, at(0)) == []
    assert backend.read_log_since("no-such-pod", {}, 1024, at(0)) is None
    remove(backend, "ticking")


def test_local_reads_skip_to_the_tail_and_name_each_container(backend: LocalBackend) -> None:  # noqa: F811
    chatty = sh("i=0; while [ $i -lt 500 ]; do echo line-$i; i=$((i+1)); done", name="chatty")
    quiet = sh("printf 'h\\303\\251llo'", name="quiet")  # ends inside nothing: whole
    backend.create_pod(request("two", chatty, quiet), at(0))
    wait_for(backend, "two")
    reads = {r.container: r for r in backend.read_log_since("two", {}, 100, at(0))}
    assert set(reads) == {"chatty", "quiet"}
    chatty = reads["chatty"]  # the last 100 bytes, from the first line that starts in them
    assert chatty.data.startswith(b"line-") and chatty.data.endswith(b"line-499\n")
    assert 90 <= len(chatty.data) < 100
    assert chatty.offset + len(chatty.data) == chatty.position.offset
    assert reads["quiet"].data == "héllo".encode()
    remove(backend, "two")


def test_a_character_cut_by_the_end_of_a_read_waits_for_the_next() -> None:
    from armada.executor.backends.base import log_read

    read = log_read("", 0, "hé".encode()[:2], skipped=False)
    assert read is not None and read.data == b"h" and read.position.offset == 1
    skipped = log_read("", 10, "é!".encode()[1:], skipped=True)
    assert skipped is not None and skipped.data == b"!" and skipped.offset == 11
    lined = log_read("", 10, b"ne 1\nline 2\n", skipped=True)
    assert lined is not None and lined.data == b"line 2\n" and lined.offset == 15
