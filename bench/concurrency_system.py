"""The system under test of ``bench/concurrency.py``: each process kind started as production
starts it (its own process group, its own log), restarted when it dies as a supervisor would,
and killed with ``kill -9`` on purpose for the fault runs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CELERY = [PY, "-m", "celery", "-A", "armada.celery"]
WORKER = ["worker", "--pool=solo", "--without-mingle", "--without-gossip", "--loglevel", "INFO"]


def commands(port: int, web_workers: int, executor_id: str) -> dict[str, list[str]]:
    """The production layout (README "Processes"): web with ``web_workers`` uvicorn workers,
    the scheduler worker, beat on its own under its lease, one executor worker."""
    from armada.webserver import WEB_COMMAND

    web = [PY, "-m", *WEB_COMMAND, "--host", "127.0.0.1", "--port", str(port)]
    return {
        "web": [*web, "--workers", str(web_workers), "--no-access-log", "--log-level", "warning"],
        "scheduler": [*CELERY, *WORKER, "-Q", "scheduler", "-n", "scheduler@%h"],
        "beat": [*CELERY, "beat", "-S", "armada.beat:LeasedScheduler", "--loglevel", "INFO"],
        "executor": [
            *CELERY,
            *WORKER,
            "-Q",
            f"executor.{executor_id}",
            "-n",
            f"executor-{executor_id}@%h",
        ],
    }


@dataclass
class Service:
    name: str
    command: list[str]
    proc: subprocess.Popen | None = None
    log: IO | None = None
    unexpected_exits: list[float] = field(default_factory=list)
    kills: list[float] = field(default_factory=list)


class System:
    """Starts, watches and restarts the services; ``kill9`` kills one kind's whole process
    group (uvicorn's master and its workers together) and starts it again."""

    def __init__(self, env: dict[str, str], logs: Path, services: dict[str, list[str]]):
        self.env = env
        self.logs = logs
        self.services = {name: Service(name, command) for name, command in services.items()}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.watcher = threading.Thread(target=self._supervise, daemon=True)

    def start_all(self) -> None:
        for service in self.services.values():
            self._start(service)
        self.watcher.start()

    def _start(self, service: Service) -> None:
        if service.log is None:
            service.log = open(self.logs / f"{service.name}.log", "a")  # noqa: SIM115
        service.proc = subprocess.Popen(
            service.command,
            env=self.env,
            cwd=ROOT,
            stdout=service.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a process group of its own, for kill -9 and stop
        )

    def _supervise(self) -> None:
        while not self.stopping.wait(0.5):
            with self.lock:
                for service in self.services.values():
                    if service.proc is not None and service.proc.poll() is not None:
                        service.unexpected_exits.append(time.time())
                        print(f"  ! {service.name} exited ({service.proc.returncode}); restarting")
                        self._start(service)

    def kill9(self, name: str) -> float:
        """``kill -9`` of every process of ``name``, then a restart; returns the kill's time."""
        with self.lock:
            service = self.services[name]
            assert service.proc is not None
            killed_at = time.time()
            _signal_group(service.proc, signal.SIGKILL)
            service.proc.wait()
            service.kills.append(killed_at)
            self._start(service)
        return killed_at

    def pids(self, name: str) -> list[int]:
        """The pids of ``name``'s process group (for uvicorn, the master and its workers)."""
        proc = self.services[name].proc
        if proc is None:
            return []
        out = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True)
        return [int(pid) for pid in out.stdout.split()]

    def cpu_seconds(self, name: str) -> float:
        """CPU time used so far by the running incarnation of ``name`` (all its processes)."""
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for pid in self.pids(name):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
        return total

    def stop_all(self) -> None:
        self.stopping.set()
        if self.watcher.is_alive():
            self.watcher.join(timeout=5)
        with self.lock:
            for service in self.services.values():
                if service.proc is not None and service.proc.poll() is None:
                    _signal_group(service.proc, signal.SIGTERM)
            for service in self.services.values():
                if service.proc is None:
                    continue
                try:
                    service.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    _signal_group(service.proc, signal.SIGKILL)
                    service.proc.wait()
                if service.log is not None:
                    service.log.close()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from ``/proc/stat``."""
    ticks = os.sysconf("SC_CLK_TCK")
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values) - idle) / ticks, sum(values) / ticks


def wait_until_answering(url: str, timeout: float = 180.0) -> float:
    """Seconds until ``GET url`` answers 200; a refused or slow answer is not yet."""
    import requests

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if requests.get(url, timeout=10).status_code == 200:
                return time.monotonic() - started
        except requests.RequestException:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")
