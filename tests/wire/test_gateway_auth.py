"""The REST gateway's authentication: our API's credentials, sessions, throttling and
anonymous access, and the ASGI body guard in front of the gateway.

Most tests swap a test-only operation into the registry for one method (the ``swap`` fixture
of tests/wire/conftest.py), so that what the gateway hands the operation (and what it does
with the answer) can be seen exactly."""

from __future__ import annotations

import json

import pytest
from armada_client.armada import submit_pb2
from django.test import Client
from django.utils import timezone
from google.protobuf import empty_pb2
from rest_framework.authtoken.models import Token

from armada.api.bodyguard import BodyGuard
from armada.core.config import parse_config
from armada.services.tokens import token_create
from tests.api.test_bodyguard import Inner, Upload, basic, call, length, scope
from tests.wire.gateway_calls import body, post

pytestmark = pytest.mark.django_db


# --- authentication ----------------------------------------------------------------------


@pytest.fixture
def whoami(swap) -> list:
    return swap(
        "api.Submit/GetQueue",
        lambda c, r: submit_pb2.Queue(name=r.name, user_owners=[c.actor.get_username()]),
    )


def test_no_credentials_are_401_with_the_gateways_shape(whoami):
    response = Client(HTTP_HOST="localhost").get("/v1/queue/x")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert body(response)["code"] == 16
    assert "Authorization: Bearer" in body(response)["message"]
    assert whoami == []


def test_tokens_and_basic_credentials_are_their_users(whoami, owner, outsider):
    anonymous = Client(HTTP_HOST="localhost")
    key = token_create(user=owner, name="gw", expires_at=None, now=timezone.now()).key
    legacy = Token.objects.create(user=outsider).key
    for header, user in (
        (f"Bearer {key}", "olive"),
        (f"Token {legacy}", "otto"),
        (basic("olive", "olive-password")[1], "olive"),
    ):
        response = anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=header)
        assert response.status_code == 200, response.content
        assert body(response)["userOwners"] == [user]
    response = anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=basic("olive", "nope")[1])
    assert response.status_code == 401
    wrong = "invalid username or password"
    assert body(response) == {"error": wrong, "code": 16, "message": wrong}


def test_failed_logins_are_throttled_429(whoami, owner, settings):
    anonymous = Client(HTTP_HOST="localhost")
    for _ in range(settings.LOGIN_THROTTLE["USER_FAILURES"]):
        anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=basic("olive", "nope")[1])
    response = anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=basic("olive", "olive-password")[1])
    assert response.status_code == 429
    assert body(response)["code"] == 8
    assert int(response["Retry-After"]) >= 1


def test_a_session_needs_its_csrf_token_for_a_post(swap, owner):
    seen = swap("api.Submit/CancelJobSet", lambda c, r: empty_pb2.Empty())
    browser = Client(HTTP_HOST="localhost", enforce_csrf_checks=True)
    browser.force_login(owner)
    response = post(browser, "/v1/jobset/cancel", {"queue": "q", "jobSetId": "s"})
    assert response.status_code == 403
    assert body(response)["code"] == 7
    assert "CSRF" in body(response)["message"]
    assert seen == []
    token = "A" * 32  # a CSRF secret in the cookie, and the same in the header
    browser.cookies["csrftoken"] = token
    response = post(
        browser, "/v1/jobset/cancel", {"queue": "q", "jobSetId": "s"}, HTTP_X_CSRFTOKEN=token
    )
    assert response.status_code == 200, response.content
    assert seen[0][0].actor == owner


def test_anonymous_access_when_configured(whoami, settings, owner):
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True}})
    anonymous = Client(HTTP_HOST="localhost")
    response = anonymous.get("/v1/queue/x")
    assert response.status_code == 200
    assert body(response)["userOwners"] == ["anonymous"]  # Armada's name for them
    assert not whoami[0][0].actor.is_authenticated
    # Credentials that are sent must still be right.
    response = anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=basic("olive", "nope")[1])
    assert response.status_code == 401


# --- the ASGI body guard -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_body_guard_refuses_an_unknown_gateway_caller_before_reading_the_body():
    inner = Inner()
    upload = Upload(5000)
    answer = call(BodyGuard(inner), scope("/v1/job/submit", [length(5000)]), upload)
    assert answer["status"] == 401
    assert json.loads(answer["body"])["code"] == 16
    assert upload.pulled == 0 and inner.calls == []


@pytest.mark.django_db(transaction=True)
def test_with_anonymous_access_the_guard_lets_small_anonymous_bodies_through(settings, owner):
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True}})
    inner = Inner()
    answer = call(BodyGuard(inner), scope("/v1/job/submit", [length(100)]), Upload(100))
    assert answer["status"] == 200 and len(inner.calls) == 1
    big = settings.ANONYMOUS_MAX_BODY_BYTES + 1
    upload = Upload(big)
    answer = call(BodyGuard(inner), scope("/v1/job/submit", [length(big)]), upload)
    assert answer["status"] == 413 and upload.pulled == 0
    assert json.loads(answer["body"])["code"] == 8
    # A known caller may send the full limit; a wrong password is 401 all the same.
    answer = call(
        BodyGuard(inner),
        scope("/v1/job/submit", [length(big), basic("olive", "olive-password")]),
        Upload(big),
    )
    assert answer["status"] == 200
    answer = call(
        BodyGuard(inner), scope("/v1/job/submit", [length(100), basic("olive", "no")]), Upload(100)
    )
    assert answer["status"] == 401
