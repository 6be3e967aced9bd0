"""``armada-executor``: its file is checked before anything starts, it needs a credential,
and its embedded beat never outlives it (not even a kill -9 of the worker)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "armada.executor.main"]


def write(tmp_path: Path, **extra) -> Path:
    data = {
        "id": "solo",
        "nodes": [{"name": "n", "allocatable": {"cpu": "1", "memory": "1Gi"}}],
        "api": {"address": "127.0.0.1:9"},
        **extra,
    }
    path = tmp_path / "executor.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "ARMADA_EXECUTOR_TOKEN"}
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**environment, **(env or {})},
    )


def test_check_accepts_a_good_file_with_a_credential(tmp_path):
    token = tmp_path / "token"
    token.write_text("arme_" + "x" * 40)
    done = run("--check", "--config", str(write(tmp_path, api={"tokenFile": str(token)})))
    assert done.returncode == 0, done.stderr
    assert "is good (executor solo)" in done.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"api": {"address": "nowhere"}}, "api.address: "),
        ({"broker": "amqp://x"}, "broker: "),
        ({"tickPeriod": "soon"}, "tickPeriod: "),
        ({"database": "postgres://x"}, "database: unknown key"),
        ({"api": {"address": "127.0.0.1:1", "tls": {"enabled": "yes"}}}, "api.tls.enabled"),
    ],
)
def test_check_names_every_bad_key(tmp_path, extra, message):
    done = run(
        "--check", "--config", str(write(tmp_path, **extra)), env={"ARMADA_EXECUTOR_TOKEN": "k"}
    )
    assert done.returncode == 2
    assert message in done.stderr, done.stderr


def test_a_missing_credential_stops_start_up(tmp_path):
    done = run("--check", "--config", str(write(tmp_path)))
    assert done.returncode == 2 and "no credential" in done.stderr
    done = run("--check", "--config", str(write(tmp_path, api={"tokenFile": "/nonexistent"})))
    assert done.returncode == 2 and "api.tokenFile: /nonexistent does not exist" in done.stderr


def test_check_reads_a_kubernetes_executors_kubeconfig(tmp_path):
    """A kubernetes executor's cluster settings are read by --check: a missing kubeconfig or
    an unknown context is named; a good one passes."""
    env = {"ARMADA_EXECUTOR_TOKEN": "k"}
    missing = {"backend": "kubernetes", "kubernetes": {"kubeconfig": str(tmp_path / "none")}}
    done = run("--check", "--config", str(write(tmp_path, **missing)), env=env)
    assert done.returncode == 2 and "kubernetes.kubeconfig: " in done.stderr, done.stderr
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    cluster = {"kubeconfig": str(kubeconfig)}
    good = run(
        "--check",
        "--config",
        str(write(tmp_path, backend="kubernetes", kubernetes=cluster)),
        env=env,
    )
    assert good.returncode == 0, good.stderr
    unknown = {**cluster, "context": "elsewhere"}
    done = run(
        "--check",
        "--config",
        str(write(tmp_path, backend="kubernetes", kubernetes=unknown)),
        env=env,
    )
    assert done.returncode == 2 and "elsewhere" in done.stderr, done.stderr


def test_an_unreadable_file_is_said_so(tmp_path):
    done = run("--check", "--config", str(tmp_path / "missing.yaml"))
    assert done.returncode == 2 and "cannot read" in done.stderr


def children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the death signal is Linux's")
def test_the_embedded_beat_dies_with_the_worker_even_by_kill_9(tmp_path):
    config = write(tmp_path, stateDir=str(tmp_path / "state"))
    process = subprocess.Popen(
        [*COMMAND, "--config", str(config)],
        cwd=ROOT,
        env={**os.environ, "ARMADA_EXECUTOR_TOKEN": "arme_" + "x" * 40},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        beat = wait_until("the embedded beat to start", lambda: children(process.pid), timeout=120)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        wait_until(
            "the beat to go with its worker",
            lambda: not any(alive(pid) for pid in beat),
            timeout=60,
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
