"""Lookout's API tokens page: create (the key shown once), list, revoke after a
confirmation; each user sees and revokes only their own tokens."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from armada.models import ApiToken
from armada.services.tokens import key_digest, token_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def logged_in(client, owner):
    client.force_login(owner)
    return client


def shown_key(html: str) -> str | None:
    found = re.search(r'id="new-key"[^>]*value="(arm_[^"]+)"', html)
    return found.group(1) if found else None


def test_the_page_needs_a_login(client):
    response = client.get("/tokens/")
    assert response.status_code == 302 and response["Location"] == "/login?next=/tokens/"


def test_creating_a_token_shows_its_key_once_and_stores_only_its_digest(logged_in):
    response = logged_in.post("/tokens/", {"name": "laptop", "expires": "30d"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    key = shown_key(response.content.decode())
    assert key is not None
    token = ApiToken.objects.get()
    assert token.digest == key_digest(key) and token.name == "laptop"
    assert abs((token.expires_at - timezone.now()).days - 30) <= 1

    again = logged_in.get("/tokens/").content.decode()
    assert key not in again and shown_key(again) is None
    assert "laptop" in again and f"{token.prefix}…" in again
    assert client_bearer_works(key)


def client_bearer_works(key: str) -> bool:
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api.get("/api/v1/queues").status_code == 200


def test_a_token_gets_the_configured_lifetime_when_none_is_chosen(logged_in):
    page = logged_in.get("/tokens/").content.decode()
    # Offered: up to the maximum (a year by default), 90 days chosen; never is not offered.
    assert re.findall(r'<option value="([^"]*)"', page) == ["7d", "30d", "90d", "365d"]
    assert '<option value="90d" selected>' in page
    logged_in.post("/tokens/", {"name": "ci", "expires": ""})
    assert abs((ApiToken.objects.get().expires_at - timezone.now()).days - 90) <= 1
    refused = logged_in.post("/tokens/", {"name": "ci2", "expires": "never"})
    assert refused.status_code == 400 and ApiToken.objects.count() == 1


def test_without_a_maximum_a_token_may_never_expire(logged_in, settings):
    settings.ARMADA = settings.ARMADA.model_copy(
        update={
            "auth": settings.ARMADA.auth.model_copy(
                update={"token_lifetime": 14 * 86400.0, "token_max_lifetime": 0.0}
            )
        }
    )
    page = logged_in.get("/tokens/").content.decode()
    options = re.findall(r'<option value="([^"]*)"', page)
    assert options == ["7d", "14d", "30d", "90d", "365d", "never"]
    assert '<option value="14d" selected>' in page
    logged_in.post("/tokens/", {"name": "ci", "expires": "never"})
    assert ApiToken.objects.get().expires_at is None
    assert "never" in logged_in.get("/tokens/").content.decode()


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"name": "", "expires": "30d"}, "This field is required"),
        ({"name": "x" * 101, "expires": "30d"}, "at most 100 characters"),
        ({"name": "ok", "expires": "forever"}, "Select a valid choice"),
        # refused by the form or, earlier, by the rule that no input may hold NUL
        ({"name": "nul\x00", "expires": "30d"}, ("Null characters", "NUL character")),
        ({"name": "tab\there", "expires": "30d"}, "control characters"),
    ],
)
def test_bad_input_is_400_with_the_problem_and_creates_nothing(logged_in, data, fragment):
    response = logged_in.post("/tokens/", data)
    assert response.status_code == 400
    html = response.content.decode()
    assert any(f in html for f in ((fragment,) if isinstance(fragment, str) else fragment))
    assert not ApiToken.objects.exists()


def test_a_taken_name_is_a_form_error(logged_in, owner):
    token_create(user=owner, name="laptop", expires_at=None, now=timezone.now())
    response = logged_in.post("/tokens/", {"name": "laptop", "expires": "30d"})
    assert response.status_code == 400
    assert "already have a token named" in response.content.decode()
    assert ApiToken.objects.count() == 1


def test_the_list_shows_only_your_tokens(logged_in, owner, outsider):
    now = timezone.now()
    token_create(user=owner, name="mine", expires_at=None, now=now)
    token_create(user=outsider, name="theirs", expires_at=None, now=now)
    html = logged_in.get("/tokens/").content.decode()
    assert "mine" in html and "theirs" not in html


def test_revoking_asks_first_then_revokes(logged_in, owner):
    token = token_create(user=owner, name="laptop", expires_at=None, now=timezone.now()).token
    confirm = logged_in.get(f"/tokens/{token.pk}/revoke")
    assert confirm.status_code == 200
    assert "Revoke token laptop?" in confirm.content.decode()
    assert ApiToken.objects.get().revoked_at is None  # asking changes nothing

    done = logged_in.post(f"/tokens/{token.pk}/revoke")
    assert done.status_code == 302 and done["Location"] == "/tokens/"
    assert ApiToken.objects.get().revoked_at is not None
    page = logged_in.get("/tokens/").content.decode()
    assert "Token laptop revoked" in page and "You have no tokens yet" in page


@pytest.mark.parametrize("method", ["get", "post"])
def test_another_users_or_a_missing_token_is_404(logged_in, outsider, method):
    theirs = token_create(user=outsider, name="theirs", expires_at=None, now=timezone.now())
    for token_id in (theirs.token.pk, 999999, "abc", "%00"):
        assert getattr(logged_in, method)(f"/tokens/{token_id}/revoke").status_code == 404
    assert ApiToken.objects.get().revoked_at is None
