"""The example systemd units of ``deploy/systemd/``: each starts the command ``manage.py
runall`` starts for its process kind, stops within its graceful-shutdown bound, and
``systemd-analyze verify`` (where this machine has it) finds nothing to say about them. The
executor's unit stands alone (another machine, its own environment, no database), and the
example executor file it reads is valid."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from armada.core.config import ExecutorApi, Grpc
from armada.core.config_executor_process import parse_executor_process
from armada.core.config_executors import Executor
from armada.executorapiserver import executor_api_command
from armada.local_executors import executor_command
from armada.management.commands.runall import celery_beat_command, celery_worker_command
from armada.webserver import SHUTDOWN_SECONDS, WEB_COMMAND

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "deploy" / "systemd"
EXAMPLE_EXECUTOR = ROOT / "deploy" / "executor.example.yaml"
PYTHON = "/opt/armada/venv/bin/python"
SERVER = "/opt/armada/venv/bin/armada-server"  # manage.py of the installed package
EXECUTOR = "/opt/armada/venv/bin/armada-executor"  # the executor's script
#: The units of the control plane: each needs the release step and the shared environment.
CONTROL_PLANE = (
    "armada-web",
    "armada-grpc",
    "armada-executor-api",
    "armada-scheduler",
    "armada-beat",
)
SERVICES = (*CONTROL_PLANE, "armada-executor@")
#: The longest a Celery task may take to finish after SIGTERM before systemd kills it
#: (a scheduling cycle, an executor tick); README asks for at least 15 s everywhere.
MIN_STOP_SECONDS = 15
#: What only the control plane may hold: an executor's environment names none of it.
CONTROL_PLANE_SETTINGS = {
    "DATABASE_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "ARMADA_CONFIG",
    "ARMADA_DB_POOL_SIZE",
}


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


def script_spelling(command: list[str]) -> list[str]:
    """``python -m armada.executor.main ARGS`` (runall's spelling) as the installed
    ``armada-executor ARGS``, once the package's scripts say that the two are one."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["armada-executor"] == "armada.executor.main:main"
    assert command[:3] == [sys.executable, "-m", "armada.executor.main"]
    return [EXECUTOR, *command[3:]]


def env_names(path: Path) -> set[str]:
    """The variables an environment file sets, or shows commented out (``#NAME=value``)."""
    return {
        line.lstrip("#").partition("=")[0]
        for line in path.read_text().splitlines()
        if "=" in line and not line.startswith("# ")
    }


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
    # runall gives the executor API its address; the unit's comes from the environment
    # (ARMADA_EXECUTOR_API_ADDR), which the server reads when given none.
    runall_api = executor_api_command("127.0.0.1:50052")
    assert runall_api[-2:] == ["--address", "127.0.0.1:50052"]
    assert exec_start("armada-executor-api.service") == systemd_spelling(runall_api[:-2])
    assert exec_start("armada-scheduler.service") == systemd_spelling(
        celery_worker_command("scheduler", "scheduler")
    )
    assert exec_start("armada-beat.service") == systemd_spelling(celery_beat_command())
    # The template's instance (%i) is the executor id, and its file is named after it.
    assert exec_start("armada-executor@.service") == script_spelling(
        executor_command(Path("/etc/armada/executors/%i.yaml"))
    )


@pytest.mark.parametrize("name", SERVICES)
def test_each_service_stops_gracefully_and_restarts_on_failure(name):
    settings = unit(f"{name}.service")
    assert settings["Service.KillSignal"] == ["SIGTERM"]
    assert settings["Service.Restart"] == ["on-failure"]
    assert settings["Service.User"] == ["armada"]
    assert int(settings["Service.TimeoutStopSec"][0]) >= MIN_STOP_SECONDS


@pytest.mark.parametrize("name", CONTROL_PLANE)
def test_each_control_plane_service_needs_the_release_and_the_shared_environment(name):
    settings = unit(f"{name}.service")
    assert settings["Service.EnvironmentFile"] == ["/etc/armada/armada.env"]
    assert "armada-release.service" in settings["Unit.Requires"][0].split()
    assert "armada-release.service" in settings["Unit.After"][0].split()


def test_the_executor_unit_stands_alone_with_an_environment_of_its_own():
    """It may run on a machine with no control-plane unit at all: it orders itself after
    the network only, and reads its own (optional) environment, never armada.env."""
    settings = unit("armada-executor@.service")
    for key in ("Requires", "Requisite", "BindsTo", "PartOf", "Wants", "After", "Before"):
        for value in settings.get(f"Unit.{key}", []):
            assert value.split() == ["network-online.target"], (key, value)
    assert settings["Unit.After"] == ["network-online.target"]
    assert settings["Service.EnvironmentFile"] == ["-/etc/armada/executor-%i.env"]
    for line in settings.get("Service.Environment", []):
        set_here = {word.partition("=")[0] for word in shlex.split(line)}
        assert not set_here & CONTROL_PLANE_SETTINGS, line
    # Its example environment holds none of the control plane's settings either.
    example = UNITS / "armada-executor.env.example"
    assert not env_names(example) & CONTROL_PLANE_SETTINGS
    assert {"ARMADA_LOG_FORMAT", "LOG_LEVEL", "ARMADA_VAR_DIR"} <= env_names(example)


def test_the_web_unit_gives_requests_their_graceful_shutdown_and_a_margin():
    stop = int(unit("armada-web.service")["Service.TimeoutStopSec"][0])
    assert stop > SHUTDOWN_SECONDS


@pytest.mark.parametrize(
    "name, grace",
    [("armada-grpc", Grpc().grace_period), ("armada-executor-api", ExecutorApi().grace_period)],
)
def test_the_grpc_servers_give_calls_in_flight_their_grace_period_and_a_margin(name, grace):
    stop = int(unit(f"{name}.service")["Service.TimeoutStopSec"][0])
    assert stop > grace


def test_the_release_unit_runs_every_release_step_on_start_and_on_reload():
    settings = unit("armada-release.service")
    assert settings["Service.Type"] == ["oneshot"]
    steps = [shlex.split(line)[:2] for line in settings["Service.ExecStart"]]
    assert steps == [[SERVER, "migrate"], [SERVER, "collectstatic"], [SERVER, "seed_permissions"]]
    assert settings["Service.ExecReload"] == settings["Service.ExecStart"]


def test_the_environment_file_names_what_every_process_needs():
    names = env_names(UNITS / "armada.env.example")
    required = {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "ARMADA_CONFIG", "ARMADA_VAR_DIR"}
    web = {"ARMADA_HOST", "ARMADA_PORT", "WEB_WORKERS", "ALLOWED_HOSTS", "ARMADA_LOG_FORMAT"}
    assert required | web | {"ARMADA_GRPC_ADDR", "ARMADA_EXECUTOR_API_ADDR"} <= names


# --- the example executor file ------------------------------------------------------------


def _uncomment_tls(text: str) -> str:
    """The example with its commented TLS settings in force (``# key: value`` lines of the
    ``tls:`` block uncommented, comments on them (``# # ...``) left, ``enabled: false``
    dropped)."""
    lines, in_tls = [], False
    for line in text.splitlines():
        if line.strip() == "tls:":
            in_tls = True
            lines.append(line)
            continue
        if in_tls and line and not line.startswith("    "):
            in_tls = False
        if in_tls and line.strip() == "enabled: false":
            continue
        if in_tls and line.startswith("    # ") and not line.startswith("    # #"):
            line = "    " + line[len("    # ") :]
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_the_example_executor_file_is_an_executor_entry_plus_api_and_broker():
    data = yaml.safe_load(EXAMPLE_EXECUTOR.read_text())
    config = parse_executor_process(data)
    entry_keys = {field.alias or name for name, field in Executor.model_fields.items()}
    assert set(data) - entry_keys == {"api", "broker"}
    assert config.broker == ""  # the embedded broker: nothing more to run
    assert config.backend in ("fake", "local") and config.nodes
    assert config.error_categories.enabled and config.error_categories.categories
    # It reaches the executor API on the port the server listens on by default, with a
    # credential from a file named after the executor, as deploy/README.md shows.
    assert config.api.address.rpartition(":")[2] == str(ExecutorApi().port)
    assert config.api.token_file == f"/etc/armada/executors/{config.id}.key"
    assert not config.api.tls.enabled
    with_tls = parse_executor_process(yaml.safe_load(_uncomment_tls(EXAMPLE_EXECUTOR.read_text())))
    assert with_tls.api.tls.enabled and with_tls.api.tls.ca_file and with_tls.api.tls.server_name
    assert with_tls.model_dump(exclude={"api"}) == config.model_dump(exclude={"api"})


def test_the_example_executor_file_passes_the_executors_own_check(tmp_path):
    """``armada-executor --check`` accepts it once its token file exists, and names the
    missing file otherwise."""
    data = yaml.safe_load(EXAMPLE_EXECUTOR.read_text())
    key_file = tmp_path / "cluster.key"
    data["api"]["tokenFile"] = str(key_file)
    config_file = tmp_path / "executor.yaml"
    config_file.write_text(yaml.safe_dump(data))

    def check() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "armada.executor.main", "--check", "--config", str(config_file)],
            env={"PATH": "/usr/bin:/bin", "ARMADA_VAR_DIR": str(tmp_path / "var")},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )

    missing = check()
    assert missing.returncode == 2
    assert f"api.tokenFile: {key_file} does not exist" in missing.stderr
    key_file.write_text("arme_" + "k" * 40 + "\n")
    key_file.chmod(0o600)
    good = check()
    assert good.returncode == 0, good.stderr
    assert f"is good (executor {data['id']})" in good.stdout
    assert not (tmp_path / "var").exists()  # a check starts nothing


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verify_finds_nothing_to_say(tmp_path):
    """Verified in a root of their own, where the installation's programs exist; the
    system's own units come from this machine."""
    system_units = next(
        (p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")) if p.is_dir()),
        None,
    )
    if system_units is None:
        pytest.skip("no system units on this machine to verify against")
    root = tmp_path / "root"
    for program in (PYTHON, SERVER, EXECUTOR):
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
        "armada-executor@cluster-1.service",
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
