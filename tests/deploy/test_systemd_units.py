"""The example systemd units of ``deploy/systemd/``: each starts the command ``manage.py
runall`` starts for its process kind, stops within its graceful-shutdown bound, and
``systemd-analyze verify`` (where this machine has it) finds nothing to say about them."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from armada.management.commands.runall import celery_beat_command, celery_worker_command
from armada.webserver import SHUTDOWN_SECONDS, WEB_COMMAND

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "deploy" / "systemd"
PYTHON = "/opt/armada/venv/bin/python"
SERVER = "/opt/armada/venv/bin/armada-server"  # manage.py of the installed package
SERVICES = ("armada-web", "armada-grpc", "armada-scheduler", "armada-beat", "armada-executor@")
#: The longest a Celery task may take to finish after SIGTERM before systemd kills it
#: (a scheduling cycle, an executor tick); README asks for at least 15 s everywhere.
MIN_STOP_SECONDS = 15


def unit(name: str) -> dict[str, list[str]]:
    """``Section.Key`` -> its values, in order (a key may repeat, as ExecStart= does)."""
    settings: dict[str, list[str]] = {}
    section = ""
    for line in (UNITS / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        settings.setdefault(f"{section}.{key}", []).append(value)
    return settings


def exec_start(name: str) -> list[str]:
    (line,) = unit(name)["Service.ExecStart"]
    return shlex.split(line)


def systemd_spelling(command: list[str], **replace: str) -> list[str]:
    """A command of ``runall`` as a unit spells it: the installation's python, the log
    level from ``LOG_LEVEL``, Celery's ``%h`` escaped from systemd, and ``replace``."""
    assert command[0] == sys.executable
    words = [PYTHON, *command[1:]]
    if "--loglevel" in words:
        words[words.index("--loglevel") + 1] = "${LOG_LEVEL}"
    words = [word.replace("@%h", "@%%h") for word in words]
    return [replace.get(word, word) for word in words]


def test_each_unit_starts_what_runall_starts_for_its_process_kind():
    assert exec_start("armada-web.service") == [
        PYTHON,
        "-m",
        *WEB_COMMAND,
        "--host",
        "${ARMADA_HOST}",
        "--port",
        "${ARMADA_PORT}",
        "--workers",
        "${WEB_WORKERS}",
        "--no-access-log",
    ]
    assert exec_start("armada-grpc.service") == [PYTHON, "-m", "armada.grpcserver"]
    assert exec_start("armada-scheduler.service") == systemd_spelling(
        celery_worker_command("scheduler", "scheduler")
    )
    assert exec_start("armada-beat.service") == systemd_spelling(celery_beat_command())
    # The template's instance (%i) is the executor id.
    assert exec_start("armada-executor@.service") == systemd_spelling(
        celery_worker_command("executor.ID", "executor-ID"),
        **{"executor.ID": "executor.%i", "executor-ID@%%h": "executor-%i@%%h"},
    )


@pytest.mark.parametrize("name", SERVICES)
def test_each_service_stops_gracefully_restarts_on_failure_and_needs_the_release(name):
    settings = unit(f"{name}.service")
    assert settings["Service.KillSignal"] == ["SIGTERM"]
    assert settings["Service.Restart"] == ["on-failure"]
    assert settings["Service.User"] == ["armada"]
    assert settings["Service.EnvironmentFile"] == ["/etc/armada/armada.env"]
    assert int(settings["Service.TimeoutStopSec"][0]) >= MIN_STOP_SECONDS
    assert "armada-release.service" in settings["Unit.Requires"][0].split()
    assert "armada-release.service" in settings["Unit.After"][0].split()


def test_the_web_unit_gives_requests_their_graceful_shutdown_and_a_margin():
    stop = int(unit("armada-web.service")["Service.TimeoutStopSec"][0])
    assert stop > SHUTDOWN_SECONDS


def test_the_release_unit_runs_every_release_step_on_start_and_on_reload():
    settings = unit("armada-release.service")
    assert settings["Service.Type"] == ["oneshot"]
    steps = [shlex.split(line)[:2] for line in settings["Service.ExecStart"]]
    assert steps == [[SERVER, "migrate"], [SERVER, "collectstatic"], [SERVER, "seed_permissions"]]
    assert settings["Service.ExecReload"] == settings["Service.ExecStart"]


def test_the_environment_file_names_what_every_process_needs():
    names = {
        line.lstrip("#").partition("=")[0]
        for line in (UNITS / "armada.env.example").read_text().splitlines()
        if "=" in line and not line.startswith("# ")
    }
    required = {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "ARMADA_CONFIG", "ARMADA_VAR_DIR"}
    web = {"ARMADA_HOST", "ARMADA_PORT", "WEB_WORKERS", "ALLOWED_HOSTS", "ARMADA_LOG_FORMAT"}
    assert required | web | {"ARMADA_GRPC_ADDR"} <= names


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verify_finds_nothing_to_say(tmp_path):
    """Verified in a root of their own, where the installation's python exists; the
    system's own units come from this machine."""
    system_units = next(
        (p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")) if p.is_dir()),
        None,
    )
    if system_units is None:
        pytest.skip("no system units on this machine to verify against")
    root = tmp_path / "root"
    for program in (PYTHON, SERVER):
        stub = root / program.lstrip("/")
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text("#!/bin/sh\n")
        stub.chmod(0o755)
    shutil.copytree(system_units, root / "usr" / "lib" / "systemd" / "system", symlinks=True)
    here = root / "etc" / "systemd" / "system"
    here.mkdir(parents=True)
    for path in UNITS.glob("armada*"):
        shutil.copy(path, here / path.name)
    names = [
        *(f"{n}.service" for n in SERVICES if not n.endswith("@")),
        "armada-executor@local.service",
        "armada-release.service",
        "armada-check-workers.service",
        "armada-check-workers.timer",
    ]
    verified = subprocess.run(
        ["systemd-analyze", "verify", f"--root={root}", *names],
        cwd=here,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout + verified.stderr == ""
