"""API tokens in the admin: operators see everyone's (never a key) and revoke them."""

from __future__ import annotations

import pytest
from django.utils import timezone

from armada.models import ApiToken
from armada.services.tokens import token_create

pytestmark = pytest.mark.django_db


def test_operators_list_and_revoke_anyones_tokens(client, admin_user, owner, outsider):
    now = timezone.now()
    keys = [
        token_create(user=user, name=f"{user.username}-laptop", expires_at=None, now=now).key
        for user in (owner, outsider)
    ]
    client.force_login(admin_user)
    page = client.get("/admin/armada/apitoken/", {"q": "olive"})
    html = page.content.decode()
    assert page.status_code == 200 and "olive-laptop" in html and "otto-laptop" not in html
    assert not any(key in html for key in keys)

    ids = [str(pk) for pk in ApiToken.objects.values_list("pk", flat=True)]
    response = client.post(
        "/admin/armada/apitoken/", {"action": "revoke", "_selected_action": ids}, follow=True
    )
    assert "Revoked 2 token(s)." in response.content.decode()
    assert ApiToken.objects.filter(revoked_at__isnull=True).count() == 0
    assert client.get("/admin/armada/apitoken/add/").status_code == 403


def test_people_who_are_not_staff_cannot_reach_the_tokens_admin(client, owner):
    client.force_login(owner)
    response = client.get("/admin/armada/apitoken/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_the_admin_index_lists_one_kind_of_token(client, admin_user):
    client.force_login(admin_user)
    html = client.get("/admin/").content.decode()
    assert "API tokens" in html
    assert "/admin/authtoken/" not in html
