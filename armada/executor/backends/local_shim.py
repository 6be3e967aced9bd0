"""The per-pod shim of the ``local`` executor backend (see ``local.py`` for the design).

The backend starts one shim per pod, as ``python -I -S local_shim.py <pod dir>`` in a session
of its own, so that the pod outlives the executor worker. The shim reads the resolved plan
from ``pod.json``, runs the init containers one after another and then the containers side by
side, and keeps ``status.json`` up to date: when each container started and ended, its exit
code, whether the kernel OOM-killed it, its termination message, and finally ``done``. It
enforces ``activeDeadlineSeconds`` and carries out deletions asked for through
``delete.json`` (SIGTERM to each container's main process, SIGKILL to all of its processes
once the grace period is over).

This file is run by path and must import nothing but the standard library. The pod
directory's files and the helpers both sides use are in ``local_pod_files.py``, which the
shim loads by its path when it runs as a script.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.util
import os
import resource
import select
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

READY = b"ready\n"  # written on the shim's stdout once status.json exists
LEFTOVER_WAIT_SECONDS = 5.0  # how long the shim waits for killed stragglers at the end
START_ERROR_EXIT_CODE = 128  # what container runtimes report for a process that never ran
_PR_SET_CHILD_SUBREAPER = 36


def _sibling(name: str) -> ModuleType:
    """The module ``name`` of this file's folder, loaded from its file: run by path with
    ``-I -S``, the shim has no package on its path."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __package__:
    from armada.executor.backends import local_pod_files as files
else:
    files = _sibling("local_pod_files")


def _noop(signum: int, frame: Any) -> None:
    """A handler, so that the signal wakes the loop through the wakeup fd."""


def _write_pid(path: str, pid: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, pid)
    finally:
        os.close(fd)


def _enter(join: list[str], join_optional: list[str], rlimit_as: int | None) -> None:
    """Runs in the container's process between fork and exec: joins its cgroups (the
    memory one is required, cpu is best effort), applies the RLIMIT_AS fallback and undoes
    the signals the shim ignores (ignored signals survive exec)."""
    pid = str(os.getpid()).encode()
    for path in join:
        _write_pid(path, pid)
    for path in join_optional:
        with contextlib.suppress(OSError):
            _write_pid(path, pid)
    if rlimit_as:
        resource.setrlimit(resource.RLIMIT_AS, (rlimit_as, rlimit_as))
    for sig in (signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


class _StartError(Exception):
    pass


def _start_error_message(plan: dict[str, Any], exc: BaseException) -> str:
    program = plan["argv"][0]
    if isinstance(exc, FileNotFoundError):
        return f"cannot run {program!r}: executable file not found"
    if isinstance(exc, OSError):
        return f"cannot run {program!r}: {exc.strerror or exc}"
    if isinstance(exc, subprocess.SubprocessError):
        return f"cannot start {program!r}: setting up its cgroup or limits failed ({exc})"
    return f"cannot start {program!r}: {exc}"


class _Container:
    def __init__(self, plan: dict[str, Any], init: bool) -> None:
        self.plan = plan
        self.pid = 0
        self.stopped_by = ""  # why the shim sent SIGTERM: deleted, deadline or terminated
        self.record: dict[str, Any] = {
            "name": plan["name"],
            "init": init,
            "pid": None,
            "start_ticks": None,
            "started_at": None,
            "finished_at": None,
            "exit_code": None,
            "signal": None,
            "reason": "",
            "message": "",
            "oom_kills": None,
        }


class Shim:
    """Runs one pod to its end; everything it learns goes into ``status.json``."""

    def __init__(self, pod_dir: Path) -> None:
        self.dir = pod_dir
        doc = files.read_json(pod_dir / files.POD_FILE)
        if not isinstance(doc, dict):
            raise SystemExit(f"{pod_dir / files.POD_FILE} is missing or unreadable")
        self.plan: dict[str, Any] = doc["plan"]
        self.version: int | None = self.plan.get("cgroup_version")
        self.grace = float(self.plan.get("grace_seconds", 30.0))
        deadline = self.plan.get("deadline_seconds")
        self.deadline = time.monotonic() + float(deadline) if deadline else None
        self.status: dict[str, Any] = {
            "shim_pid": os.getpid(),
            "started_at": time.time(),
            "running_at": None,
            "finished_at": None,
            "done": False,
            "deadline_exceeded": False,
            "stop": "",
            "containers": [],
        }
        self.started: list[_Container] = []
        self.running: dict[int, _Container] = {}
        # Kept for the shim's life: a collected Popen could otherwise be reaped behind our back.
        self.procs: list[subprocess.Popen[bytes]] = []
        self.stop_reason = ""
        self.kill_at: float | None = None
        self.last_kill = 0.0
        self.term_requested = False
        self.wake_r = -1

    def save(self) -> None:
        files.write_json(self.dir / files.STATUS_FILE, self.status)

    # --- the event loop -------------------------------------------------------------------

    def setup(self) -> None:
        # Orphaned grandchildren of the containers come to us and are reaped here.
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        self.wake_r = r
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, _noop)
        signal.signal(signal.SIGUSR1, _noop)  # the backend's "look at delete.json"
        signal.signal(signal.SIGTERM, self._on_sigterm)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        self.term_requested = True

    def sleep(self, timeout: float) -> None:
        """Until a signal arrives (a child ended, a deletion was asked for) or ``timeout``."""
        with contextlib.suppress(InterruptedError):
            select.select([self.wake_r], [], [], max(0.0, timeout))
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_r, 4096):
                pass

    def timeout(self) -> float:
        t = 1.0  # a safety net; signals normally wake us sooner
        if self.deadline is not None and not self.stop_reason:
            t = min(t, self.deadline - time.monotonic())
        if self.kill_at is not None:
            left = self.kill_at - time.time()
            t = min(t, left if left > 0 else 0.2)
        return max(t, 0.0)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            container = self.running.pop(pid, None)
            if container is not None:
                self.finished(container, status)

    def wait_for_all(self) -> None:
        while True:
            self.reap()
            if not self.running:
                return
            self.check_requests()
            self.sleep(self.timeout())

    def check_requests(self) -> None:
        """Deletion, SIGTERM to the shim, the deadline; SIGKILL once the grace is over."""
        now = time.time()
        request = files.read_json(self.dir / files.DELETE_FILE)
        if isinstance(request, dict):
            kill_at = float(request.get("kill_at", now))
            if not self.stop_reason:
                self.begin_stop("deleted", kill_at)
            elif self.kill_at is None or kill_at < self.kill_at:
                self.kill_at = kill_at  # a second deletion may shorten the grace
        elif not self.stop_reason and self.term_requested:
            self.begin_stop("terminated", now + self.grace)
        elif (
            not self.stop_reason and self.deadline is not None and time.monotonic() >= self.deadline
        ):
            self.status["deadline_exceeded"] = True
            self.begin_stop("deadline", now + self.grace)
        if self.kill_at is not None and now >= self.kill_at and now - self.last_kill >= 0.2:
            self.last_kill = now
            for container in list(self.running.values()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(container.pid, signal.SIGKILL)
                self.kill_rest(container)

    def begin_stop(self, reason: str, kill_at: float) -> None:
        """SIGTERM to the main process of every running container, as the kubelet does."""
        self.stop_reason = reason
        self.status["stop"] = reason
        self.kill_at = kill_at
        for container in self.running.values():
            container.stopped_by = reason
            with contextlib.suppress(ProcessLookupError):
                os.kill(container.pid, signal.SIGTERM)
        self.save()

    # --- containers -----------------------------------------------------------------------

    def start(self, plan: dict[str, Any], init: bool) -> _Container:
        container = _Container(plan, init)
        self.started.append(container)
        record = container.record
        record["started_at"] = time.time()
        self.status["containers"].append(record)
        try:
            cwd = plan["cwd"]
            if not os.path.isdir(cwd):
                raise _StartError(f"workingDir {cwd} is not a directory")
            with open(plan["log"], "ab") as log:
                proc = subprocess.Popen(
                    plan["argv"],
                    env=plan["env"],
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    process_group=0,
                    close_fds=True,
                    preexec_fn=functools.partial(
                        _enter, plan["join"], plan["join_optional"], self.plan.get("rlimit_as")
                    ),
                )
        except (OSError, ValueError, subprocess.SubprocessError, _StartError) as exc:
            message = _start_error_message(plan, exc)
            record.update(
                finished_at=time.time(),
                exit_code=START_ERROR_EXIT_CODE,
                reason="StartError",
                message=message,
            )
            with contextlib.suppress(OSError), open(plan["log"], "ab") as log:
                log.write(f"armada: {message}\n".encode())
            self.save()
            return container
        self.procs.append(proc)
        container.pid = proc.pid
        record["pid"] = proc.pid
        record["start_ticks"] = files.start_ticks(proc.pid)
        self.running[proc.pid] = container
        self.save()
        return container

    def kill_rest(self, container: _Container) -> None:
        """SIGKILL whatever is left of a container: its cgroup and its process group (what
        the end of a container's pid namespace does)."""
        files.kill_cgroup(container.plan.get("cgroup"))
        if container.pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(container.pid, signal.SIGKILL)

    def finished(self, container: _Container, status: int) -> None:
        record = container.record
        record["finished_at"] = time.time()
        code = os.waitstatus_to_exitcode(status)
        if code < 0:
            record["signal"] = -code
            code = 128 - code
        record["exit_code"] = code
        self.kill_rest(container)
        cgroup = container.plan.get("cgroup")
        oom = False
        if cgroup and self.version:
            kills = files.oom_kills(cgroup, self.version)
            record["oom_kills"] = kills
            if kills is not None:
                oom = kills > 0
            else:  # an old kernel without the counter: a SIGKILL after hitting the limit
                oom = record["signal"] == signal.SIGKILL and files.failcnt(cgroup) > 0
        if code == 0:
            reason = "Completed"
        elif oom:
            reason = "OOMKilled"
        elif container.stopped_by == "deadline":
            reason = "DeadlineExceeded"
        else:
            reason = "Error"
        record["reason"] = reason
        record["message"] = files.termination_message(
            container.plan, record["started_at"], failed=code != 0
        )
        self.save()

    def clear_leftovers(self) -> None:
        """SIGKILL anything the containers left behind and wait (a little) for it to go, so
        that a finished pod can be removed at once."""
        give_up = time.monotonic() + LEFTOVER_WAIT_SECONDS
        while True:
            left = False
            for container in self.started:
                if not container.pid:
                    continue
                cgroup = container.plan.get("cgroup")
                if cgroup:
                    left = files.kill_cgroup(cgroup) or left
                    with contextlib.suppress(OSError):
                        os.killpg(container.pid, signal.SIGKILL)
                else:
                    try:
                        os.killpg(container.pid, signal.SIGKILL)
                        left = True
                    except OSError:
                        pass
            self.reap()
            if not left or time.monotonic() > give_up:
                return
            time.sleep(0.02)

    # --- the pod --------------------------------------------------------------------------

    def run(self) -> None:
        self.setup()
        self.save()
        os.write(1, READY)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)

        ok = True
        for plan in self.plan["init_containers"]:
            self.check_requests()
            if self.stop_reason:
                ok = False
                break
            container = self.start(plan, init=True)
            self.wait_for_all()
            if container.record["exit_code"] != 0:
                ok = False
                break
        if ok:
            self.check_requests()
        if ok and not self.stop_reason:
            main = [self.start(plan, init=False) for plan in self.plan["containers"]]
            started = [c.record["started_at"] for c in main if c.pid]
            if started:
                self.status["running_at"] = min(started)
            self.save()
            self.wait_for_all()
        ends = [c.record["finished_at"] for c in self.started if c.record["finished_at"]]
        self.status["finished_at"] = max(ends) if ends else time.time()
        self.clear_leftovers()
        self.status["done"] = True
        self.save()

    def abort(self, exc: BaseException) -> None:
        """The shim itself failed: kill the pod (nobody could account for it) and say why."""
        traceback.print_exc()
        for container in self.started:
            with contextlib.suppress(OSError):
                if container.pid and container.record["finished_at"] is None:
                    os.kill(container.pid, signal.SIGKILL)
            self.kill_rest(container)
        self.status["shim_error"] = f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(OSError):
            self.save()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} POD_DIR", file=sys.stderr)
        return 2
    shim = Shim(Path(argv[1]))
    try:
        shim.run()
    except BaseException as exc:
        shim.abort(exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
