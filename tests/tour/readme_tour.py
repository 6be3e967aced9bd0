"""The README's tour as a program: its marked code blocks, and the system they run against.

A tour step in README.md is a ```` ```sh ```` block right after an HTML comment
``<!-- tour: <name> -->``. ``tour_blocks`` reads them in order. The ``start`` block says how
the system is started (``ARMADA_CONFIG=... make run``); ``TourSystem`` starts it the same
way, ``manage.py runall`` (what ``make run`` runs once the install is done) with that
environment, on the embedded default (SQLite and the file-system broker: no
``DATABASE_URL`` or ``REDIS_URL``), with a var dir and a home of its own and free ports;
``run_block`` then runs every other block with bash, in the repository, as a person would
in their second terminal.

The block reading needs nothing but the standard library, so that ``bench/tour_time.py``
can use it before the project is installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKED_BLOCK = re.compile(r"<!-- tour: ([a-z0-9-]+) -->\n```sh\n(.*?)^```", re.S | re.M)
MARKER = re.compile(r"<!-- tour: ([^>]*?) -->")
#: Variables of the caller that must not reach the tour: they would point it at another
#: database, broker, server, configuration or login.
FOREIGN_ENV = re.compile(r"^(DATABASE_URL|REDIS_URL|ARMADA_.*|ARMADACTL_.*)$")


class TourError(Exception):
    """The README's tour cannot be read as a program."""


@dataclass(frozen=True)
class Block:
    name: str
    code: str


def tour_blocks(readme: str) -> list[Block]:
    """The marked blocks of ``readme`` in order. Every marker must be followed at once by an
    ``sh`` block, and each name may be used once."""
    blocks = [Block(m.group(1), m.group(2)) for m in MARKED_BLOCK.finditer(readme)]
    markers = MARKER.findall(readme)
    if len(markers) != len(blocks):
        found = {b.name for b in blocks}
        stray = [name for name in markers if name not in found]
        raise TourError(f"tour markers not followed by a ```sh block: {stray}")
    names = [b.name for b in blocks]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise TourError(f"tour steps named more than once: {repeated}")
    return blocks


def start_environment(block: Block) -> dict[str, str]:
    """The variables the ``start`` block sets before ``make run``; it must say nothing else."""
    words = shlex.split(block.code, comments=True)
    assignments = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        key, _, value = words.pop(0).partition("=")
        assignments[key] = value
    if words != ["make", "run"]:
        raise TourError(f"the start block must be `[VAR=value ...] make run`, not {block.code!r}")
    return assignments


def make_run_command(makefile: str) -> list[str]:
    """The command of ``make run`` once its prerequisites (the install) are done."""
    match = re.search(r"^run:.*\n\t(.+)$", makefile, re.M)
    if not match:
        raise TourError("the Makefile has no `run` recipe")
    return shlex.split(match.group(1))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_environment(base: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in base.items() if not FOREIGN_ENV.match(k)}


def stop_group(proc: subprocess.Popen, *, first: int = signal.SIGINT, grace: float = 60) -> None:
    """Stop ``proc`` and everything in its process group: ``first`` (Ctrl-C), then SIGKILL
    for whatever is left after ``grace`` seconds."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, first)
            proc.wait(timeout=grace)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait(timeout=30)


def remove_local_pods(state_dir: Path) -> None:
    """Kill what is left of the local backend's pods under ``state_dir`` (after a failure
    mid-job) and remove their cgroups, which outlive the executor by design (a kept pod's
    stays until the pod is deleted)."""
    for pod_file in state_dir.glob("pods/*/pod.json"):
        try:
            cgroups = json.loads(pod_file.read_text()).get("cgroups") or {}
        except (OSError, ValueError):
            continue
        dirs = [*(cgroups.get("containers") or {}).values(), cgroups.get("pod"), cgroups.get("cpu")]
        for cgroup in [Path(d) for d in dirs if d]:
            deadline = time.monotonic() + 10
            while cgroup.is_dir():
                with contextlib.suppress(OSError):
                    for pid in (cgroup / "cgroup.procs").read_text().split():
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(int(pid), signal.SIGKILL)
                    cgroup.rmdir()
                    break
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)


class TourSystem:
    """``manage.py runall`` started as the README's ``start`` block says, in ``workdir``."""

    def __init__(self, workdir: Path, start: Block, *, root: Path = ROOT) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.var = workdir / "var"
        self.home = workdir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "runall.log"
        bin_dir = str(Path(sys.executable).parent)
        self.env = clean_environment(os.environ)
        self.env.update(
            PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            HOME=str(self.home),
            ARMADA_DEV="1",  # as make sets it
            ARMADA_VAR_DIR=str(self.var),
            ARMADA_PORT=str(self.port),
            ARMADA_GRPC_ADDR=f"127.0.0.1:{free_port()}",
            ARMADA_URL=self.url,
            PYTHONUNBUFFERED="1",
            **start_environment(start),
        )
        command = make_run_command((root / "Makefile").read_text())
        if command[1:] != ["manage.py", "runall"]:
            raise TourError(f"make run no longer runs `python manage.py runall`: {command}")
        self.proc: subprocess.Popen | None = None
        self.command = [sys.executable, *command[1:]]

    def start(self) -> None:
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                self.command,
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def ready(self) -> bool:
        """Whether runall has announced itself and the web process answers; raises if
        runall has exited."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise TourError(f"runall exited with {self.proc.returncode}\n{self.log()[-6000:]}")
        if "Armada is up at" not in self.log():
            return False
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=10) as answer:
                return answer.status == 200
        except OSError:
            return False

    def run_block(self, block: Block, *, timeout: float) -> subprocess.CompletedProcess:
        """Run ``block`` with bash (stopping at the first failing command, pipes included)
        in the repository; the block and everything it started are killed after
        ``timeout`` seconds."""
        proc = subprocess.Popen(
            ["bash", "-e", "-o", "pipefail", "-c", block.code],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(proc, first=signal.SIGTERM, grace=5)
            out, err = proc.communicate()
            err += f"\n(killed: still running after {timeout:.0f} s)"
            return subprocess.CompletedProcess(proc.args, -signal.SIGKILL, out, err)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def armadactl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(Path(sys.executable).with_name("armadactl")), *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def stop(self) -> None:
        """Ctrl-C runall (it stops its processes), SIGKILL its group if it hangs, then clear
        away the pods the local executor left."""
        if self.proc is not None:
            stop_group(self.proc)
        for state_dir in (self.var / "executors").glob("*"):
            remove_local_pods(state_dir)


def check_oom_retries(failed: list[dict]) -> None:
    """What the tour promises of the OOM job's two failed runs: categorised oom, each
    retried by rule 5 of ``ml-training-retries`` with its memory grown by half."""
    assert [(r["reason"], r["failureCategory"], r["retryable"]) for r in failed] == [
        ("OOMKilled", "oom", True)
    ] * 2
    decisions = [r["decision"] for r in failed]
    assert [(d["decision"], d["policy"], d["rule"]) for d in decisions] == [
        ("retry", "ml-training-retries", 5)
    ] * 2
    assert [(d["retriesUsed"], d["retryLimit"]) for d in decisions] == [(0, 3), (1, 3)]
    assert [d["reason"].split(" (")[0] for d in decisions] == ["retry 1 of 3", "retry 2 of 3"]
    assert [
        (d["mutation"]["memory"]["before"], d["mutation"]["memory"]["after"]) for d in decisions
    ] == [
        ("64Mi", "96Mi"),
        ("96Mi", "144Mi"),
    ]
