"""Open event streams hold no database connection between reads.

A real uvicorn process with a pool of 4 PostgreSQL connections serves 40 watchers. Were a
stream to keep its connection while it waits, the fifth watcher would take the last one
and every other request would queue for the pool's 30 s timeout and fail.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
import time

import pytest
import requests

from tests.e2e.conftest import (
    System,
    _database_url,
    _e2e_redis_url,
    _free_port,
    web_command,
)

pytestmark = pytest.mark.e2e

POOL_SIZE = 4
WATCHERS = 40
APP_NAME = "armada-stream-connections-test"


@pytest.fixture
def web(transactional_db, tmp_path) -> System:
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the connection pool is PostgreSQL's")
    logs = tmp_path / "logs"
    logs.mkdir()
    port = _free_port()
    env = {
        **os.environ,
        "ARMADA_DEV": "1",
        "ARMADA_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": _database_url(connection.settings_dict),
        "ARMADA_DB_POOL_SIZE": str(POOL_SIZE),
        "PGAPPNAME": APP_NAME,
        "PYTHONUNBUFFERED": "1",
    }
    if os.environ.get("REDIS_URL"):
        env["REDIS_URL"] = _e2e_redis_url(os.environ["REDIS_URL"])
    system = System(url=f"http://127.0.0.1:{port}", env=env, logs=logs, workdir=tmp_path)
    system.start("web", web_command(port))
    try:
        yield system
    finally:
        system.stop_all()


def _web_connections() -> int:
    """Connections the web process holds (it names itself through ``PGAPPNAME``)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP_NAME]
        )
        return cursor.fetchone()[0]


def _ready_with_token(web: System, user) -> dict[str, str]:
    """Headers with a token of ``user``, once the web process answers an API call."""
    from rest_framework.authtoken.models import Token

    headers = {"Authorization": f"Token {Token.objects.create(user=user).key}"}

    def answered() -> bool:
        try:
            return requests.get(web.url + "/api/v1/queues", headers=headers, timeout=5).ok
        except requests.RequestException:
            return False

    web.wait_for("the web process", answered, timeout=90)
    return headers


class Watcher:
    """One raw HTTP/1.1 event stream read by a thread of its own; ``close`` shuts the socket
    down, which also ends the blocked read."""

    def __init__(self, url: str, path: str, headers: dict[str, str]) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=120)
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {host}",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while chunk := self.sock.recv(65536):
                self.data += chunk
        except OSError:
            pass  # shut down by close()

    @property
    def status(self) -> int | None:
        head = self.data.split(b"\r\n", 1)[0]
        return int(head.split()[1]) if head.startswith(b"HTTP/1.1 ") else None

    @property
    def event_ids(self) -> list[int]:
        return [int(m) for m in re.findall(rb'"id":(\d+),"type"', self.data)]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(timeout=10)


def test_many_watchers_leave_the_pool_to_other_requests(web, owner, queue):
    from armada.services.submit import job_submit
    from tests.conftest import T0, job_file

    headers = _ready_with_token(web, owner)
    path = "/api/v1/job-sets/demo/set-1/events?watch=true&from=0"
    watchers: list[Watcher] = []
    try:
        for _ in range(WATCHERS):
            watchers.append(Watcher(web.url, path, headers))
        web.wait_for(
            "every stream to start",
            lambda: all(w.status is not None for w in watchers),
            timeout=60,
        )
        assert {w.status for w in watchers} == {200}

        # Every other request still gets a connection at once.
        for _ in range(10):
            started = time.monotonic()
            reply = requests.get(web.url + "/api/v1/queues", headers=headers, timeout=20)
            assert reply.status_code == 200, reply.text
            assert time.monotonic() - started < 5
        assert _web_connections() <= POOL_SIZE

        # And every watcher still follows the job set, each event once.
        job_submit(actor=owner, data=job_file(), now=T0)
        web.wait_for(
            "every watcher to receive the two new events",
            lambda: all(len(w.event_ids) >= 2 for w in watchers),
            timeout=60,
        )
        assert all(w.event_ids == sorted(set(w.event_ids)) for w in watchers)
        assert _web_connections() <= POOL_SIZE
    finally:
        for watcher in watchers:
            watcher.close()


def _terminate_web_connections() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s",
            [APP_NAME],
        )
        return cursor.fetchone()[0]


def test_requests_after_the_database_dropped_every_connection_succeed(web, owner, queue):
    from tests.conftest import job_file

    headers = _ready_with_token(web, owner)
    for round_ in range(3):
        # Fill the pool, then have the server drop every connection in it.
        for _ in range(POOL_SIZE):
            assert requests.get(web.url + "/api/v1/queues", headers=headers, timeout=20).ok
        assert _terminate_web_connections() >= 1
        reply = requests.get(web.url + "/api/v1/queues", headers=headers, timeout=20)
        assert reply.status_code == 200, reply.text
        submitted = requests.post(
            web.url + "/api/v1/jobs",
            json=job_file(job_set=f"after-blip-{round_}"),
            headers=headers,
            timeout=20,
        )
        assert submitted.status_code in (200, 201), submitted.text
