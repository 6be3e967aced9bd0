"""``manage.py runall`` (what ``make run`` starts) on the embedded default: SQLite and the
file-system broker, no servers. It must come up, run jobs, and stop everything on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from tests.e2e.conftest import _free_port

pytestmark = [pytest.mark.e2e]
ROOT = Path(__file__).resolve().parents[2]


def test_runall_on_the_embedded_default_runs_a_job_set_and_stops_cleanly(tmp_path):
    port = _free_port()
    config = yaml.safe_load((ROOT / "config" / "armada.yaml").read_text())
    config["scheduling"]["cyclePeriod"] = "300ms"
    config["executors"][0]["tickPeriod"] = "300ms"
    (tmp_path / "armada.yaml").write_text(yaml.safe_dump(config))
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "ARMADA_ADMIN_PASSWORD")
    }
    env.update(
        ARMADA_DEV="1",
        ARMADA_VAR_DIR=str(tmp_path / "var"),
        ARMADA_CONFIG=str(tmp_path / "armada.yaml"),
        PYTHONUNBUFFERED="1",
    )
    log_path = tmp_path / "runall.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "runall", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 90
            while "Armada is up at" not in log_path.read_text():
                assert proc.poll() is None, log_path.read_text()
                assert time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.3)
            output = log_path.read_text()
            assert f"{url}/" in output
            password = re.search(r"admin user: admin / password: (\S+)", output).group(1)
            assert (tmp_path / "var" / "admin-password").read_text().strip() == password
            assert (tmp_path / "var" / "armada.sqlite3").exists()

            auth = ("admin", password)
            for _ in range(100):
                try:
                    if (
                        requests.get(f"{url}/api/v1/queues", auth=auth, timeout=2).status_code
                        == 200
                    ):
                        break
                except requests.ConnectionError:
                    time.sleep(0.2)
            assert (
                requests.post(
                    f"{url}/api/v1/queues", json={"name": "demo"}, auth=auth, timeout=10
                ).status_code
                == 201
            )
            submitted = requests.post(
                f"{url}/api/v1/jobs",
                data=(ROOT / "examples" / "hello.yaml").read_bytes(),
                headers={"Content-Type": "application/yaml"},
                auth=auth,
                timeout=10,
            )
            assert submitted.status_code == 201, submitted.text
            job_ids = submitted.json()["jobIds"]

            states: dict[str, str] = {}
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                states = {
                    j: requests.get(f"{url}/api/v1/jobs/{j}", auth=auth, timeout=5).json()["state"]
                    for j in job_ids
                }
                if all(s in ("succeeded", "failed") for s in states.values()):
                    break
                time.sleep(0.5)
            assert sorted(states.values()) == ["failed", "succeeded", "succeeded"], (
                states,
                log_path.read_text()[-3000:],
            )
            assert requests.get(f"{url}/admin/login/", timeout=5).status_code == 200
            assert requests.get(f"{url}/static/admin/css/base.css", timeout=5).status_code == 200
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                pytest.fail("runall did not stop within 30s of Ctrl-C")
    # Every child is gone with it: nothing listens on the port any more.
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/metrics", timeout=2)
