"""Benchmark of restarts (not a test): how soon each process kind serves after it starts, and
how soon leases flow again after the scheduler's or beat's process is killed with SIGKILL.

On a throw-away PostgreSQL database and Redis database:
- web: the production web command (uvicorn, ``armada.webserver.WEB_COMMAND``) started
  ``--repeat`` times; the time from its start to the first answered ``GET /api/v1/queues``
  (a token's call, reading the database);
- grpc: ``python -m armada.grpcserver`` likewise, to the first answered ``GetQueues`` call
  (``armada_client``, the same token);
- scheduler: an active scheduler worker and a standby in a PID namespace of its own (as in
  another container, where the active one's death cannot be seen and only the lease's expiry
  tells), with beat and queued jobs leased at 50 a second onto registered nodes; the active
  worker is killed (SIGKILL) and the time to the next lease is measured;
- beat: the same with two beats, the sending one killed.

Prints each measurement and the median. ``--tree`` runs another checkout's code (e.g. a
``git worktree`` of an earlier commit) for the "before" figures.

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_restart \\
       REDIS_URL=redis://127.0.0.1:6379/12 .venv/bin/python bench/restart.py [--tree PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = """
scheduling:
  cyclePeriod: 1s
  maximumSchedulingRate: 50
  maximumSchedulingBurst: 50
"""
SEED = """
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from armada.models import Executor, Node, Queue
from armada.services.submit import job_submit
from armada.services.tokens import token_create
now = timezone.now()
user = get_user_model().objects.create_superuser("bench", "b@example.com", "x")
Queue.objects.create(name="q", owners=["bench"], created_at=now, updated_at=now)
ex = Executor.objects.create(id="ex", pool="default", backend="fake", registered_at=now,
                             last_heartbeat=now + timedelta(days=1))
Node.objects.bulk_create([Node(executor=ex, name=f"n{i}", pool="default",
    labels={"kubernetes.io/hostname": f"n{i}"}, allocatable={"cpu": 64000, "memory": 2**40 * 1000},
    last_seen=now) for i in range(200)])
spec = {"priority": 1, "podSpec": {"containers": [{"name": "m", "image": "b",
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                      "limits": {"cpu": "100m", "memory": "64Mi"}}}]}}
for b in range(20):
    job_submit(actor=user, data={"queue": "q", "jobSetId": "s", "jobs": [spec] * 1000}, now=now)
print(token_create(user=user, name="bench", expires_at=None, now=now).key)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bench:
    def __init__(self, tree: Path, repeat: int) -> None:
        self.tree = tree
        self.repeat = repeat
        self.var = Path(tempfile.mkdtemp(prefix="armada-restart-"))
        (self.var / "armada.yaml").write_text(CONFIG)
        self.env = {
            **os.environ,
            "ARMADA_DEV": "1",
            "ARMADA_VAR_DIR": str(self.var),
            "ARMADA_CONFIG": str(self.var / "armada.yaml"),
            "PYTHONPATH": str(tree),
            "LOG_LEVEL": "WARNING",
        }
        self.processes: list[subprocess.Popen] = []

    def run(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, *args], cwd=self.tree, env=self.env, check=True, **kwargs
        )

    def start(self, args: list[str], *, namespace: bool = False) -> subprocess.Popen:
        prefix = ["unshare", "--pid", "--fork", "--kill-child"] if namespace else []
        process = subprocess.Popen(
            [*prefix, *args],
            cwd=self.tree,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                self.kill(process)
        shutil.rmtree(self.var, ignore_errors=True)

    def setup(self) -> None:
        """A new database (DATABASE_URL's, dropped first) with the schema and the seed."""
        import psycopg

        url = self.env["DATABASE_URL"]
        base, _, name = url.rpartition("/")
        with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
        self.run("manage.py", "migrate", "-v0")
        out = self.run("manage.py", "shell", "-c", SEED, capture_output=True, text=True).stdout
        self.token = out.strip().splitlines()[-1]

    # --- serving --------------------------------------------------------------------------

    def web_start(self) -> float:
        port = free_port()
        from armada.webserver import WEB_COMMAND

        args = [sys.executable, "-m", *WEB_COMMAND, "--host", "127.0.0.1", "--port", str(port)]
        started = time.monotonic()
        process = self.start([*args, "--no-access-log"])
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v1/queues",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        try:
            while True:
                try:
                    with urllib.request.urlopen(request, timeout=5) as answer:
                        if answer.status == 200 and json.load(answer):
                            return time.monotonic() - started
                except OSError:
                    time.sleep(0.02)
        finally:
            self.kill(process)

    def grpc_start(self) -> float:
        import grpc
        from armada_client.armada import submit_pb2, submit_pb2_grpc

        port = free_port()
        started = time.monotonic()
        process = self.start(
            [sys.executable, "-m", "armada.grpcserver", "--address", f"127.0.0.1:{port}"]
        )
        try:
            while True:
                channel = grpc.insecure_channel(f"127.0.0.1:{port}")
                try:
                    stub = submit_pb2_grpc.QueueServiceStub(channel)
                    stream = stub.GetQueues(
                        submit_pb2.StreamingQueueGetRequest(num=10),
                        metadata=[("authorization", f"Bearer {self.token}")],
                        timeout=5,
                    )
                    if any(message.HasField("queue") for message in stream):
                        return time.monotonic() - started
                except grpc.RpcError:
                    time.sleep(0.02)
                finally:
                    channel.close()
        finally:
            self.kill(process)

    # --- taking over ----------------------------------------------------------------------

    def leases_after(self, moment: float) -> float:
        """Seconds from ``moment`` (time.time()) to the first run leased after it."""
        code = textwrap.dedent(
            f"""
            import time
            from datetime import UTC, datetime
            from armada.models import Run
            after = datetime.fromtimestamp({moment}, UTC)
            deadline = time.time() + 120
            while time.time() < deadline:
                first = Run.objects.filter(leased_at__gt=after).order_by("leased_at").first()
                if first is not None:
                    print(first.leased_at.timestamp() - {moment})
                    break
                time.sleep(0.05)
            """
        )
        out = self.run("manage.py", "shell", "-c", code, capture_output=True, text=True).stdout
        return float(out.strip().splitlines()[-1])

    def takeover(self, kind: str) -> float:
        celery = [sys.executable, "-m", "celery", "-A", "armada.celery"]
        worker = [
            *celery,
            "worker",
            "-Q",
            "scheduler",
            "--pool=solo",
            "--without-mingle",
            "--without-gossip",
            "--loglevel",
            "WARNING",
        ]
        beat = [*celery, "beat", "-S", "armada.beat:LeasedScheduler", "--loglevel", "WARNING"]
        if kind == "scheduler":
            active = self.start([*worker, "-n", "active@%h"])
            others = [self.start(beat)]
            self.leases_after(time.time())  # it leases
            others.append(self.start([*worker, "-n", "standby@%h"], namespace=True))
        else:
            active = self.start(beat)
            others = [self.start([*worker, "-n", "worker@%h"])]
            self.leases_after(time.time())
            others.append(self.start(beat, namespace=True))
        time.sleep(5)  # the standby is up and waiting
        self.leases_after(time.time())
        killed = time.time()
        self.kill(active)
        took = self.leases_after(killed)
        for process in others:
            self.kill(process)
        return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code runs")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bench = Bench(args.tree.resolve(), args.repeat)
    try:
        bench.setup()
        for name, measure in (
            ("web: start to first served request", bench.web_start),
            ("grpc: start to first served call", bench.grpc_start),
            ("scheduler killed: to the next lease", lambda: bench.takeover("scheduler")),
            ("beat killed: to the next lease", lambda: bench.takeover("beat")),
        ):
            times = [measure() for _ in range(args.repeat)]
            listed = ", ".join(f"{t:.2f}" for t in times)
            print(f"{name}: median {statistics.median(times):.2f} s ({listed})", flush=True)
    finally:
        bench.close()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
