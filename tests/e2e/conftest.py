"""Real processes for end-to-end tests: uvicorn (web), a Celery scheduler worker with beat,
and a Celery executor worker, all on the test database and the configured broker
(Redis when ``REDIS_URL`` is set, else the file-system broker in a temporary folder)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
import yaml

ROOT = Path(__file__).resolve().parents[2]
E2E_CONFIG = {
    "scheduling": {"cyclePeriod": "300ms"},
    "executorTimeout": "30s",
    "executors": [
        {
            "id": "e2e",
            "tickPeriod": "300ms",
            "nodes": [
                {"name": "worker", "count": 2, "allocatable": {"cpu": "4", "memory": "16Gi"}}
            ],
        }
    ],
}


@dataclass
class System:
    url: str
    env: dict[str, str]
    logs: Path

    def armadactl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        exe = Path(sys.executable).with_name("armadactl")
        return subprocess.run(
            [str(exe), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-40:])
            for p in sorted(self.logs.glob("*.log"))
        )


def _database_url(settings_dict: dict) -> str:
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(settings_dict['NAME']).resolve()}"
    user = quote(settings_dict.get("USER") or "")
    password = quote(settings_dict.get("PASSWORD") or "")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _e2e_redis_url(url: str) -> str:
    """A database number of its own, so a developer's running system is not disturbed."""
    base = url.rsplit("/", 1)[0] if url.count("/") > 2 else url
    return f"{base}/13"


@pytest.fixture
def system(transactional_db, tmp_path, django_user_model):
    from django.db import connection

    django_user_model.objects.create_superuser("e2e-admin", "e2e@example.com", "e2e-password")
    (tmp_path / "armadactl.yaml").write_text("{}\n")  # keep ~/.armadactl.yaml out of the test
    config_path = tmp_path / "armada.yaml"
    config_path.write_text(yaml.safe_dump(E2E_CONFIG))
    var_dir = tmp_path / "var"
    logs = tmp_path / "logs"
    logs.mkdir()
    port = _free_port()
    env = {
        **os.environ,
        "ARMADA_DEV": "1",
        "ARMADA_CONFIG": str(config_path),
        "ARMADA_VAR_DIR": str(var_dir),
        "DATABASE_URL": _database_url(connection.settings_dict),
        "ARMADA_URL": f"http://127.0.0.1:{port}",
        "ARMADA_USERNAME": "e2e-admin",
        "ARMADA_PASSWORD": "e2e-password",
        "ARMADACTL_CONFIG": str(tmp_path / "armadactl.yaml"),
        "PYTHONUNBUFFERED": "1",
    }
    if os.environ.get("REDIS_URL"):
        env["REDIS_URL"] = _e2e_redis_url(os.environ["REDIS_URL"])
        import redis

        redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    py = sys.executable
    worker = [
        py,
        "-m",
        "celery",
        "-A",
        "armada.celery",
        "worker",
        "--pool=solo",
        "--without-mingle",
        "--without-gossip",
    ]
    commands = {
        "web": [
            py,
            "-m",
            "uvicorn",
            "armada.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        "scheduler": [
            *worker,
            "-Q",
            "scheduler",
            "-n",
            "scheduler@e2e",
            "-B",
            "-s",
            str(tmp_path / "beat-schedule"),
        ],
        "executor": [*worker, "-Q", "executor.e2e", "-n", "executor@e2e"],
    }
    children = []
    for name, cmd in commands.items():
        log = open(logs / f"{name}.log", "w")  # noqa: SIM115 - closed with the process below
        children.append(
            (subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT), log)
        )
    system = System(url=env["ARMADA_URL"], env=env, logs=logs)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(system.url + "/metrics", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("web did not come up:\n" + system.log_tail())
            for child, _ in children:
                if child.poll() is not None:
                    pytest.fail("a process exited at start-up:\n" + system.log_tail())
            time.sleep(0.3)
        yield system
    finally:
        for child, _ in children:
            child.terminate()
        for child, log in children:
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            log.close()
