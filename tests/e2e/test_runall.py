"""``manage.py runall`` (what ``make run`` starts) on the embedded default: SQLite and the
file-system broker, no servers. It must come up, run jobs, survive a half-written message,
restart any process that dies (and give up past its limit), stop everything on Ctrl-C, and
leave no process behind even when it is itself killed with ``kill -9``."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml

from tests.e2e.conftest import _free_port
from tests.test_supervisor import alive
from tests.waiting import answers, wait_until

pytestmark = [pytest.mark.e2e]
ROOT = Path(__file__).resolve().parents[2]
PROCESSES = ("web", "grpc", "executor-api", "scheduler", "beat", "executor local")
STARTED = re.compile(r"runall: started (.+?) \(pid (\d+)\)")


def process_groups_alive(pgids: set[int]) -> list[int]:
    """The live processes (not zombies) in any of the process groups ``pgids``: a child of a
    supervisor runs in a group of its own, with whatever it forks (an executor's embedded
    beat, say)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if fields[0] not in ("Z", "X") and int(fields[2]) in pgids:
            found.append(int(entry.name))
    return found


class Runall:
    """``manage.py runall`` in a subprocess, with its output in a file."""

    def __init__(self, tmp_path: Path, *args: str, port: int | None = None) -> None:
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.var = tmp_path / "var"
        config = yaml.safe_load((ROOT / "config" / "armada.yaml").read_text())
        config["scheduling"]["cyclePeriod"] = "300ms"
        config["executors"][0]["tickPeriod"] = "300ms"
        self.grpc_target = f"127.0.0.1:{_free_port()}"
        config["grpc"]["port"] = int(self.grpc_target.rpartition(":")[2])
        self.executor_api_target = f"127.0.0.1:{_free_port()}"
        config["executorApi"] = {"port": int(self.executor_api_target.rpartition(":")[2])}
        (tmp_path / "armada.yaml").write_text(yaml.safe_dump(config))
        env = {
            k: v
            for k, v in os.environ.items()
            if k
            not in (
                "DATABASE_URL",
                "REDIS_URL",
                "ARMADA_ADMIN_PASSWORD",
                "ARMADA_GRPC_ADDR",
                "ARMADA_EXECUTOR_API_ADDR",
                "ARMADA_EXECUTOR_TOKEN",
            )
        }
        env.update(
            ARMADA_DEV="1",
            ARMADA_VAR_DIR=str(self.var),
            ARMADA_CONFIG=str(tmp_path / "armada.yaml"),
            PYTHONUNBUFFERED="1",
        )
        self.log_path = tmp_path / "runall.log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "manage.py", "runall", "--port", str(self.port), *args],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.auth: tuple[str, str] = ("admin", "")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, what: str, predicate, timeout: float = 90.0):
        return wait_until(
            what, predicate, timeout=timeout, interval=0.3, details=lambda: self.log()[-6000:]
        )

    def wait_up(self) -> None:
        def up() -> bool:
            assert self.proc.poll() is None, self.log()
            return "Armada is up at" in self.log()

        self.wait_for("runall to start", up)
        password = re.search(r"admin user: admin / password: (\S+)", self.log()).group(1)
        self.auth = ("admin", password)
        self.wait_for("the API", lambda: self.answers("/api/v1/queues"))

    def answers(self, path: str) -> bool:
        return answers(self.url + path, auth=self.auth)

    def executor_alive(self, executor_id: str) -> bool:
        found = requests.get(f"{self.url}/api/v1/executors", auth=self.auth, timeout=30)
        return any(e["id"] == executor_id and e["alive"] for e in found.json())

    def pids(self) -> dict[str, int]:
        """The latest pid of each process runall has started."""
        return {name: int(pid) for name, pid in STARTED.findall(self.log())}

    def all_pids(self) -> list[int]:
        return [int(pid) for _, pid in STARTED.findall(self.log())]

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail("runall did not stop within 60s of Ctrl-C")

    def run_hello_jobs(self) -> None:
        """Submit examples/hello.yaml to a queue ``demo`` and see it through."""
        created = requests.post(
            f"{self.url}/api/v1/queues", json={"name": "demo"}, auth=self.auth, timeout=30
        )
        assert created.status_code in (201, 409), created.text
        submitted = requests.post(
            f"{self.url}/api/v1/jobs",
            data=(ROOT / "examples" / "hello.yaml").read_bytes(),
            headers={"Content-Type": "application/yaml"},
            auth=self.auth,
            timeout=30,
        )
        assert submitted.status_code == 201, submitted.text
        job_ids = submitted.json()["jobIds"]

        def finished() -> dict[str, str] | None:
            states = {
                j: requests.get(f"{self.url}/api/v1/jobs/{j}", auth=self.auth, timeout=30).json()[
                    "state"
                ]
                for j in job_ids
            }
            return states if all(s in ("succeeded", "failed") for s in states.values()) else None

        # A restarted scheduler waits for the lease of the one killed to lapse (30 s).
        states = self.wait_for("the jobs to finish", finished, timeout=150)
        assert sorted(states.values()) == ["failed", "succeeded", "succeeded"], states


@pytest.fixture
def runall(tmp_path):
    started: list[Runall] = []

    def start(*args: str, port: int | None = None) -> Runall:
        started.append(Runall(tmp_path, *args, port=port))
        return started[-1]

    yield start
    for r in started:
        r.stop()
        # Whatever a failed test left of the children (by process group, as runall stops them).
        for pid in process_groups_alive(set(r.all_pids())):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def test_runall_on_the_embedded_default_runs_a_job_set_and_stops_cleanly(runall):
    r = runall()
    r.wait_up()
    output = r.log()
    assert f"{r.url}/" in output
    assert (r.var / "admin-password").read_text().strip() == r.auth[1]
    assert "armadactl login --username admin" in output  # how to get a token
    assert (r.var / "armada.sqlite3").exists()
    assert set(r.pids()) == set(PROCESSES)

    # The executor reaches the control plane through the executor API, with the credential
    # and the file runall made for it under its state directory.
    assert f"The executor API at {r.executor_api_target}" in output
    state = r.var / "executors" / "local"
    assert (state / "credential").stat().st_mode & 0o777 == 0o600
    executor_file = yaml.safe_load((state / "executor.yaml").read_text())
    assert executor_file["id"] == "local"
    assert executor_file["api"] == {
        "address": r.executor_api_target,
        "tokenFile": str((state / "credential").resolve()),
    }

    # Half-written messages on the workers' queues are set aside; nobody dies of them. The
    # scheduler's queue is on the control plane's broker, the executor's on its own broker
    # under its state directory.
    broker = r.var / "broker"
    executor_broker = state / "broker"
    r.wait_for("the executor's broker", (executor_broker / "queue").is_dir)
    (executor_broker / "queue" / "0_half.executor.local.msg").write_bytes(
        b'{"body": "eyJ',
    )
    (broker / "queue" / "0_half.scheduler.msg").write_bytes(b"")

    def set_aside(folder: Path) -> set[str]:
        return {p.name for p in folder.iterdir()} if folder.is_dir() else set()

    r.wait_for(
        "the bad messages to be set aside",
        lambda: (
            set_aside(broker / "bad") == {"0_half.scheduler.msg"}
            and set_aside(executor_broker / "bad") == {"0_half.executor.local.msg"}
        ),
    )
    r.run_hello_jobs()
    assert "skipped an undecodable message on queue 'executor.local'" in r.log()
    assert "skipped an undecodable message on queue 'scheduler'" in r.log()
    assert requests.get(f"{r.url}/admin/login/", timeout=10).status_code == 200
    assert requests.get(f"{r.url}/static/admin/css/base.css", timeout=10).status_code == 200

    pids = r.all_pids()
    assert len(pids) == len(PROCESSES)  # nothing was restarted
    r.stop()
    assert r.proc.returncode == 0, r.log()[-3000:]
    # Every child is gone with it, and what each forked: nothing listens on the port any more.
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{r.url}/healthz", timeout=2)
    assert [pid for pid in pids if alive(pid)] == []
    assert process_groups_alive(set(pids)) == []


def test_runall_restarts_whatever_is_killed_and_the_system_still_runs_jobs(runall):
    r = runall()
    r.wait_up()
    for name in PROCESSES:
        pid = r.pids()[name]
        os.kill(pid, signal.SIGKILL)
        line = f"runall: {name} (pid {pid}) was killed by SIGKILL; restart 1 of 5 within 60 s"
        r.wait_for(f"runall to see {name} die", lambda line=line: line in r.log())
        r.wait_for(f"{name} to be restarted", lambda n=name, p=pid: r.pids()[n] != p)
        assert alive(r.pids()[name])
        # Nothing the killed process had forked outlives it (the executor's embedded beat
        # would otherwise keep sending ticks beside the restarted executor's own).
        r.wait_for(
            f"what {name} had forked to go with it", lambda p=pid: not process_groups_alive({p})
        )
    assert r.proc.poll() is None
    r.wait_for("the API after the restarts", lambda: r.answers("/api/v1/queues"))
    r.run_hello_jobs()
    assert all(alive(pid) for pid in r.pids().values())


def test_kill_9_of_runall_leaves_no_process_behind(runall):
    r = runall()
    r.wait_up()
    # Every process is at work, the executor's embedded beat included: it has ticked, and
    # the executor registered through the executor API.
    r.wait_for("the executor to register", lambda: r.executor_alive("local"))
    pids = r.all_pids()
    assert len(pids) == len(PROCESSES)
    assert all(alive(pid) for pid in pids)
    r.proc.send_signal(signal.SIGKILL)
    r.proc.wait(timeout=30)
    r.wait_for(
        "every child to die with runall",
        lambda: not [pid for pid in pids if alive(pid)],
        timeout=30,
    )
    # And what the children forked (each child's process group is its own, named by its pid).
    r.wait_for(
        "every process the children started to die with them",
        lambda: not process_groups_alive(set(pids)),
        timeout=30,
    )
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{r.url}/healthz", timeout=2)


def test_runall_gives_up_past_its_restart_limit_and_stops_everything(runall):
    with socket.socket() as taken:  # web cannot bind its port: it dies at every start
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        r = runall("--max-restarts", "2", port=taken.getsockname()[1])
        try:
            r.proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            pytest.fail("runall did not give up\n" + r.log()[-6000:])
    output = r.log()
    assert r.proc.returncode == 1, output[-3000:]
    assert re.search(r"runall: web \(pid \d+\) exited with code \d+; restart 2 of 2", output)
    assert re.search(
        r"runall: web \(pid \d+\) exited with code \d+; giving up: it died 3 times within "
        r"60 s \(limit 2 restarts\)\. Stopping every process\.",
        output,
    ), output[-3000:]
    assert [pid for pid in r.all_pids() if alive(pid)] == []
