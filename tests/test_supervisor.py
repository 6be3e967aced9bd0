"""The supervisor behind ``runall`` (``armada.supervisor``) with small real child processes:
restarts with a backoff and a clear line, gives up past the limit, stops whole process
groups, and its children die with it even when it is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from armada.supervisor import RestartPolicy, Supervisor, describe_exit
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[1]
QUICK = RestartPolicy(max_restarts=2, window=60, backoff_first=0.01, backoff_max=0.05)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not: it has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


@pytest.mark.parametrize(
    ("restart", "delay"), [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 5.0), (9, 5.0)]
)
def test_the_backoff_doubles_up_to_its_cap(restart, delay):
    assert RestartPolicy().backoff(restart) == delay


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (0, "exited with code 0"),
        (3, "exited with code 3"),
        (-9, "was killed by SIGKILL"),
        (-15, "was killed by SIGTERM"),
        (-200, "was killed by signal 200"),
    ],
)
def test_an_exit_is_described_by_its_code_or_signal(code, text):
    assert describe_exit(code) == text


def test_a_child_that_keeps_dying_is_restarted_up_to_the_limit_then_everything_stops():
    lines: list[str] = []
    supervisor = Supervisor(
        {
            "doomed": python("import sys; sys.exit(3)"),
            "steady": python("import time; time.sleep(120)"),
        },
        say=lines.append,
        policy=QUICK,
    )
    assert supervisor.run() == 1
    deaths = [line for line in lines if line.startswith("runall: doomed (pid")]
    assert [line.split("; ", 1)[1] for line in deaths] == [
        "restart 1 of 2 within 60 s, in 0.01 s",
        "restart 2 of 2 within 60 s, in 0.02 s",
        "giving up: it died 3 times within 60 s (limit 2 restarts). Stopping every process.",
    ]
    assert all("exited with code 3" in line for line in deaths)
    assert sum(line.startswith("runall: started doomed") for line in lines) == 3
    assert supervisor.children["steady"].poll() is not None  # stopped with the rest


def test_deaths_outside_the_window_do_not_count(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    dead.wait(timeout=30)
    lines: list[str] = []
    supervisor = Supervisor({"x": ["true"]}, say=lines.append, policy=QUICK)
    # Two deaths a minute apart each, then three within a minute: only then the limit.
    assert supervisor._schedule_restart("x", dead, now=0.0)
    assert supervisor._schedule_restart("x", dead, now=61.0)
    assert supervisor._schedule_restart("x", dead, now=122.0)
    assert supervisor._schedule_restart("x", dead, now=130.0)
    assert not supervisor._schedule_restart("x", dead, now=140.0)
    assert lines[-1].endswith(
        "giving up: it died 3 times within 60 s (limit 2 restarts). Stopping every process."
    )


def test_a_child_that_died_once_is_restarted_and_sigterm_stops_the_whole_group(tmp_path):
    """The child's own child (a shell's background job) goes with it: the signal goes to
    the process group."""
    marker = tmp_path / "died-once"
    grandchild = tmp_path / "grandchild.pid"
    program = [
        "sh",
        "-c",
        f"if [ -e {marker} ]; then sleep 120 & echo $! > {grandchild}; wait; "
        f"else touch {marker}; exit 7; fi",
    ]
    lines: list[str] = []

    def stop_when_restarted() -> None:
        wait_until("the restart", lambda: grandchild.exists() and grandchild.read_text())
        os.kill(os.getpid(), signal.SIGTERM)

    supervisor = Supervisor({"flaky": program}, say=lines.append, policy=QUICK)
    supervisor.poll_interval = 0.05
    original = supervisor.start

    def start(name: str) -> None:
        original(name)
        if len(lines) == 3:  # started, died, started again
            stop_when_restarted()

    supervisor.start = start
    assert supervisor.run() == 0
    assert "exited with code 7; restart 1 of 2 within 60 s" in lines[1]
    assert lines[-1] == "runall: stopping every process"
    pid = int(grandchild.read_text())
    wait_until("the grandchild to stop", lambda: not alive(pid), timeout=10)


SUPERVISED = """
import sys
from armada.supervisor import Supervisor
Supervisor({"a": ["sleep", "120"], "b": ["sleep", "121"]}, say=print).run(
    on_started=lambda: print("up", flush=True)
)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_children_die_with_a_supervisor_killed_by_sigkill():
    proc = subprocess.Popen(
        [sys.executable, "-c", SUPERVISED],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[-1] == "up\n", lines
        pids = [int(line.rsplit("pid ", 1)[1].rstrip(")\n")) for line in lines[:2]]
        assert all(alive(pid) for pid in pids)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        wait_until("the children to die", lambda: not any(alive(pid) for pid in pids))
    finally:
        proc.kill()
        proc.wait()


def test_the_announcement_waits_until_ready():
    """``runall`` announces the URL only once the web process answers (``ready``)."""
    lines: list[str] = []
    answers = iter([False, False, False, True])
    supervisor = Supervisor({"a": ["sleep", "120"]}, say=lines.append, poll_interval=0.01)

    def announce() -> None:
        lines.append("up")
        supervisor._signals = 1  # stop once announced

    asked = []

    def ready() -> bool:
        asked.append(1)
        return next(answers)

    assert supervisor.run(on_started=announce, ready=ready) == 0
    assert len(asked) == 4
    assert lines.index("up") > lines.index(next(x for x in lines if "started a" in x))
    assert lines.count("up") == 1


def test_a_process_never_ready_is_said_once():
    lines: list[str] = []
    ticks = iter(range(0, 10_000, 50))  # 50 s a round

    def clock() -> float:
        now = next(ticks)
        if now >= 1000:  # twenty rounds, most of them after the 120 s
            supervisor._signals = 1
        return now

    supervisor = Supervisor({"a": ["sleep", "120"]}, say=lines.append, clock=clock)
    supervisor.poll_interval = 0.001
    assert supervisor.run(on_started=lambda: lines.append("up"), ready=lambda: False) == 0
    warnings = [x for x in lines if x.startswith("runall: not ready after 120 s")]
    assert len(warnings) == 1
    assert "up" not in lines


def test_children_slow_to_stop_are_named_while_the_supervisor_waits():
    """A child that takes its time over SIGTERM is named once after ``slow_stop``; one that
    stops at once is not; both are gone when ``run`` returns."""
    slow = python(
        """
        import signal, sys, time
        signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1.5), sys.exit(0)))
        time.sleep(120)
        """
    )
    lines: list[str] = []
    supervisor = Supervisor(
        {"quick": ["sleep", "120"], "slow": slow}, say=lines.append, poll_interval=0.05
    )
    supervisor.slow_stop = 0.5

    def stop_once_started() -> None:
        pid = supervisor.children["slow"].pid
        # The slow child's handler must be installed before it is asked to stop.
        wait_until("the slow child's handler", lambda: _handler_installed(pid), timeout=30)
        supervisor._signals = 1

    assert supervisor.run(on_started=stop_once_started) == 0
    waiting = [line for line in lines if line.startswith("runall: waiting for")]
    assert waiting == ["runall: waiting for slow to stop (at most 15 s)"]
    assert not any("did not stop within the timeout" in line for line in lines)
    assert all(child.poll() is not None for child in supervisor.children.values())


def _handler_installed(pid: int) -> bool:
    """Whether process ``pid`` catches SIGTERM (its SigCgt mask has bit 15)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False
