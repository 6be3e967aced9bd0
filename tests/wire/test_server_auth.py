"""The gRPC server's authentication (``armada.wire.server``) with real gRPC clients against a
``grpc.aio`` server in this process (tests/wire/grpc_server.py): our API's credentials,
anonymous access and throttling.

The server's worker threads use their own database connections, so these tests commit
(``transaction=True``)."""

from __future__ import annotations

import grpc
import pytest
from armada_client.armada import submit_pb2
from rest_framework.authtoken.models import Token

from armada.core.config import parse_config
from armada.services.tokens import token_create
from armada.wire.registry import Call
from tests.conftest import T0
from tests.wire.fake_operations import operation
from tests.wire.grpc_server import InProcessServer, basic, bearer, failure, get_queue

pytestmark = pytest.mark.django_db(transaction=True)


def whoami(call: Call, request: submit_pb2.QueueGetRequest) -> submit_pb2.Queue:
    """A test operation that answers with the caller's name (empty for anonymous)."""
    return submit_pb2.Queue(name=call.actor.get_username(), user_owners=[request.name])


@pytest.fixture
def whoami_server(serve) -> InProcessServer:
    return serve({"api.Submit/GetQueue": operation("api.Submit/GetQueue", whoami)})


# --- authentication ---------------------------------------------------------------------


def test_basic_credentials_are_a_user(whoami_server, owner):
    assert get_queue(whoami_server, basic("olive", "olive-password")).name == "olive"


def test_a_personal_token_and_a_legacy_token_are_their_users(whoami_server, owner, outsider):
    key = token_create(user=owner, name="grpc", expires_at=None, now=T0).key
    assert get_queue(whoami_server, bearer(key)).name == "olive"
    legacy = Token.objects.create(user=outsider)
    assert get_queue(whoami_server, (("authorization", f"Token {legacy.key}"),)).name == "otto"


def test_no_credentials_are_unauthenticated(whoami_server):
    error = failure(lambda: get_queue(whoami_server))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "authorization: Bearer <token>" in error.details()


def test_anonymous_access_when_configured_and_bad_credentials_are_still_refused(
    whoami_server, settings, owner
):
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True}})
    assert get_queue(whoami_server).name == "anonymous"  # Armada's name for them
    error = failure(lambda: get_queue(whoami_server, basic("olive", "wrong")))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        (basic("olive", "wrong"), "invalid username or password"),
        (bearer("arm_" + "x" * 40), "invalid token"),
        (bearer("not-a-token"), "no such token"),
        ((("authorization", "Basic !!!"),), "invalid basic header"),
        ((("authorization", "Negotiate abc"),), "unsupported authorization scheme"),
    ],
)
def test_bad_credentials_are_unauthenticated_saying_why(whoami_server, owner, metadata, words):
    error = failure(lambda: get_queue(whoami_server, metadata))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert words in error.details()


def test_failed_logins_are_throttled_as_on_rest(whoami_server, owner, settings):
    limit = settings.LOGIN_THROTTLE["USER_FAILURES"]
    for _ in range(limit):
        assert (
            failure(lambda: get_queue(whoami_server, basic("olive", "wrong"))).code()
            == grpc.StatusCode.UNAUTHENTICATED
        )
    error = failure(lambda: get_queue(whoami_server, basic("olive", "olive-password")))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "try again" in error.details().lower() or "locked" in error.details().lower()
