"""With Redis stopped for real, the web side degrades instead of answering 500: Lookout's
pages keep working for a logged-in user (sessions are read from the database), a password
login is refused with 503 and Retry-After (the failed-login throttle fails safe), a token
still calls the API, /readyz answers 200 "degraded" naming the broker, and everything is as
before once Redis answers again. A Redis server of its own, on a port of its own, is started
and stopped here (the suite's shared one is never touched)."""

from __future__ import annotations

import base64
import socket
import subprocess
from collections.abc import Iterator

import pytest
from django.core.cache import caches
from django.test import Client
from django.utils import timezone

from armada.services.tokens import token_create
from tests.lookout.builders import make_job
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A throw-away redis-server on ``port`` that can be stopped and started again."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until("redis to answer", self.answers, timeout=30)

    def stop(self) -> None:
        assert self.process is not None
        self.process.terminate()
        self.process.wait(timeout=30)
        assert not self.answers()

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False


@pytest.fixture
def redis_of_our_own(settings) -> Iterator[RedisServer]:
    server = RedisServer(free_port())
    server.start()
    url = f"redis://127.0.0.1:{server.port}/0"
    original = (settings.CACHES, settings.SESSION_ENGINE, getattr(settings, "REDIS_URL", ""))
    caches_setting = dict(settings.CACHES)
    options = {"socket_connect_timeout": 1.0, "socket_timeout": 2.0}
    caches_setting["default"] = {
        "BACKEND": "armada.web.resilient_cache.ResilientRedisCache",
        "LOCATION": url,
        "KEY_PREFIX": "armada",
        "OPTIONS": options,
    }
    caches_setting["login-throttle"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": url,
        "KEY_PREFIX": "armada-login-throttle",
        "OPTIONS": options,
    }
    settings.CACHES = caches_setting  # Django makes the cache objects anew
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    settings.REDIS_URL = url
    try:
        yield server
    finally:
        for alias in ("default", "login-throttle"):
            caches[alias].close()
        # Back to the suite's caches before other fixtures' teardowns use them.
        settings.CACHES, settings.SESSION_ENGINE, settings.REDIS_URL = original
        if server.process is not None and server.process.poll() is None:
            server.process.terminate()
            server.process.wait(timeout=30)


def basic(username: str, password: str) -> dict:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"HTTP_AUTHORIZATION": f"Basic {token}"}


def test_with_redis_stopped_pages_work_password_logins_are_503_and_tokens_work(
    redis_of_our_own, owner, queue
):
    make_job("01a")
    key = token_create(user=owner, name="ci", expires_at=None, now=timezone.now()).key
    browser = Client()
    assert (
        browser.post("/login", {"username": "olive", "password": "olive-password"}).status_code
        == 302
    )
    assert browser.get("/queues/").status_code == 200

    redis_of_our_own.stop()
    for path in ("/", "/queues/", "/queues/demo/", "/jobs/01a", "/tokens/"):
        response = browser.get(path)
        assert response.status_code == 200, (path, response.status_code)
    refused = Client().post("/login", {"username": "olive", "password": "olive-password"})
    assert refused.status_code == 503 and int(refused["Retry-After"]) > 0
    assert "paused" in refused.content.decode()
    api = Client()
    by_password = api.get("/api/v1/queues", **basic("olive", "olive-password"))
    assert by_password.status_code == 503 and "paused" in by_password.json()["message"]
    assert int(by_password["Retry-After"]) > 0
    by_token = api.get("/api/v1/queues", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert by_token.status_code == 200
    ready = Client().get("/readyz")
    assert ready.status_code == 200 and ready.json()["degraded"] == ["broker"]
    assert browser.post("/logout").status_code == 302
    assert browser.get("/queues/").status_code == 302  # logged out, in the database too

    redis_of_our_own.start()
    again = Client()
    assert (
        again.post("/login", {"username": "olive", "password": "olive-password"}).status_code == 302
    )
    assert again.get("/queues/").status_code == 200
    assert Client().get("/readyz").json()["status"] == "ready"
