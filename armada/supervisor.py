"""A small process supervisor: the engine of ``manage.py runall``.

It starts named child processes, restarts one that dies, and stops them all together.

- A child that exits is logged on one line (its name, pid, exit code or signal, and the
  restart count against the limit) and started again after a short backoff (0.5 s, doubling
  up to 5 s) while the others carry on.
- Past the limit (more than ``max_restarts`` deaths of one child within ``window``
  seconds) the supervisor says so, stops every child and returns 1: something is wrong
  that restarting will not mend (a port taken, a database gone).
- SIGTERM or SIGINT (Ctrl-C) stops every child: SIGTERM to its process group, then
  SIGKILL once ``stop_timeout`` has passed. A second signal skips the wait.
- No orphans: each child runs in a process group of its own (so a signal reaches whatever
  it started in that group, and Ctrl-C in a terminal reaches only the supervisor, which
  stops children in order), and on Linux it asks the kernel to SIGKILL it when the
  supervisor dies (``PR_SET_PDEATHSIG``), so even ``kill -9`` of the supervisor takes the
  children with it. Processes a child deliberately starts in a session of their own (the
  local executor backend's pods, which outlive an executor restart) are not its to stop.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class RestartPolicy:
    max_restarts: int = 5
    window: float = 60.0
    backoff_first: float = 0.5
    backoff_max: float = 5.0
    stop_timeout: float = 15.0

    def backoff(self, restart: int) -> float:
        """Seconds to wait before the ``restart``-th restart within the window (from 1)."""
        return min(self.backoff_max, self.backoff_first * 2 ** (restart - 1))


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _death_signal(parent: int) -> Callable[[], None] | None:
    """What a child runs between fork and exec: die with ``parent`` (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here, not in the forked child

    def set_death_signal() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the line above took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return set_death_signal


def die_with(parent: int) -> None:
    """Have this process killed when ``parent`` dies (Linux; elsewhere nothing): for a
    process forked by another without exec, such as a Celery worker's embedded beat."""
    set_death_signal = _death_signal(parent)
    if set_death_signal is not None:
        set_death_signal()


def _signal_group(child: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


@dataclass
class Supervisor:
    """Runs ``programs`` (name -> command line) until stopped or past the restart limit."""

    programs: dict[str, list[str]]
    say: Callable[[str], None]
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    clock: Callable[[], float] = time.monotonic
    poll_interval: float = 0.2
    slow_stop: float = 1.0  # seconds after which those still stopping are named
    children: dict[str, subprocess.Popen] = field(default_factory=dict)
    deaths: dict[str, list[float]] = field(default_factory=dict)
    restart_at: dict[str, float] = field(default_factory=dict)
    _signals: int = 0
    # (ready, on_started, warn at): the announcement still waiting for ready() (run's doc)
    _waiting: tuple[Callable[[], bool], Callable[[], None], float] | None = None
    _ready_timeout: float = 0.0

    def run(
        self,
        on_started: Callable[[], None] | None = None,
        ready: Callable[[], bool] | None = None,
        ready_timeout: float = 120.0,
    ) -> int:
        """Start everything, supervise, stop everything; 0 when asked to stop, 1 on giving up.

        ``on_started`` is called once everything is started or, with ``ready``, once
        ``ready()`` (asked between two rounds of supervision: it must answer quickly) first
        says yes; if it has not after ``ready_timeout`` seconds, that is said once and the
        supervision goes on."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            for name in self.programs:
                self.start(name)
            if on_started is not None and ready is None:
                on_started()
            elif on_started is not None:
                self._waiting = (ready, on_started, self.clock() + ready_timeout)
                self._ready_timeout = ready_timeout
            code = self._supervise()
        finally:
            self.stop_all()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return code

    def start(self, name: str) -> None:
        child = subprocess.Popen(
            self.programs[name],
            process_group=0,
            preexec_fn=_death_signal(os.getpid()),  # safe: the supervisor runs one thread
        )
        self.children[name] = child
        self.say(f"runall: started {name} (pid {child.pid})")

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._signals += 1
        if self._signals > 1:  # asked twice: no more waiting
            for child in self.children.values():
                _signal_group(child, signal.SIGKILL)

    def _announce_when_ready(self, now: float) -> None:
        if self._waiting is None:
            return
        ready, on_started, warn_at = self._waiting
        if ready():
            self._waiting = None
            on_started()
        elif now >= warn_at:
            self._waiting = (ready, on_started, float("inf"))
            self.say(
                f"runall: not ready after {self._ready_timeout:.0f} s (still waiting); "
                "the lines above may say why"
            )

    def _supervise(self) -> int:
        while not self._signals:
            now = self.clock()
            self._announce_when_ready(now)
            for name, child in list(self.children.items()):
                if name in self.restart_at or child.poll() is None:
                    continue
                if not self._schedule_restart(name, child, now):
                    return 1
            for name, due in list(self.restart_at.items()):
                if now >= due:
                    del self.restart_at[name]
                    self.start(name)
            time.sleep(self.poll_interval)
        self.say("runall: stopping every process")
        return 0

    def _schedule_restart(self, name: str, child: subprocess.Popen, now: float) -> bool:
        """Log a death and plan the restart; False when past the limit."""
        _signal_group(child, signal.SIGKILL)  # whatever it left behind in its group
        policy = self.policy
        recent = [t for t in self.deaths.get(name, []) if now - t <= policy.window]
        recent.append(now)
        self.deaths[name] = recent
        how = describe_exit(child.returncode)
        if len(recent) > policy.max_restarts:
            self.say(
                f"runall: {name} (pid {child.pid}) {how}; giving up: it died {len(recent)} "
                f"times within {policy.window:g} s (limit {policy.max_restarts} restarts). "
                "Stopping every process."
            )
            return False
        delay = policy.backoff(len(recent))
        self.say(
            f"runall: {name} (pid {child.pid}) {how}; restart {len(recent)} of "
            f"{policy.max_restarts} within {policy.window:g} s, in {delay:g} s"
        )
        self.restart_at[name] = now + delay
        return True

    def stop_all(self) -> None:
        """SIGTERM to every child's group, SIGKILL to those still there after the timeout.
        Those still stopping after ``slow_stop`` seconds are named once, so that a wait is
        never silent."""
        live = {name: c for name, c in self.children.items() if c.poll() is None}
        for child in live.values():
            _signal_group(child, signal.SIGTERM)
        started = self.clock()
        deadline = started + self.policy.stop_timeout
        named = False
        while live and self.clock() < deadline:
            for name, child in list(live.items()):
                if child.poll() is not None:
                    _signal_group(child, signal.SIGKILL)  # whatever it left in its group
                    del live[name]
            if live and not named and self.clock() - started >= self.slow_stop:
                named = True
                self.say(
                    f"runall: waiting for {', '.join(sorted(live))} to stop "
                    f"(at most {self.policy.stop_timeout:g} s)"
                )
            if live:
                time.sleep(min(self.poll_interval, max(0.0, deadline - self.clock())))
        for child in live.values():
            if child.poll() is None:
                self.say(f"runall: pid {child.pid} did not stop within the timeout; killing it")
            _signal_group(child, signal.SIGKILL)
            child.wait()
