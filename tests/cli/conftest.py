"""Fixtures of the armadactl tests: the fake Armada API on a real socket (``fake_armada``,
see ``tests.cli.fake_armada``), armadactl against Django's live server (``ctl``), and an
environment that sees no real ~/.armadactl.yaml or ARMADA_* variables."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer

import pytest

from armada.cli import client as client_module
from armada.cli.main import main
from tests.cli.fake_armada import FakeArmada, Handler


@pytest.fixture
def fake_armada() -> Iterator[FakeArmada]:
    fake = FakeArmada()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.fake = fake  # type: ignore[attr-defined]
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def live_armadactl(
    url: str, capsys: pytest.CaptureFixture[str], default_user: tuple[str, str]
) -> Callable[..., tuple[int, str, str]]:
    """``armadactl`` against the server at ``url``: ``call(*argv, user=(name, password))``
    (``default_user`` when no user is given) returns the exit code, stdout and stderr."""

    def call(*argv: str, user: tuple[str, str] = default_user) -> tuple[int, str, str]:
        code = main([*argv, "--url", url, "--username", user[0], "--password", user[1]])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return call


@pytest.fixture
def ctl(live_server, capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """``armadactl`` against Django's live server, as olive (the queue owner) by default."""
    return live_armadactl(live_server.url, capsys, ("olive", "olive-password"))


@pytest.fixture(autouse=True)
def isolated_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test sees the real ~/.armadactl.yaml or ARMADA_* variables of the machine, and
    reconnections back off from 10 ms rather than 0.5 s."""
    monkeypatch.setattr(client_module, "RECONNECT_BACKOFF_START", 0.01)
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    for name in (
        "ARMADA_URL",
        "ARMADA_USERNAME",
        "ARMADA_PASSWORD",
        "ARMADA_TOKEN",
        "ARMADACTL_CONFIG",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
