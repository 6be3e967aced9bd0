"""Log lines: the process kind each process gives itself, the JSON formatter's fields, and
``ARMADA_LOG_FORMAT`` read by the settings (a real process each)."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from armada.logs import JsonFormatter, logging_config, process_kind

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "argv, kind",
    [
        (["/v/bin/celery", "-A", "armada.celery", "worker", "-Q", "scheduler"], "scheduler"),
        (
            ["/v/lib/celery/__main__.py", "-A", "armada.celery", "worker", "-Qexecutor.a"],
            "executor",
        ),
        (["/v/bin/celery", "-A", "armada.celery", "worker", "--queues=executor.b"], "executor"),
        (
            ["/v/bin/celery", "-A", "armada.celery", "worker", "-Q", "scheduler,executor.a"],
            "scheduler+executor",
        ),
        (["/v/bin/celery", "-A", "armada.celery", "worker"], "worker"),
        (
            ["/v/bin/celery", "-A", "armada.celery", "beat", "-S", "armada.beat:LeasedScheduler"],
            "beat",
        ),
        (["/v/lib/uvicorn/__main__.py", "armada.asgi:application"], "web"),
        (["/v/bin/gunicorn", "armada.asgi:application"], "web"),
        (["manage.py", "runserver"], "web"),
        (["/src/armada/grpcserver.py", "--address", "x:1"], "grpc"),
        (["/src/armada/executorapiserver.py", "--address", "x:1"], "executor-api"),
        (["/srv/venv/lib/python3.11/site-packages/armada/executorapiserver.py"], "executor-api"),
        (["manage.py", "migrate", "--noinput"], "migrate"),
        (["/srv/venv/bin/armada-server", "migrate"], "migrate"),
        (
            ["/srv/venv/lib/python3.11/site-packages/armada/__main__.py", "check_workers"],
            "check_workers",
        ),
        (["/v/bin/armadactl", "get", "queues"], "armadactl"),
        (["-c"], "python"),
        ([], "python"),
    ],
)
def test_process_kind_is_read_from_the_command_line(argv, kind):
    assert process_kind(argv, {}) == kind


def test_armada_process_kind_wins():
    argv = ["/v/bin/celery", "worker", "-Q", "scheduler"]
    assert process_kind(argv, {"ARMADA_PROCESS_KIND": "standby-scheduler"}) == "standby-scheduler"
    assert process_kind(argv, {"ARMADA_PROCESS_KIND": "  "}) == "scheduler"


def _record(message: str, *args, exc_info=None, **extra) -> logging.LogRecord:
    record = logging.getLogger("armada.services.scheduler").makeRecord(
        "armada.services.scheduler", logging.WARNING, __file__, 1, message, args, exc_info
    )
    record.__dict__.update(extra)
    record.created = 1767268800.25  # 2026-01-01T12:00:00.250Z
    return record


def test_a_json_line_has_the_fields_and_the_ids_given_on_the_call():
    line = JsonFormatter(kind="scheduler").format(
        _record(
            "job %s: %s", "01JX", "memory grows\nby 2x", queue="q1", job_id="01JX", run_id="01JR"
        )
    )
    assert "\n" not in line  # one object per line, whatever the message holds
    assert json.loads(line) == {
        "time": "2026-01-01T12:00:00.250Z",
        "level": "WARNING",
        "logger": "armada.services.scheduler",
        "message": "job 01JX: memory grows\nby 2x",
        "process": "scheduler",
        "pid": os.getpid(),
        "queue": "q1",
        "job_id": "01JX",
        "run_id": "01JR",
    }


def test_a_json_line_keeps_the_traceback_and_stringifies_odd_values():
    try:
        raise ValueError("bad value")
    except ValueError:
        record = _record("failed", exc_info=sys.exc_info(), executor=Path("/x"))
    parsed = json.loads(JsonFormatter(kind="web").format(record))
    assert parsed["executor"] == "/x"
    assert (
        parsed["exception"].startswith("Traceback")
        and "ValueError: bad value" in parsed["exception"]
    )
    assert "job_id" not in parsed and "queue" not in parsed  # only what the call gave


def test_the_kind_comes_from_the_process_when_not_given(monkeypatch):
    monkeypatch.setenv("ARMADA_PROCESS_KIND", "beat")
    assert json.loads(JsonFormatter().format(_record("x")))["process"] == "beat"


def test_logging_config_knows_two_formats():
    assert (
        logging_config(log_format="plain", level="INFO")["handlers"]["console"]["formatter"]
        == "plain"
    )
    config = logging_config(log_format="json", level="DEBUG")
    assert config["handlers"]["console"]["formatter"] == "json"
    assert config["root"]["level"] == "DEBUG"
    assert config["loggers"]["uvicorn.error"]["handlers"] == ["console"]
    # Not the access logger's parent: that would turn an access log that was off back on.
    assert "uvicorn" not in config["loggers"] and "uvicorn.access" not in config["loggers"]
    with pytest.raises(ValueError, match="ARMADA_LOG_FORMAT must be one of plain, json, got 'xml'"):
        logging_config(log_format="xml", level="INFO")


SCRIPT = (
    "import django, logging; django.setup(); "
    "logging.getLogger('armada.services.runs').warning("
    "'run %s ended', 'r1', extra={'job_id': 'j1', 'run_id': 'r1', 'queue': 'q'})"
)


def _run(tmp_path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "armada.settings",
            "ARMADA_DEV": "1",
            "ARMADA_VAR_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_settings_log_json_when_asked(tmp_path):
    done = _run(tmp_path, ARMADA_LOG_FORMAT="json", ARMADA_PROCESS_KIND="executor")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    ended = [line for line in lines if line["message"] == "run r1 ended"]
    assert len(ended) == 1
    assert ended[0]["process"] == "executor"
    assert (ended[0]["job_id"], ended[0]["run_id"], ended[0]["queue"]) == ("j1", "r1", "q")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", ended[0]["time"])


def test_the_default_stays_human_readable_and_a_bad_format_is_refused(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(r"WARNING armada\.services\.runs: run r1 ended$", done.stderr, re.M)
    bad = _run(tmp_path, ARMADA_LOG_FORMAT="yaml")
    assert bad.returncode != 0
    assert "ARMADA_LOG_FORMAT must be one of plain, json, got 'yaml'" in bad.stderr


def test_a_web_process_logs_json_and_keeps_its_access_log_off(tmp_path):
    """The web process as runall starts it: every line of its stderr is JSON, uvicorn's own
    included, and ``--no-access-log`` still holds."""
    from armada.webserver import WEB_COMMAND
    from tests.waiting import answers, wait_until

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    err = tmp_path / "web.err"
    env = {
        **os.environ,
        "ARMADA_DEV": "1",
        "ARMADA_VAR_DIR": str(tmp_path),
        "ARMADA_LOG_FORMAT": "json",
    }
    command = [sys.executable, "-m", *WEB_COMMAND, "--port", str(port), "--no-access-log"]
    with open(err, "w") as stderr:
        web = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        wait_until(
            "the web process to answer",
            lambda: web.poll() is not None or answers(f"http://127.0.0.1:{port}/healthz"),
            timeout=120,
            details=err.read_text,
        )
        assert web.poll() is None, err.read_text()
        web.send_signal(signal.SIGTERM)
        web.wait(timeout=60)
    finally:
        if web.poll() is None:
            web.kill()
            web.wait()
    lines = [json.loads(line) for line in err.read_text().splitlines()]
    messages = {(line["logger"], line["message"]) for line in lines}
    assert ("uvicorn.error", "Shutting down") in messages
    assert all(line["process"] == "web" for line in lines)
    assert not [line for line in lines if line["logger"] == "uvicorn.access"]


def test_a_seldom_warning_is_said_at_most_once_every_period(caplog):
    from armada.logs import Seldom

    now = [0.0]
    seldom = Seldom(logging.getLogger("armada.test.seldom"), every=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="armada.test.seldom"):
        for t in (0.0, 1.0, 59.9, 60.0, 61.0, 130.0):
            now[0] = t
            seldom.warning("trouble at %s", t)
    assert [r.getMessage() for r in caplog.records] == [
        "trouble at 0.0",
        "trouble at 60.0",
        "trouble at 130.0",
    ]
