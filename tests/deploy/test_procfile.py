"""``deploy/Procfile`` run by a real process manager (honcho), as an operator would run it.

A fresh PostgreSQL database and the e2e Redis database; ``deploy/release.sh`` migrates it;
an executor credential is issued on the control plane and its key written to a file (mode
0600) beside the executor's own file, in the folder the Procfile's executor line reads
(``ARMADA_EXECUTOR_DIR``), and ``armada-executor --check`` accepts them with none of the
control plane's environment; honcho starts every line of the Procfile from a folder outside
the checkout, with the production environment (no ``ARMADA_DEV``: a ``SECRET_KEY`` is
given). The web process must become ready, a job submitted through the REST API must run on
the executor (which reaches the control plane through the executor API alone, with that
credential), ``check_workers`` must pass, and on SIGTERM every process must stop by itself,
cleanly, before honcho's own bound.

Beside it, a fast check that each Procfile line is the command ``manage.py runall`` starts
for that process kind, so that the two cannot drift apart.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
import yaml

from armada.executorapiserver import executor_api_command
from armada.local_executors import executor_command
from armada.management.commands.runall import celery_beat_command, celery_worker_command
from armada.webserver import WEB_COMMAND
from tests.conftest import job, job_file
from tests.deploy.test_systemd_units import exec_start, script_spelling
from tests.e2e.conftest import _e2e_redis_url, _free_port
from tests.e2e.test_runall import process_groups_alive
from tests.test_supervisor import alive
from tests.waiting import wait_for_http, wait_until

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROCFILE = DEPLOY / "Procfile"
BIN = Path(sys.executable).parent
HONCHO = BIN / "honcho"
HTTP_TIMEOUT = 30  # seconds; generous, so that a busy machine is slow rather than failing
#: honcho sends SIGKILL this long after the first process stops (its KILL_WAIT).
HONCHO_KILL_WAIT = 5
STARTED = re.compile(r"\| (\S+)\.1 started \(pid=(\d+)\)")
STOPPED = re.compile(r"\| (\S+)\.1 stopped \(rc=(-?\d+)\)")
#: Where the Procfile's executor lines read their files: ARMADA_EXECUTOR_DIR, else the
#: folder the systemd unit reads them from.
EXECUTOR_DIR = "${ARMADA_EXECUTOR_DIR:-/etc/armada/executors}"


def procfile_lines() -> dict[str, list[str]]:
    """Process kind -> its command line, split as the shell would (``exec`` left out)."""
    lines = {}
    for line in PROCFILE.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, command = line.partition(":")
        words = shlex.split(command)
        lines[name.strip()] = words[1:] if words[0] == "exec" else words
    return lines


def installed(command: list[str]) -> list[str]:
    """A command of ``runall`` as the Procfile spells it: ``python`` from PATH, and the
    log level from ``LOG_LEVEL``."""
    assert command[0] == sys.executable
    words = ["python", *command[1:]]
    if "--loglevel" in words:
        at = words.index("--loglevel")
        words[at + 1] = "${LOG_LEVEL:-INFO}"
    return words


def test_every_procfile_line_is_the_command_runall_starts():
    lines = procfile_lines()
    config = yaml.safe_load((ROOT / "config" / "armada.yaml").read_text())
    executors = [executor["id"] for executor in config["executors"]]
    assert list(lines) == [
        "web",
        "grpc",
        "executor-api",
        "scheduler",
        "beat",
        *(f"executor-{e}" for e in executors),
    ]
    # web first, so that a runner numbering ports from PORT gives it PORT itself.
    assert lines["web"] == [
        "python",
        "-m",
        *WEB_COMMAND,
        "--host",
        "${ARMADA_HOST:-127.0.0.1}",
        "--port",
        "${PORT:-8000}",
        "--workers",
        "${WEB_WORKERS:-2}",
        "--no-access-log",
    ]
    assert lines["grpc"] == ["python", "-m", "armada.grpcserver"]
    # runall gives the executor API its address; here it comes from the environment
    # (ARMADA_EXECUTOR_API_ADDR), which the server reads when given none.
    runall_api = executor_api_command("127.0.0.1:50052")
    assert runall_api[-2:] == ["--address", "127.0.0.1:50052"]
    assert lines["executor-api"] == installed(runall_api[:-2])
    assert lines["scheduler"] == installed(celery_worker_command("scheduler", "scheduler"))
    assert lines["beat"] == installed(celery_beat_command())
    # An executor is the installed armada-executor (runall's python -m armada.executor.main)
    # with its own file, <ARMADA_EXECUTOR_DIR>/<id>.yaml, the folder defaulting to the one
    # the systemd unit reads: with no ARMADA_EXECUTOR_DIR, both read the same file.
    (unit_config,) = [w for w in exec_start("armada-executor@.service") if w.endswith(".yaml")]
    for executor in executors:
        path = f"{EXECUTOR_DIR}/{executor}.yaml"
        script, *args = script_spelling(executor_command(Path(path)))
        assert lines[f"executor-{executor}"] == [Path(script).name, *args]
        assert args == ["--config", path]
        assert _expand(path, {}) == unit_config.replace("%i", executor)
        assert _expand(path, {"ARMADA_EXECUTOR_DIR": "/srv/x"}) == f"/srv/x/{executor}.yaml"


def _expand(word: str, env: dict[str, str]) -> str:
    """``word`` as the shell expands it (the runner runs each line with ``sh -c``)."""
    done = subprocess.run(
        ["sh", "-c", f"printf %s {word}"],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


# --- the Procfile, run -------------------------------------------------------------------


def _database_urls() -> tuple[str, str, str] | None:
    """(the maintenance database's URL, the fresh database's URL, its name) on the server
    of ``DATABASE_URL``, or None when that is not PostgreSQL."""
    url = os.environ.get("DATABASE_URL", "")
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        return None
    name = f"{parts.path.lstrip('/') or 'armada'}_procfile"
    return (
        urlunsplit(parts._replace(path="/postgres")),
        urlunsplit(parts._replace(path=f"/{name}")),
        name,
    )


@pytest.fixture
def fresh_database() -> Iterator[str]:
    """A new, empty PostgreSQL database (dropped afterwards); its URL."""
    urls = _database_urls()
    if urls is None:
        pytest.skip("needs PostgreSQL (DATABASE_URL=postgres://...)")
    import psycopg
    from psycopg import sql

    maintenance, url, name = urls

    def run(statement: sql.Composable) -> None:
        with psycopg.connect(maintenance, autocommit=True) as conn:
            conn.execute(statement)

    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    run(drop)
    run(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield url
    finally:
        run(drop)


@pytest.fixture
def fresh_redis() -> str:
    """The e2e Redis database (the one below the suite's), emptied; its URL."""
    if not os.environ.get("REDIS_URL"):
        pytest.skip("needs Redis (REDIS_URL=redis://...)")
    import redis

    url = _e2e_redis_url(os.environ["REDIS_URL"])
    redis.Redis.from_url(url).flushdb()
    return url


#: The Procfile's executor line is for the executor `local`.
EXECUTOR_ID = "local"
#: Issues an executor credential on the control plane (``armada-server shell -c``), printing
#: its key: what ``armadactl create executor-credential`` does, before any process is up.
ISSUE_CREDENTIAL = """
from django.utils import timezone
from armada.services.executor_credentials import executor_credential_issue
print(executor_credential_issue(cluster_id={cluster!r}, name="procfile", now=timezone.now()).key)
"""


def _production_env(tmp_path: Path, database_url: str, redis_url: str) -> dict[str, str]:
    """What deploy/systemd/armada.env.example asks for, with this test's servers and ports;
    nothing of the developer's own settings (no ARMADA_DEV). The control plane's
    configuration names no executor: the executor brings its own file (``_executor_file``)."""
    config = {
        "scheduling": {"cyclePeriod": "300ms"},
        "executorTimeout": "30s",
        "grpc": {"port": _free_port()},
    }
    (tmp_path / "armada.yaml").write_text(yaml.safe_dump(config))
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("ARMADA_", "DJANGO_"))}
    return {
        **kept,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "SECRET_KEY": "procfile-test-" + "k" * 50,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "ARMADA_CONFIG": str(tmp_path / "armada.yaml"),
        "ARMADA_VAR_DIR": str(tmp_path / "var"),
        "ARMADA_HOST": "127.0.0.1",
        "ARMADA_LOG_FORMAT": "json",
        "ARMADA_EXECUTOR_API_ADDR": f"127.0.0.1:{_free_port()}",
        "PORT": str(_free_port()),
        "WEB_WORKERS": "2",
        "PYTHONUNBUFFERED": "1",
        # Where the Procfile's executor lines find their files.
        "ARMADA_EXECUTOR_DIR": str(tmp_path / "executors"),
    }


def _executor_file(folder: Path, api_address: str, key: str) -> Path:
    """The executor's file and its credential's key file (readable by its user only), as
    deploy/README.md's "Adding a cluster" makes them; here the executor fakes its pods."""
    folder.mkdir(exist_ok=True)
    key_file = folder / f"{EXECUTOR_ID}.key"
    key_file.touch(mode=0o600)
    key_file.write_text(key + "\n")
    data = {
        "id": EXECUTOR_ID,
        "backend": "fake",
        "tickPeriod": "300ms",
        "nodes": [{"name": "worker", "count": 2, "allocatable": {"cpu": "4", "memory": "16Gi"}}],
        "api": {"address": api_address, "tokenFile": str(key_file)},
    }
    path = folder / f"{EXECUTOR_ID}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _executor_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without anything of the control plane's: what an executor's machine has."""
    control_plane = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "ARMADA_CONFIG", "ALLOWED_HOSTS")
    return {k: v for k, v in env.items() if k not in control_plane}


def _kill_groups(pgids: set[int]) -> None:
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_the_procfile_under_honcho_runs_a_job_and_stops_cleanly_on_sigterm(
    tmp_path, fresh_database, fresh_redis
):
    if not HONCHO.exists():
        pytest.skip(f"honcho is not installed beside {sys.executable}")
    env = _production_env(tmp_path, fresh_database, fresh_redis)
    (tmp_path / "var").mkdir()
    outside = tmp_path / "run"  # the processes start outside the checkout
    outside.mkdir()
    server = str(BIN / "armada-server")  # manage.py of the installed package
    password = secrets.token_urlsafe(16)

    def armada_server(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run(
            [server, *args],
            env={**env, "DJANGO_SUPERUSER_PASSWORD": password},
            cwd=outside,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    released = subprocess.run(
        [str(DEPLOY / "release.sh")],
        env=env,
        cwd=outside,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert released.returncode == 0, released.stdout + released.stderr
    assert (tmp_path / "var" / "static" / "admin" / "css" / "base.css").exists()
    made = armada_server(
        "createsuperuser", "--no-input", "--username", "ops", "--email", "o@example.com"
    )
    assert made.returncode == 0, made.stdout + made.stderr

    # The executor's credential and file, where the Procfile's executor line reads them.
    issued = armada_server("shell", "-c", ISSUE_CREDENTIAL.format(cluster=EXECUTOR_ID))
    assert issued.returncode == 0, issued.stdout + issued.stderr
    key = issued.stdout.strip().splitlines()[-1]
    assert key.startswith("arme_"), issued.stdout
    executor_file = _executor_file(
        Path(env["ARMADA_EXECUTOR_DIR"]), env["ARMADA_EXECUTOR_API_ADDR"], key
    )
    checked_file = subprocess.run(
        [str(BIN / "armada-executor"), "--check", "--config", str(executor_file)],
        env=_executor_env(env),
        cwd=outside,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked_file.returncode == 0, checked_file.stdout + checked_file.stderr

    log_path = tmp_path / "honcho.log"
    url = f"http://127.0.0.1:{env['PORT']}"

    def log() -> str:
        return log_path.read_text(errors="replace")

    def details() -> str:
        return log()[-8000:]

    with open(log_path, "w") as log_file:
        honcho = subprocess.Popen(
            [str(HONCHO), "start", "--no-colour", "-f", str(PROCFILE)],
            env=env,
            cwd=outside,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_http(
            f"{url}/readyz", "the web process to be ready", processes=[honcho], details=details
        )

        def every_line_started() -> dict[str, str] | None:
            found = dict(STARTED.findall(log()))
            return found if set(found) == set(procfile_lines()) else None

        started = wait_until("honcho to start every line", every_line_started, details=details)

        # One job through the REST API, with a personal token as programs do.
        made_token = requests.post(
            f"{url}/api/v1/tokens",
            json={"name": "procfile"},
            auth=("ops", password),
            timeout=HTTP_TIMEOUT,
        )
        assert made_token.status_code == 201, made_token.text
        headers = {"Authorization": f"Bearer {made_token.json()['key']}"}
        created = requests.post(
            f"{url}/api/v1/queues", json={"name": "ops"}, headers=headers, timeout=HTTP_TIMEOUT
        )
        assert created.status_code == 201, created.text
        one = job(cpu="500m", memory="256Mi", annotations={"fake.armadaproject.io/duration": "1s"})
        submitted = requests.post(
            f"{url}/api/v1/jobs",
            json=job_file("ops", "procfile", [one]),
            headers=headers,
            timeout=HTTP_TIMEOUT,
        )
        assert submitted.status_code == 201, submitted.text
        (job_id,) = submitted.json()["jobIds"]

        def state() -> str | None:
            assert honcho.poll() is None, details()
            found = requests.get(f"{url}/api/v1/jobs/{job_id}", headers=headers, timeout=10)
            value = found.json()["state"]
            return value if value in ("succeeded", "failed", "cancelled") else None

        final = wait_until("the job to finish", state, timeout=180, interval=0.5, details=details)
        assert final == "succeeded", details()
        # It ran on the executor, which authenticated with the credential made for it.
        found = requests.get(f"{url}/api/v1/jobs/{job_id}", headers=headers, timeout=10).json()
        assert [run["executor"] for run in found["runs"]] == [EXECUTOR_ID], found
        credentials = requests.get(
            f"{url}/api/v1/executor-credentials",
            params={"clusterId": EXECUTOR_ID},
            headers=headers,
            timeout=HTTP_TIMEOUT,
        )
        assert credentials.status_code == 200, credentials.text
        (credential,) = credentials.json()
        assert credential["name"] == "procfile" and key.startswith(credential["prefix"])
        assert credential["lastUsedAt"] and not credential["revokedAt"], credential

        # The service manager's health check passes: the two leases, the executor's
        # heartbeat (it registered through the executor API) and the scheduler's ping.
        checked = armada_server("check_workers", "--timeout", "30", timeout=120)
        assert checked.returncode == 0, checked.stdout + checked.stderr + details()
        assert checked.stdout.count("ok: ") == 4, checked.stdout
        assert f"ok: executor {EXECUTOR_ID} (heartbeat): " in checked.stdout
        assert "ok: scheduler (ping): " in checked.stdout

        # JSON logs, each line of a process tagged with its kind.
        for kind in ("scheduler", "executor"):
            assert re.search(rf'\| \{{.*"process": "{kind}"', log()), details()

        # SIGTERM: every process stops by itself, before honcho would SIGKILL it.
        stopping = time.monotonic()
        honcho.send_signal(signal.SIGTERM)
        try:
            honcho.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"honcho did not stop within 60 s of SIGTERM\n{details()}")
        took = time.monotonic() - stopping
        stopped = dict(STOPPED.findall(log()))
        assert stopped == {name: "0" for name in started}, details()
        assert "sending SIGKILL" not in log(), details()
        assert took < 60
        left = process_groups_alive({honcho.pid, *(int(pid) for pid in started.values())})
        assert left == [], f"still running after honcho stopped: {left}\n{details()}"
        assert not any(alive(int(pid)) for pid in started.values())
        print(f"every process stopped {took:.1f} s after SIGTERM")
    finally:
        # Each line runs in a process group of its own (honcho starts a session for it).
        _kill_groups({honcho.pid, *(int(pid) for _, pid in STARTED.findall(log()))})
        if honcho.poll() is None:
            honcho.wait(timeout=30)
