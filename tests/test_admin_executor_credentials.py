"""Executor credentials in the admin: operators with ``manage_executor_credentials`` list
them (never a key or a digest), add one from a cluster id and a name (its key shown once, in
a message), and revoke selected ones; nothing is edited or deleted, and no one else gets in."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import LogEntry
from django.utils import timezone

from armada import admin_executor_credentials
from armada.models import ExecutorCredential
from armada.services.executor_credentials import (
    executor_credential_authenticate,
    executor_credential_create,
)
from armada.services.tokens import key_digest
from tests.services.test_executor_credentials import grant_manage

pytestmark = pytest.mark.django_db

LIST = "/admin/armada/executorcredential/"
ADD = LIST + "add/"
KEY = re.compile(r"arme_[A-Za-z0-9_-]{40}")


@pytest.fixture
def staff_operator(django_user_model):
    """Staff (may use the admin), not a superuser, with the one permission."""
    user = django_user_model.objects.create_user("opal", password="opal-password", is_staff=True)
    grant_manage(user)
    return user


def make(actor, cluster_id: str = "cluster-1", name: str = "executor"):
    return executor_credential_create(
        actor=actor, cluster_id=cluster_id, name=name, now=timezone.now()
    )


@pytest.mark.parametrize("who", ["admin_user", "staff_operator"])
def test_operators_list_credentials_without_keys_or_digests(request, client, admin_user, who):
    keys = [make(admin_user, cluster_id=c).key for c in ("cluster-1", "cluster-2")]
    client.force_login(request.getfixturevalue(who))
    page = client.get(LIST, {"q": "cluster-1"})
    html = page.content.decode()
    assert page.status_code == 200
    assert "cluster-1" in html and keys[0][:13] in html and keys[1][:13] not in html
    assert not any(key in html for key in keys)
    assert not any(d in html for d in ExecutorCredential.objects.values_list("digest", flat=True))
    for column in ("Cluster id", "Name", "Prefix", "Created at", "Last used at", "Revoked at"):
        assert column in html, column


def test_the_add_form_takes_only_a_cluster_id_and_a_name(client, staff_operator):
    client.force_login(staff_operator)
    html = client.get(ADD).content.decode()
    inputs = set(re.findall(r'<(?:input|select|textarea)[^>]* name="([a-z_]+)"', html))
    assert inputs - {"csrfmiddlewaretoken", "_save", "_addanother", "_continue"} == {
        "cluster_id",
        "name",
    }
    assert 'value="executor"' in html  # the default name


@pytest.mark.parametrize("button", ["_save", "_continue", "_addanother"])
def test_adding_shows_the_key_once_in_a_message(client, staff_operator, button):
    client.force_login(staff_operator)
    response = client.post(
        ADD, {"cluster_id": "cluster-1", "name": "primary", button: "1"}, follow=True
    )
    html = response.content.decode()
    [key] = set(KEY.findall(html))
    assert "shown only now" in html and "tokenFile" in html
    credential = ExecutorCredential.objects.get()
    assert (credential.cluster_id, credential.name, credential.created_by) == (
        "cluster-1",
        "primary",
        staff_operator,
    )
    assert credential.digest == key_digest(key)
    assert executor_credential_authenticate(key=key, now=timezone.now()).cluster_id == "cluster-1"
    assert LogEntry.objects.get().object_id == str(credential.pk)
    for page in (LIST, ADD, f"{LIST}{credential.pk}/change/"):
        assert key not in client.get(page).content.decode()  # once: never again


def test_a_blank_name_is_the_default(client, staff_operator):
    client.force_login(staff_operator)
    client.post(ADD, {"cluster_id": "cluster-1", "name": ""})
    assert ExecutorCredential.objects.get().name == "executor"


@pytest.mark.parametrize(
    ("form", "fragment"),
    [
        ({"cluster_id": "", "name": "x"}, "This field is required"),
        ({"cluster_id": "Cluster_1", "name": "x"}, "RFC 1123"),
        ({"cluster_id": "x" * 64, "name": "x"}, "at most 63"),
        ({"cluster_id": "cluster-1", "name": "a\x07b"}, "control characters"),
        ({"cluster_id": "cluster-1", "name": "x" * 101}, "at most 100"),
    ],
)
def test_bad_input_is_shown_on_the_form_and_creates_nothing(client, staff_operator, form, fragment):
    client.force_login(staff_operator)
    response = client.post(ADD, form)
    assert response.status_code == 200 and fragment in response.content.decode()
    assert not ExecutorCredential.objects.exists() and not LogEntry.objects.exists()


def test_a_name_the_cluster_uses_is_shown_on_the_form(client, staff_operator):
    make(staff_operator)
    client.force_login(staff_operator)
    response = client.post(ADD, {"cluster_id": "cluster-1", "name": "executor"})
    html = response.content.decode()
    assert response.status_code == 200 and "already has a credential named" in html
    assert ExecutorCredential.objects.count() == 1


def test_a_name_taken_after_the_form_was_checked_creates_nothing(
    client, staff_operator, monkeypatch
):
    """Another operator took the name between the form's check and the write."""
    make(staff_operator)
    monkeypatch.setattr(
        admin_executor_credentials, "executor_credential_name_taken", lambda **_: False
    )
    client.force_login(staff_operator)
    response = client.post(ADD, {"cluster_id": "cluster-1", "name": "executor"})
    assert response.status_code == 302 and response["Location"] == ADD
    html = client.get(ADD).content.decode()
    assert "No credential was created" in html and "already has an executor credential" in html
    assert ExecutorCredential.objects.count() == 1 and not LogEntry.objects.exists()


def test_revoking_the_selected_ones(client, staff_operator):
    ids = [str(make(staff_operator, name=f"e{i}").credential.pk) for i in range(3)]
    client.force_login(staff_operator)
    action = {"action": "revoke", "_selected_action": ids[:2]}
    response = client.post(LIST, action, follow=True)
    assert "Revoked 2 executor credential(s)" in response.content.decode()
    revoked = dict(ExecutorCredential.objects.values_list("pk", "revoked_at"))
    assert [revoked[int(i)] is not None for i in ids] == [True, True, False]
    first = revoked[int(ids[0])]
    response = client.post(LIST, action, follow=True)  # again: nothing changes
    assert "Revoked 0 executor credential(s)" in response.content.decode()
    assert ExecutorCredential.objects.get(pk=ids[0]).revoked_at == first
    assert ExecutorCredential.objects.count() == 3  # rows are kept


def test_nothing_is_edited_or_deleted(client, staff_operator, admin_user):
    credential = make(staff_operator).credential
    for user in (staff_operator, admin_user):
        client.force_login(user)
        change = f"{LIST}{credential.pk}/change/"
        page = client.get(change)
        html = page.content.decode()
        assert page.status_code == 200 and "cluster-1" in html and credential.prefix in html
        assert credential.digest not in html and 'name="prefix"' not in html
        edited = {"cluster_id": "cluster-2", "name": "x", "prefix": "arme_hijacked", "digest": "0"}
        assert client.post(change, edited).status_code == 403
        assert client.get(f"{LIST}{credential.pk}/delete/").status_code == 403
        assert "delete_selected" not in client.get(LIST).content.decode()
    assert list(ExecutorCredential.objects.values("cluster_id", "name", "prefix", "digest")) == [
        {
            "cluster_id": "cluster-1",
            "name": "executor",
            "prefix": credential.prefix,
            "digest": credential.digest,
        }
    ]


def test_staff_without_the_permission_cannot_reach_them(client, django_user_model, admin_user):
    credential = make(admin_user).credential
    staff = django_user_model.objects.create_user("stan", password="x", is_staff=True)
    client.force_login(staff)
    assert client.get(LIST).status_code == 403
    assert client.get(ADD).status_code == 403
    assert client.get(f"{LIST}{credential.pk}/change/").status_code == 403
    assert client.post(ADD, {"cluster_id": "cluster-9", "name": "x"}).status_code == 403
    response = client.post(LIST, {"action": "revoke", "_selected_action": [credential.pk]})
    assert response.status_code == 403
    assert ExecutorCredential.objects.get().revoked_at is None
    assert ExecutorCredential.objects.count() == 1


def test_people_who_are_not_staff_cannot_reach_the_admin(client, owner):
    grant_manage(owner)
    client.force_login(owner)
    response = client.get(LIST)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
