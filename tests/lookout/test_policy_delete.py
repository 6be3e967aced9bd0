"""Deleting a retry policy from Lookout: a confirmation that says which queues use it, then
POST with CSRF; refused as the API refuses (a policy a queue names: 409 naming the queues;
no ``delete_retry_policy``: 403 naming it), and nothing changes when refused."""

from __future__ import annotations

import html

import pytest
import yaml
from django.contrib.auth.models import Permission
from django.test import Client

from armada.core.config import parse_config
from armada.models import Queue, RetryPolicy, RetryPolicyVersion
from armada.services.policies import policy_create
from tests.conftest import T0
from tests.lookout.test_policies_pages import POLICY

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def engine_config(settings):
    settings.ARMADA = parse_config(
        {"scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": 10}}}
    )


@pytest.fixture
def policy(admin_user):
    return policy_create(actor=admin_user, data=yaml.safe_load(POLICY), now=T0)


def as_user(user, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


@pytest.fixture
def editor(django_user_model):
    """May read and update policies, not delete them."""
    user = django_user_model.objects.create_user("eddie", password="eddie-password")
    user.user_permissions.add(Permission.objects.get(codename="update_retry_policy"))
    return user


def test_an_unused_policy_is_deleted_after_a_confirmation(admin_user, policy, queue):
    client = as_user(admin_user)
    page = client.get("/policies/ml/").content.decode()
    assert 'href="/policies/ml/delete"' in page
    confirm = client.get("/policies/ml/delete")
    text = confirm.content.decode()
    assert confirm.status_code == 200
    assert "No queue names this policy: deleting it changes no queue." in text
    assert '<form method="post" action="/policies/ml/delete"' in text
    assert RetryPolicy.objects.filter(name="ml").exists()  # asking deletes nothing
    response = client.post("/policies/ml/delete", follow=True)
    assert response.redirect_chain == [("/policies/", 302)]
    assert "Deleted retry policy ml" in response.content.decode()
    assert not RetryPolicy.objects.filter(name="ml").exists()
    assert RetryPolicyVersion.objects.filter(policy_name="ml").count() == 1  # history kept
    assert client.get("/policies/ml/delete").status_code == 404


def test_a_policy_in_use_is_refused_naming_the_queues_as_the_api_does(admin_user, policy, queue):
    Queue.objects.filter(name="demo").update(retry_policies=["ml"])
    client = as_user(admin_user)
    confirm = client.get("/policies/ml/delete").content.decode()
    assert '<a href="/queues/demo/">demo</a>' in confirm
    assert "cannot be deleted" in confirm and 'href="/policies/ml/#queues"' in confirm
    assert "<button" not in confirm.split("</header>")[1].replace('class="link">Log out', "")
    refused = client.post("/policies/ml/delete")
    api = client.delete("/api/v1/retry-policies/ml")
    assert (refused.status_code, api.status_code) == (409, 409)
    assert api.json()["message"] in html.unescape(refused.content.decode())
    assert "queue(s) demo" in refused.content.decode()
    assert RetryPolicy.objects.filter(name="ml").exists()
    assert Queue.objects.get(name="demo").retry_policies == ["ml"]


def test_deleting_needs_the_delete_permission(editor, policy):
    client = as_user(editor)
    assert 'href="/policies/ml/delete"' not in client.get("/policies/ml/").content.decode()
    for response in (client.get("/policies/ml/delete"), client.post("/policies/ml/delete")):
        assert response.status_code == 403
        assert "delete_retry_policy" in response.content.decode()
    assert RetryPolicy.objects.filter(name="ml").exists()


def test_deleting_needs_a_login_and_the_csrf_token(client, admin_user, policy):
    response = client.post("/policies/ml/delete")
    assert response.status_code == 302 and response["Location"].startswith("/login?next=")
    assert as_user(admin_user, csrf=True).post("/policies/ml/delete").status_code == 403
    assert RetryPolicy.objects.filter(name="ml").exists()
    assert as_user(admin_user).put("/policies/ml/delete").status_code == 405


def test_the_default_policy_says_what_deleting_it_does(admin_user, policy, settings):
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "retryPolicy": {"enabled": True, "globalMaxRetries": 10, "defaultPolicyName": "ml"}
            }
        }
    )
    text = as_user(admin_user).get("/policies/ml/delete").content.decode()
    assert "This is the default policy" in text and "legacy behaviour" in text
