"""API tokens over REST: create (the key once), list (never the keys), revoke; Bearer and
Token keywords; refusals that say why; legacy tokens; the event stream; Basic auth's
throttle; and one token and the throttle hammered by threads on a real server."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from datetime import timedelta

import pytest
import requests
from django.test import AsyncClient
from django.utils import timezone
from rest_framework.test import APIClient

from armada.api.auth import token_credentials
from armada.models import ApiToken
from armada.services import login_throttle
from armada.services.submit import job_submit
from armada.services.tokens import key_digest, token_create, token_revoke
from tests.conftest import T0, job_file

pytestmark = pytest.mark.django_db


def client(authorization: str | None = None) -> APIClient:
    api = APIClient()
    if authorization:
        api.credentials(HTTP_AUTHORIZATION=authorization)
    return api


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def new_key(user, name: str = "laptop", **extra) -> str:
    return token_create(user=user, name=name, expires_at=None, now=timezone.now(), **extra).key


def assert_error(response, status: int, fragment: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"message", "errors"} and fragment in body["message"], body
    return body


# --- create, list, revoke -----------------------------------------------------------------


def test_a_token_is_created_with_its_key_once_and_listed_without_it(owner):
    created = client(basic("olive", "olive-password")).post(
        "/api/v1/tokens", {"name": "laptop", "expiresIn": "30d"}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert created["Cache-Control"] == "no-store"
    body = created.json()
    key = body["key"]
    assert key.startswith("arm_") and body["prefix"] == key[:12] and body["name"] == "laptop"
    assert body["expiresAt"] and body["lastUsedAt"] is None and body["expired"] is False
    assert ApiToken.objects.get().digest == key_digest(key)

    listed = client(f"Bearer {key}").get("/api/v1/tokens")
    assert listed.status_code == 200
    [row] = listed.json()
    assert "key" not in row and key not in json.dumps(listed.json())
    assert row["id"] == body["id"] and row["current"] is True and row["lastUsedAt"]


def test_the_list_holds_only_your_live_tokens_and_marks_expired_ones(owner, outsider):
    now = timezone.now()
    token_create(user=owner, name="mine", expires_at=now + timedelta(seconds=1), now=now)
    token_create(user=outsider, name="theirs", expires_at=None, now=now)
    gone = token_create(user=owner, name="gone", expires_at=None, now=now)
    token_revoke(user=owner, token_id=gone.token.pk, now=now)
    ApiToken.objects.filter(name="mine").update(expires_at=now - timedelta(seconds=1))
    rows = client(basic("olive", "olive-password")).get("/api/v1/tokens").json()
    assert [(r["name"], r["expired"], r["current"]) for r in rows] == [("mine", True, False)]


def test_revoking_stops_the_key_at_once_and_only_the_owner_may(owner, outsider):
    key = new_key(owner)
    token_id = ApiToken.objects.get().pk
    as_outsider = client(basic("otto", "otto-password"))
    assert_error(as_outsider.delete(f"/api/v1/tokens/{token_id}"), 404, "no token with id")
    assert client(f"Token {key}").get("/api/v1/queues").status_code == 200

    assert client(f"Bearer {key}").delete(f"/api/v1/tokens/{token_id}").status_code == 204
    assert_error(client(f"Token {key}").get("/api/v1/queues"), 401, "was revoked")
    as_owner = client(basic("olive", "olive-password"))
    assert_error(as_owner.delete(f"/api/v1/tokens/{token_id}"), 404, "no token with id")


@pytest.mark.parametrize("token_id", ["abc", "0", "-1", "99999999999999999999999", "1.5"])
def test_revoking_an_id_that_is_not_yours_is_404(owner, token_id):
    assert_error(
        client(basic("olive", "olive-password")).delete(f"/api/v1/tokens/{token_id}"),
        404,
        "no token with id",
    )


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        ({}, "name", "is required"),
        ({"name": ""}, "name", "is required"),
        ({"name": "x" * 101}, "name", "at most 100"),
        ({"name": "a\x00b"}, "name", ""),
        ({"name": "ok", "expiresIn": "forever"}, "expiresIn", "is not a duration"),
        ({"name": "ok", "expiresIn": "1d", "expiresAt": "2099-01-01T00:00:00Z"}, "expiresIn", ""),
        ({"name": "ok", "expiresAt": "2001-01-01T00:00:00Z"}, "expiresAt", "in the future"),
        ({"name": "ok", "expiresAt": ["x"]}, "expiresAt", ""),
        ({"name": "ok", "scopes": ["admin"]}, "scopes", "unknown field"),
        (["name"], "", "JSON object"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_creates_nothing(owner, body, field, fragment):
    response = client(basic("olive", "olive-password")).post("/api/v1/tokens", body, format="json")
    error = assert_error(response, 400, fragment)
    assert error["errors"] and error["errors"][0]["field"] == field, error
    assert not ApiToken.objects.exists()


def test_a_second_token_of_the_same_name_is_409(owner):
    new_key(owner)
    response = client(basic("olive", "olive-password")).post(
        "/api/v1/tokens", {"name": "laptop"}, format="json"
    )
    assert_error(response, 409, "already have a token named 'laptop'")
    assert ApiToken.objects.count() == 1


def test_anonymous_callers_cannot_make_tokens(owner):
    response = client().post("/api/v1/tokens", {"name": "x"}, format="json")
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert not ApiToken.objects.exists()


# --- authenticating with a token ------------------------------------------------------------


@pytest.mark.parametrize("keyword", ["Bearer", "Token", "bearer", "token"])
def test_both_keywords_authenticate(owner, queue, keyword):
    key = new_key(owner)
    response = client(f"{keyword} {key}").get("/api/v1/queues")
    assert response.status_code == 200 and [q["name"] for q in response.json()] == ["demo"]


@pytest.mark.parametrize(
    ("authorization", "fragment"),
    [
        ("Bearer arm_" + "x" * 40, "no such token"),
        ("Bearer 0123456789abcdef0123456789abcdef01234567", "no such token"),
        ("Token", "invalid token header"),
        ("Bearer a b", "invalid token header"),
    ],
)
def test_unknown_keys_are_401_saying_why(owner, authorization, fragment):
    new_key(owner)
    assert_error(client(authorization).get("/api/v1/queues"), 401, fragment)


def test_an_expired_token_is_401_saying_so(owner):
    key = new_key(owner)
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    assert_error(client(f"Bearer {key}").get("/api/v1/queues"), 401, "'laptop' expired at")


def test_anonymous_calls_are_401_with_www_authenticate(owner):
    response = client().get("/api/v1/queues")
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="api"'


def test_a_token_makes_only_tokens_that_expire_no_later_than_itself(owner):
    """So that revoking a token is not undone by one it made with a longer life; a password
    may make any within the maximum."""
    parent_expiry = timezone.now() + timedelta(days=5)
    key = token_create(user=owner, name="parent", expires_at=parent_expiry, now=timezone.now()).key
    as_token = client(f"Bearer {key}")
    made = as_token.post("/api/v1/tokens", {"name": "child"}, format="json")
    assert made.status_code == 201, made.json()
    child = ApiToken.objects.get(name="child")
    assert child.expires_at == parent_expiry  # the default (90 days) cut to the parent's
    longer = as_token.post("/api/v1/tokens", {"name": "c2", "expiresIn": "30d"}, format="json")
    body = assert_error(longer, 400, "no later than")
    assert body["errors"][0]["field"] == "expiresIn"
    assert not ApiToken.objects.filter(name="c2").exists()
    by_password = client(basic("olive", "olive-password")).post(
        "/api/v1/tokens", {"name": "c3", "expiresIn": "365d"}, format="json"
    )
    assert by_password.status_code == 201, by_password.json()
    too_long = client(basic("olive", "olive-password")).post(
        "/api/v1/tokens", {"name": "c4", "expiresIn": "400d"}, format="json"
    )
    assert_error(too_long, 400, "at most 365 days")


def test_a_token_that_never_expires_may_not_make_tokens(owner):
    from rest_framework.authtoken.models import Token

    forever = token_create(user=owner, name="old", expires_at=None, now=timezone.now()).key
    legacy = Token.objects.create(user=owner).key
    for header in (f"Bearer {forever}", f"Token {legacy}"):
        response = client(header).post("/api/v1/tokens", {"name": "x"}, format="json")
        assert_error(response, 403, "log in with your password")
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["old"]


def test_legacy_drf_tokens_still_work(owner):
    from rest_framework.authtoken.models import Token

    legacy = Token.objects.create(user=owner).key
    assert client(f"Token {legacy}").get("/api/v1/queues").status_code == 200
    assert client(f"Bearer {legacy}").get("/api/v1/queues").status_code == 200


def test_a_token_call_is_one_query_and_no_password_hash(owner, django_assert_num_queries):
    key = new_key(owner)
    token_credentials(f"Bearer {key}")  # the first use writes last_used_at
    with django_assert_num_queries(1) as captured:
        user, token = token_credentials(f"Bearer {key}")
    assert user == owner and token.name == "laptop"
    sql = captured.captured_queries[0]["sql"]
    assert "JOIN" in sql and '"digest" =' in sql


def test_the_event_stream_takes_a_token(owner, queue, transactional_db):
    job_submit(actor=owner, data=job_file(), now=T0)
    key = new_key(owner)

    async def get(authorization: str) -> tuple[int, str]:
        response = await AsyncClient().get(
            "/api/v1/job-sets/demo/set-1/events", headers={"Authorization": authorization}
        )
        if not response.streaming:
            return response.status_code, response.content.decode()
        body = ""
        async for chunk in response.streaming_content:
            body += chunk.decode() if isinstance(chunk, bytes) else chunk
        return response.status_code, body

    status, body = asyncio.run(get(f"Bearer {key}"))
    assert status == 200
    assert [json.loads(line)["type"] for line in body.splitlines() if line] == [
        "submitted",
        "queued",
    ]
    status, body = asyncio.run(get("Bearer arm_" + "z" * 40))
    assert status == 401 and "no such token" in body


# --- Basic auth and its throttle -------------------------------------------------------------


def test_five_wrong_passwords_then_the_right_one_is_429_until_the_delay_passes(
    owner, outsider, monkeypatch
):
    clock = [1_800_000_000.0]
    monkeypatch.setattr(login_throttle, "wall_clock", lambda: clock[0])
    for _ in range(5):
        assert_error(client(basic("olive", "wrong")).get("/api/v1/queues"), 401, "invalid")
    refused = client(basic("olive", "olive-password")).get("/api/v1/queues")
    assert_error(refused, 429, "too many failed logins for user 'olive': try again in 10 seconds")
    assert refused["Retry-After"] == "10"
    assert client(basic("otto", "otto-password")).get("/api/v1/queues").status_code == 200

    clock[0] += 10
    assert client(basic("olive", "olive-password")).get("/api/v1/queues").status_code == 200
    assert login_throttle.login_failures(username="olive") == 0


def test_a_token_is_not_throttled_by_its_users_failed_passwords(owner):
    key = new_key(owner)
    for _ in range(6):
        client(basic("olive", "wrong")).get("/api/v1/queues")
    assert client(basic("olive", "olive-password")).get("/api/v1/queues").status_code == 429
    assert client(f"Bearer {key}").get("/api/v1/queues").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_eight_threads_hammering_a_token_and_the_throttle_at_once(live_server, owner, queue):
    """Four threads call with one token while four send wrong passwords for another user,
    all at once against the live server on the real database: every token call succeeds,
    every refused password is counted, and the token's last use is written."""
    key = new_key(owner)
    victim = "otto-victim"
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user(victim, password="right-password")
    results: dict[str, list[int]] = {"token": [], "basic": []}
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def hammer(kind: str) -> None:
        headers = (
            {"Authorization": f"Bearer {key}"}
            if kind == "token"
            else {"Authorization": basic(victim, "wrong")}
        )
        try:
            with requests.Session() as session:
                start.wait(timeout=60)
                for _ in range(15):
                    status = session.get(
                        f"{live_server.url}/api/v1/queues", headers=headers, timeout=60
                    ).status_code
                    with lock:
                        results[kind].append(status)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(k,)) for k in ["token", "basic"] * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert errors == [] and not any(t.is_alive() for t in threads)
    assert results["token"] == [200] * 60
    assert len(results["basic"]) == 60 and set(results["basic"]) <= {401, 429}
    assert 429 in results["basic"]
    assert login_throttle.login_failures(username=victim) == results["basic"].count(401)
    assert ApiToken.objects.get().last_used_at is not None
