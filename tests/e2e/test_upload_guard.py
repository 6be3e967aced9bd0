"""The body guard in front of a real uvicorn: a 300 MiB upload without credentials is
answered after reading almost nothing and nothing is spooled to disk; a chunked job file
is submitted with a token; the login form still works."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.conftest import job_file
from tests.e2e.conftest import System, _free_port, process_env, web_command
from tests.waiting import wait_for_http

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

MiB = 1024 * 1024


@dataclass
class Web:
    url: str
    port: int
    spool: Path


@pytest.fixture
def web(tmp_path, owner) -> Iterator[Web]:
    """One web process on the test database, with a temporary directory of its own (where
    Django would spool a large body)."""
    spool = tmp_path / "tmp"
    spool.mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    system = System(
        url=url, env=process_env(tmp_path, TMPDIR=str(spool)), logs=logs, workdir=tmp_path
    )
    try:
        system.start("web", web_command(port))
        wait_for_http(
            f"{url}/login",
            "the web process",
            processes=[proc for proc, _ in system.children.values()],
            details=system.log_tail,
        )
        yield Web(url=url, port=port, spool=spool)
    finally:
        system.stop_all()


@pytest.fixture
def key(owner) -> str:
    from django.utils import timezone

    from armada.services.tokens import token_create

    return token_create(user=owner, name="e2e", expires_at=None, now=timezone.now()).key


def upload(web: Web, path: str, declared: int, headers: str = "") -> tuple[str, int]:
    """Declare a body of ``declared`` bytes and send it in 64 KiB pieces from a second
    thread while the answer is awaited. Returns the status line and how many body bytes
    the server had let the client send by then (what the kernel buffers, at most)."""
    sock = socket.create_connection(("127.0.0.1", web.port), timeout=60)
    sock.sendall(
        (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {declared}\r\n{headers}\r\n"
        ).encode()
    )
    sent = [0]
    answered = threading.Event()

    def pump() -> None:
        piece = b"x" * (64 * 1024)
        try:
            while sent[0] < declared and not answered.is_set():
                sock.sendall(piece)
                sent[0] += len(piece)
        except OSError:  # the server closed the connection: the point
            pass

    sender = threading.Thread(target=pump, daemon=True)
    sender.start()
    try:
        status_line = sock.makefile("rb").readline().decode().strip()
        answered.set()
        at_answer = sent[0]
    finally:
        sock.close()
        sender.join(timeout=60)
    return status_line, at_answer


def post_chunked(web: Web, key: str, body: Iterator[bytes]) -> requests.Response:
    """Submit ``body`` as a job file, chunked (``requests`` sends a generator that way)."""
    return requests.post(
        f"{web.url}/api/v1/jobs",
        data=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=60,
    )


def spooled(web: Web) -> list[str]:
    return [p.name for p in web.spool.iterdir()]


def test_300_mib_without_credentials_is_refused_after_reading_almost_nothing(web):
    status, sent = upload(web, "/api/v1/jobs", 300 * MiB)
    assert status.startswith("HTTP/1.1 413"), status
    assert sent < 32 * MiB, sent  # socket buffers only; the server read none of it
    status, sent = upload(web, "/api/v1/jobs", 5 * MiB)  # under the size limit: 401
    assert status.startswith("HTTP/1.1 401"), status
    assert sent < 5 * MiB
    assert spooled(web) == []


def test_an_anonymous_form_post_is_held_to_the_small_limit(web):
    status, _ = upload(web, "/login", 5 * MiB)
    assert status.startswith("HTTP/1.1 413"), status
    assert spooled(web) == []


def test_a_chunked_job_file_is_submitted_with_a_token(web, key, queue):
    import json

    body = json.dumps(job_file(jobs=[{**job_file()["jobs"][0]} for _ in range(3)])).encode()

    def pieces() -> Iterator[bytes]:
        for i in range(0, len(body), 256):
            yield body[i : i + 256]

    response = post_chunked(web, key, pieces())
    assert response.status_code == 201, response.text
    assert len(response.json()["jobIds"]) == 3


def test_a_chunked_upload_past_the_limit_with_a_token_is_413(web, key, queue):
    sent = [0]

    def endless() -> Iterator[bytes]:
        piece = b"x" * MiB
        while sent[0] < 300 * MiB:
            sent[0] += len(piece)
            yield piece

    try:
        response = post_chunked(web, key, endless())
        assert response.status_code == 413, response.text
    except requests.ConnectionError:
        pass  # the server answered and closed while the client was still sending
    assert sent[0] < 100 * MiB


def test_the_login_form_works_through_the_guard(web, owner):
    session = requests.Session()
    page = session.get(f"{web.url}/login?next=/tokens/", timeout=30)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    response = session.post(
        f"{web.url}/login",
        data={
            "csrfmiddlewaretoken": csrf,
            "username": "olive",
            "password": "olive-password",
            "next": "/tokens/",
        },
        headers={"Referer": f"{web.url}/login"},
        timeout=30,
        allow_redirects=False,
    )
    assert response.status_code == 302 and response.headers["Location"] == "/tokens/"
    assert session.get(f"{web.url}/tokens/", timeout=30).status_code == 200
