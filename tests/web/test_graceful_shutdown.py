"""SIGTERM to a web process: requests in flight finish, streams run on until the bound and
are then ended as dropped (the application told that the client left), new connections
are refused, and the process exits within the bound.

uvicorn serves a small ASGI application (``tests.web.shutdown_app``) with our protocol,
as the web process serves Django's; ``WEB_COMMAND`` gives production the same bound."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from armada.webserver import SHUTDOWN_SECONDS, STREAM_MARGIN, WEB_COMMAND, stream_deadline
from tests.waiting import answers, wait_until

ROOT = Path(__file__).resolve().parents[2]
BOUND = 6  # --timeout-graceful-shutdown of the server under test, in seconds
SLACK = 15.0  # on a busy machine an exit may come this much after the bound, not more
HTTP_TIMEOUT = 30


@dataclass
class Server:
    process: subprocess.Popen
    url: str
    log: Path
    marks: Path

    def marked(self, text: str) -> bool:
        return self.marks.exists() and text in self.marks.read_text().splitlines()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def terminate(self) -> float:
        self.process.send_signal(signal.SIGTERM)
        return time.monotonic()

    def wait_exit(self, since: float) -> float:
        """Seconds from ``since`` until the process exited; fails past the bound + slack."""
        try:
            self.process.wait(timeout=BOUND + SLACK)
        except subprocess.TimeoutExpired:
            self.process.kill()
            pytest.fail(f"the server did not exit within {BOUND + SLACK} s\n{self.log_text()}")
        return time.monotonic() - since


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path) -> Iterator[Server]:
    port = _free_port()
    log, marks = tmp_path / "server.log", tmp_path / "marks"
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "tests.web.shutdown_app:app",
        "--http",
        "armada.webserver:HTTPProtocol",
        "--timeout-graceful-shutdown",
        str(BOUND),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    env = {"SHUTDOWN_APP_MARKS": str(marks), "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    running = Server(process, f"http://127.0.0.1:{port}", log, marks)
    try:
        wait_until(
            "the server to answer",
            lambda: process.poll() is not None or answers(running.url + "/"),
            timeout=60,
            details=running.log_text,
        )
        assert process.poll() is None, running.log_text()
        yield running
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _exited_on_sigterm(process: subprocess.Popen) -> bool:
    # uvicorn shuts down gracefully and then re-raises the signal it caught, as a process
    # without a handler would die of it; 0 is just as clean.
    return process.returncode in (0, -signal.SIGTERM)


def test_the_production_command_bounds_the_shutdown():
    at = WEB_COMMAND.index("--timeout-graceful-shutdown")
    assert WEB_COMMAND[at + 1] == str(SHUTDOWN_SECONDS)
    assert stream_deadline(None) == SHUTDOWN_SECONDS - STREAM_MARGIN
    assert stream_deadline(6) == 6 - STREAM_MARGIN
    assert stream_deadline(0) == 0


def test_a_request_in_flight_finishes_and_new_connections_are_refused(server):
    answer: dict[str, object] = {}

    def slow() -> None:
        response = requests.get(server.url + "/slow?seconds=3", timeout=HTTP_TIMEOUT)
        answer.update(status=response.status_code, body=response.text, at=time.monotonic())

    caller = threading.Thread(target=slow)
    caller.start()
    wait_until("the slow request to start", lambda: server.marked("slow started"), timeout=60)
    signalled = server.terminate()
    # The listening socket closes at once; the request in flight carries on.
    wait_until(
        "new connections to be refused",
        lambda: not answers(server.url + "/", timeout=2),
        timeout=BOUND,
        details=server.log_text,
    )
    caller.join(HTTP_TIMEOUT)
    assert answer.get("status") == 200 and answer.get("body") == "done", server.log_text()
    assert answer["at"] > signalled  # it was answered after SIGTERM, not before
    took = server.wait_exit(signalled)
    assert took < BOUND + SLACK
    assert _exited_on_sigterm(server.process), server.log_text()
    assert "Cancel" not in server.log_text()  # finished, not cut by uvicorn


def test_a_stream_runs_on_until_the_bound_then_is_dropped_cleanly(server):
    response = requests.get(server.url + "/stream", stream=True, timeout=HTTP_TIMEOUT)
    lines = response.iter_lines()
    assert next(lines) == b'{"line": 1}'
    signalled = server.terminate()
    after_signal = 0
    ending: Exception | None = None
    try:
        for _line in lines:
            after_signal += 1
    except requests.exceptions.ChunkedEncodingError as exc:
        ending = exc
    ended = time.monotonic() - signalled
    # The stream kept flowing after SIGTERM, until just before the bound ...
    assert after_signal > 5
    assert ended >= BOUND - STREAM_MARGIN - 0.5
    # ... and then dropped without the response's end, so that a client reconnects rather
    # than taking the stream for complete.
    assert ending is not None, "the stream ended as if complete"
    took = server.wait_exit(signalled)
    assert took < BOUND + SLACK
    assert _exited_on_sigterm(server.process), server.log_text()
    # The application was told the client left and stopped; uvicorn cancelled nothing.
    assert server.marked("disconnect"), server.log_text()
    log = server.log_text()
    assert "Cancel" not in log and "Exception in ASGI application" not in log, log
