"""The ASGI body guard, called as a server would call it: a scope, and a ``receive`` that
counts how many bytes of the body were pulled. Oversized bodies and unauthenticated API
callers are answered before a byte is read; chunked bodies are read up to the limit and
handed on whole; a Basic password is hashed once per request."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterable

import pytest
from django.test import Client
from django.utils import timezone

from armada.api import auth as auth_module
from armada.api.auth import SCOPE_KEY
from armada.api.bodyguard import BodyGuard
from armada.models import Job, Queue
from armada.services import login_throttle
from armada.services.tokens import token_create
from tests.conftest import job, job_file

pytestmark = pytest.mark.django_db(transaction=True)

MiB = 1024 * 1024


class Upload:
    """``receive`` for a body of ``total`` bytes sent in ``chunk``-sized messages; counts
    what was pulled. After the body it waits (as a server does) until the test ends."""

    def __init__(self, body: bytes | int = b"", chunk: int = 64 * 1024) -> None:
        self.body = body if isinstance(body, bytes) else b"x" * body
        self.chunk = chunk
        self.pulled = 0
        self.disconnect_after: int | None = None

    async def __call__(self) -> dict:
        if self.disconnect_after is not None and self.pulled >= self.disconnect_after:
            return {"type": "http.disconnect"}
        if self.pulled >= len(self.body) and self.body:
            await asyncio.sleep(3600)
        piece = self.body[self.pulled : self.pulled + self.chunk]
        self.pulled += len(piece)
        return {"type": "http.request", "body": piece, "more_body": self.pulled < len(self.body)}


class Inner:
    """The application behind the guard: reads the whole body and answers 200."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.bodies: list[bytes] = []

    async def __call__(self, scope, receive, send) -> None:
        self.calls.append(scope)
        body = b""
        if scope["type"] == "http":
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
        self.bodies.append(body)
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})


def scope(
    path: str = "/api/v1/jobs",
    headers: Iterable[tuple[str, str]] = (),
    method: str = "POST",
) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


def call(app, scope: dict, upload: Upload, timeout: float = 60) -> dict:
    """Run the app; returns ``{"status", "headers", "body"}`` (status None: no answer)."""
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(asyncio.wait_for(app(scope, upload, send), timeout))
    start = next((m for m in sent if m["type"] == "http.response.start"), None)
    return {
        "status": start["status"] if start else None,
        "headers": {k.decode(): v.decode() for k, v in (start or {}).get("headers", [])},
        "body": b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"),
    }


def basic(username: str, password: str) -> tuple[str, str]:
    return (
        "Authorization",
        "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode(),
    )


def length(n: int) -> tuple[str, str]:
    return ("Content-Length", str(n))


CHUNKED = ("Transfer-Encoding", "chunked")


@pytest.fixture
def bearer(owner) -> tuple[str, str]:
    key = token_create(user=owner, name="t", expires_at=None, now=timezone.now()).key
    return ("Authorization", f"Bearer {key}")


@pytest.fixture
def inner() -> Inner:
    return Inner()


@pytest.fixture
def guard(inner) -> BodyGuard:
    return BodyGuard(inner)


def message(answer: dict) -> str:
    return json.loads(answer["body"])["message"]


# --- refused before a byte is read ---------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/v1/jobs", "/policies/new", "/login"])
def test_a_declared_length_over_the_limit_is_413_before_anything_is_read(
    guard, inner, bearer, path
):
    upload = Upload(300 * MiB)
    answer = call(guard, scope(path, [bearer, length(300 * MiB)]), upload)
    assert answer["status"] == 413 and upload.pulled == 0 and inner.calls == []
    assert f"the request body is {300 * MiB} bytes; at most {10 * MiB}" in answer["body"].decode()
    assert answer["headers"]["connection"] == "close"


def test_an_api_body_without_credentials_is_401_before_anything_is_read(guard, inner):
    upload = Upload(5 * MiB)
    answer = call(guard, scope("/api/v1/jobs", [length(5 * MiB)]), upload)
    assert answer["status"] == 401 and upload.pulled == 0 and inner.calls == []
    assert answer["headers"]["content-type"] == "application/json"
    assert answer["headers"]["www-authenticate"] == 'Bearer realm="api"'
    assert set(json.loads(answer["body"])) == {"message", "errors"}
    assert "credentials were not provided" in message(answer)


@pytest.mark.parametrize(
    ("header", "fragment"),
    [
        (("Authorization", "Bearer arm_" + "q" * 40), "no such token"),
        (("Authorization", "Token not-a-legacy-key"), "no such token"),
        (basic("olive", "wrong"), "invalid username or password"),
        (("Authorization", "Basic !!!"), "invalid basic header"),
    ],
)
def test_bad_credentials_are_401_before_anything_is_read(guard, inner, owner, header, fragment):
    upload = Upload(MiB)
    answer = call(guard, scope("/api/v1/queues", [header, length(MiB)]), upload)
    assert answer["status"] == 401 and upload.pulled == 0 and inner.calls == []
    assert fragment in message(answer)


def test_a_throttled_login_is_429_with_retry_after_before_anything_is_read(guard, inner, owner):
    for _ in range(5):
        login_throttle.login_failed(
            username="olive", address="127.0.0.1", now=login_throttle.wall_clock()
        )
    upload = Upload(MiB)
    answer = call(
        guard, scope("/api/v1/queues", [basic("olive", "olive-password"), length(MiB)]), upload
    )
    assert answer["status"] == 429 and upload.pulled == 0 and inner.calls == []
    assert int(answer["headers"]["retry-after"]) >= 9
    assert "too many failed logins for user 'olive'" in message(answer)


def test_a_wrong_password_before_the_body_is_counted_by_the_throttle(guard, owner):
    call(guard, scope("/api/v1/queues", [basic("olive", "wrong"), length(10)]), Upload(10))
    assert login_throttle.login_failures(username="olive") == 1


def test_an_anonymous_form_post_over_the_small_limit_is_413_unread(guard, inner):
    upload = Upload(65 * 1024)
    answer = call(guard, scope("/login", [length(65 * 1024)]), upload)
    assert answer["status"] == 413 and upload.pulled == 0 and inner.calls == []
    assert "at most 65536 are accepted before you log in" in answer["body"].decode()
    assert answer["headers"]["content-type"].startswith("text/plain")


# --- let through -----------------------------------------------------------------------------


def test_a_token_callers_body_reaches_the_app_whole_with_who_they_are(guard, inner, bearer, owner):
    upload = Upload(3 * MiB)
    answer = call(guard, scope("/api/v1/jobs", [bearer, length(3 * MiB)]), upload)
    assert answer["status"] == 200 and inner.bodies == [b"x" * 3 * MiB]
    kind, user, token = inner.calls[0][SCOPE_KEY]
    assert (kind, user, token.name) == ("token", owner, "t")


def test_an_anonymous_form_post_within_the_small_limit_is_let_through(guard, inner):
    answer = call(guard, scope("/login", [length(2000)]), Upload(2000))
    assert answer["status"] == 200 and len(inner.bodies[0]) == 2000


def test_a_logged_in_browser_may_post_more_than_the_anonymous_limit(guard, inner, owner):
    browser = Client()
    browser.force_login(owner)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    answer = call(guard, scope("/policies/new", [("Cookie", cookie), length(MiB)]), Upload(MiB))
    assert answer["status"] == 200 and len(inner.bodies[0]) == MiB
    api = call(guard, scope("/api/v1/queues", [("Cookie", cookie), length(100)]), Upload(100))
    assert api["status"] == 200  # DRF then checks the session again, with CSRF
    assert SCOPE_KEY not in inner.calls[1]


def test_requests_without_a_body_pass_untouched(guard, inner):
    answer = call(guard, scope("/api/v1/queues", method="GET"), Upload())
    assert answer["status"] == 200 and SCOPE_KEY not in inner.calls[0]
    lifespan = {"type": "lifespan"}
    asyncio.run(guard(lifespan, Upload(), lambda m: asyncio.sleep(0)))
    assert inner.calls[-1] is lifespan


def test_a_content_length_that_is_not_a_number_is_400(guard, inner):
    answer = call(guard, scope("/api/v1/jobs", [("Content-Length", "12abc")]), Upload(12))
    assert answer["status"] == 400 and inner.calls == []


# --- chunked bodies ---------------------------------------------------------------------------


def test_a_chunked_body_is_handed_on_whole_with_its_length(guard, inner, bearer):
    body = json.dumps(job_file()).encode()
    answer = call(guard, scope("/api/v1/jobs", [bearer, CHUNKED]), Upload(body, chunk=100))
    assert answer["status"] == 200 and inner.bodies == [body]
    headers = dict(inner.calls[0]["headers"])
    assert headers[b"content-length"] == str(len(body)).encode()
    assert b"transfer-encoding" not in headers


def test_a_chunked_body_past_the_limit_is_413_and_no_more_is_read(guard, inner, bearer, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = MiB
    upload = Upload(300 * MiB)
    answer = call(guard, scope("/api/v1/jobs", [bearer, CHUNKED]), upload)
    assert answer["status"] == 413 and inner.calls == []
    assert MiB < upload.pulled <= MiB + upload.chunk
    assert "more than 1048576 bytes" in message(answer)


def test_an_anonymous_chunked_form_post_is_cut_at_the_small_limit(guard, inner):
    upload = Upload(300 * MiB)
    answer = call(guard, scope("/login", [CHUNKED]), upload)
    assert answer["status"] == 413 and inner.calls == []
    assert upload.pulled <= 64 * 1024 + upload.chunk


def test_a_chunked_api_body_without_credentials_is_401_unread(guard, inner):
    upload = Upload(300 * MiB)
    answer = call(guard, scope("/api/v1/jobs", [CHUNKED]), upload)
    assert answer["status"] == 401 and upload.pulled == 0


def test_a_client_that_goes_away_mid_body_gets_no_answer(guard, inner, bearer):
    upload = Upload(MiB)
    upload.disconnect_after = 128 * 1024
    answer = call(guard, scope("/api/v1/jobs", [bearer, CHUNKED]), upload)
    assert answer["status"] is None and inner.calls == []


# --- in front of the real application ---------------------------------------------------------


@pytest.fixture
def application():
    from armada.asgi import application

    return application


def test_a_chunked_job_file_is_submitted(application, queue, owner, bearer):
    body = json.dumps(job_file(jobs=[job(), job()])).encode()
    headers = [bearer, CHUNKED, ("Content-Type", "application/json")]
    answer = call(application, scope("/api/v1/jobs", headers), Upload(body, chunk=500))
    assert answer["status"] == 201, answer["body"]
    assert len(json.loads(answer["body"])["jobIds"]) == 2 and Job.objects.count() == 2


def test_a_basic_password_is_checked_once_per_request(application, admin_user, monkeypatch):
    calls = []
    real = auth_module.authenticate

    def counting(**credentials):
        calls.append(credentials["username"])
        return real(**credentials)

    monkeypatch.setattr(auth_module, "authenticate", counting)
    body = json.dumps({"name": "once"}).encode()
    headers = [
        basic("root", "root-password"),
        length(len(body)),
        ("Content-Type", "application/json"),
    ]
    answer = call(application, scope("/api/v1/queues", headers), Upload(body))
    assert answer["status"] == 201, answer["body"]
    assert calls == ["root"] and Queue.objects.filter(name="once").exists()
