"""The web server's protocol over HTTPS (``web.tls``): Nagle is still turned off on the TCP
socket beneath the TLS transport, and on SIGTERM an HTTPS event stream runs on until the
bound and is then dropped (not ended), as over plain HTTP (tests/web/test_graceful_shutdown).

uvicorn serves the small application of the shutdown tests (``tests.web.shutdown_app``)
with our protocol and the options ``armada.webserver.tls_options`` gives, as runall starts
the web process."""

from __future__ import annotations

import asyncio
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from uvicorn.config import Config
from uvicorn.server import ServerState

from armada.tls import ServerTls, TlsFileError
from armada.webserver import STREAM_MARGIN, H11Protocol, HTTPProtocol, tls_options
from tests.tls_certs import TlsFiles, make_ca_and_server_cert
from tests.waiting import answers, wait_until

ROOT = Path(__file__).resolve().parents[2]
BOUND = 6  # --timeout-graceful-shutdown of the server under test, in seconds
SLACK = 15.0  # on a busy machine an exit may come this much after the bound, not more
HTTP_TIMEOUT = 30


@pytest.fixture
def files(tmp_path) -> TlsFiles:
    return make_ca_and_server_cert(tmp_path / "tls")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def tiny_app(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def serve_once_over_tls(protocol_class, files: TlsFiles) -> tuple[int, bytes]:
    """One HTTPS request over a listening socket made as uvicorn's multi-worker path makes
    it (``proto`` 0, where asyncio leaves Nagle on); the accepted TCP socket's TCP_NODELAY
    and the response."""
    config = Config(tiny_app, lifespan="off", log_level="warning")
    config.load()
    state = ServerState()
    nodelay: list[int] = []

    def factory() -> asyncio.Protocol:
        protocol = protocol_class(config=config, server_state=state, app_state={})
        made = protocol.connection_made

        def spy(transport: asyncio.BaseTransport) -> None:
            made(transport)
            assert transport.get_extra_info("sslcontext") is not None  # TLS, really
            sock = transport.get_extra_info("socket")
            nodelay.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        protocol.connection_made = spy  # type: ignore[method-assign]
        return protocol

    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(files.cert, files.key)
    client_tls = ssl.create_default_context(cafile=str(files.ca))
    listener = socket.socket(family=socket.AF_INET)
    listener.bind(("127.0.0.1", 0))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(factory, sock=listener, ssl=server_tls)
    try:
        port = listener.getsockname()[1]
        opened = asyncio.open_connection(
            "127.0.0.1", port, ssl=client_tls, server_hostname="localhost"
        )
        reader, writer = await asyncio.wait_for(opened, 30)
        writer.write(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        response = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        return nodelay[0], response
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("protocol", [HTTPProtocol, H11Protocol], ids=lambda p: p.__name__)
def test_nagle_is_off_beneath_the_tls_transport(protocol, files):
    nodelay, response = asyncio.run(serve_once_over_tls(protocol, files))
    assert response.startswith(b"HTTP/1.1 200") and b"\r\nok\r\n" in response
    assert nodelay != 0


def test_the_web_options_check_the_files_first(files, tmp_path):
    assert tls_options(None) == []
    good = ServerTls(str(files.cert), str(files.key), "web.tls")
    assert tls_options(good) == ["--ssl-certfile", str(files.cert), "--ssl-keyfile", str(files.key)]
    with pytest.raises(
        TlsFileError, match=r"cannot read the TLS key .*no\.key \(web\.tls\.keyFile\)"
    ):
        tls_options(ServerTls(str(files.cert), str(tmp_path / "no.key"), "web.tls"))


@pytest.fixture
def https_server(tmp_path, files):
    """uvicorn over HTTPS with our protocol and a short shutdown bound; (process, url, log,
    marks)."""
    port = _free_port()
    log, marks = tmp_path / "server.log", tmp_path / "marks"
    tls = tls_options(ServerTls(str(files.cert), str(files.key), "web.tls"))
    command = [
        *[sys.executable, "-m", "uvicorn", "tests.web.shutdown_app:app"],
        *["--http", "armada.webserver:HTTPProtocol"],
        *["--timeout-graceful-shutdown", str(BOUND)],
        *["--host", "127.0.0.1", "--port", str(port), *tls],
    ]
    env = {"SHUTDOWN_APP_MARKS": str(marks), "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"https://localhost:{port}"
    try:
        wait_until(
            "the HTTPS server to answer",
            lambda: process.poll() is not None or answers(url + "/", verify=str(files.ca)),
            timeout=60,
            details=lambda: log.read_text(errors="replace"),
        )
        assert process.poll() is None, log.read_text(errors="replace")
        yield process, url, log, marks
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_an_https_stream_runs_until_the_bound_then_is_dropped(https_server, files):
    process, url, log, marks = https_server
    # Plain HTTP to the HTTPS port gets no answer; a client that does not trust the CA
    # refuses the server.
    assert not answers(url.replace("https://", "http://") + "/", timeout=5)
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(url + "/", timeout=HTTP_TIMEOUT)

    response = requests.get(url + "/stream", stream=True, timeout=HTTP_TIMEOUT, verify=files.ca)
    lines = response.iter_lines()
    assert next(lines) == b'{"line": 1}'
    process.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    after_signal = 0
    ending: Exception | None = None
    try:
        for _line in lines:
            after_signal += 1
    except requests.exceptions.RequestException as exc:
        ending = exc
    ended = time.monotonic() - signalled
    text = log.read_text(errors="replace")
    assert after_signal > 5, text
    assert ended >= BOUND - STREAM_MARGIN - 0.5
    assert ending is not None, "the stream ended as if complete"
    try:
        process.wait(timeout=BOUND + SLACK)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"the server did not exit within {BOUND + SLACK} s\n{text}")
    assert time.monotonic() - signalled < BOUND + SLACK
    assert process.returncode in (0, -signal.SIGTERM), log.read_text(errors="replace")
    assert "disconnect" in marks.read_text().splitlines()
    text = log.read_text(errors="replace")
    assert "Cancel" not in text and "Exception in ASGI application" not in text, text
