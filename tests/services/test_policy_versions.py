"""Every saved state of a retry policy is in its history, written with the save itself."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission

from armada.core.errors import ValidationFailed
from armada.models import Queue, RetryPolicy, RetryPolicyVersion
from armada.services import policies
from armada.services.errors import Conflict, PermissionDenied
from tests.conftest import T0, at

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


DOC = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "ml",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [{"action": "Retry", "onCategory": "oom"}],
}


def test_create_writes_version_one_with_the_document_author_and_time(admin_user):
    row = policies.policy_create(actor=admin_user, data=DOC, now=T0)
    [version] = policies.policy_versions(policy=row)
    assert (version.version, version.policy_name, version.saved_by, version.saved_at) == (
        1,
        "ml",
        "root",
        T0,
    )
    assert version.document == DOC


def test_each_update_adds_the_next_version_newest_first(admin_user, django_user_model):
    editor = django_user_model.objects.create_user("eddie")
    editor.user_permissions.add(Permission.objects.get(codename="update_retry_policy"))
    row = policies.policy_create(actor=admin_user, data=DOC, now=T0)
    policies.policy_update(actor=editor, name="ml", data={**DOC, "retryLimit": 5}, now=at(60))
    policies.policy_update(actor=admin_user, name="ml", data={**DOC, "rules": []}, now=at(120))
    history = policies.policy_versions(policy=row)
    assert [(v.version, v.saved_by, v.saved_at) for v in history] == [
        (3, "root", at(120)),
        (2, "eddie", at(60)),
        (1, "root", T0),
    ]
    assert history[1].document["retryLimit"] == 5
    assert "rules" not in history[0].document  # the file form leaves an empty list out
    row.refresh_from_db()
    assert row.version == history[0].version


@pytest.mark.parametrize(
    "change",
    [{"retryLimit": -1}, {"name": "other"}, {"rules": [{"action": "Retry"}]}],
    ids=["invalid", "rename", "rule-without-category"],
)
def test_a_refused_update_writes_no_version(admin_user, change):
    policies.policy_create(actor=admin_user, data=DOC, now=T0)
    with pytest.raises(ValidationFailed):
        policies.policy_update(actor=admin_user, name="ml", data={**DOC, **change}, now=at(1))
    assert list(RetryPolicyVersion.objects.values_list("version", flat=True)) == [1]
    assert RetryPolicy.objects.get().version == 1


def test_an_update_from_a_stale_version_is_refused_and_writes_nothing(admin_user):
    policies.policy_create(actor=admin_user, data=DOC, now=T0)
    policies.policy_update(actor=admin_user, name="ml", data={**DOC, "retryLimit": 4}, now=at(1))
    with pytest.raises(Conflict, match="now version 2"):
        policies.policy_update(
            actor=admin_user,
            name="ml",
            data={**DOC, "retryLimit": 9},
            now=at(2),
            expected_version=1,
        )
    assert RetryPolicy.objects.get().retry_limit == 4
    assert RetryPolicyVersion.objects.count() == 2


def test_a_refused_create_writes_no_version(admin_user, outsider):
    with pytest.raises(PermissionDenied):
        policies.policy_create(actor=outsider, data=DOC, now=T0)
    policies.policy_create(actor=admin_user, data=DOC, now=T0)
    with pytest.raises(Conflict):
        policies.policy_create(actor=admin_user, data=DOC, now=at(1))
    assert RetryPolicyVersion.objects.count() == 1


def test_deleting_a_policy_keeps_its_history_and_a_new_one_starts_afresh(admin_user):
    policies.policy_create(actor=admin_user, data=DOC, now=T0)
    policies.policy_update(actor=admin_user, name="ml", data={**DOC, "retryLimit": 4}, now=at(1))
    policies.policy_delete(actor=admin_user, name="ml")
    kept = list(RetryPolicyVersion.objects.order_by("version"))
    assert [(v.policy_id, v.policy_name, v.version) for v in kept] == [
        (None, "ml", 1),
        (None, "ml", 2),
    ]
    again = policies.policy_create(actor=admin_user, data=DOC, now=at(2))
    assert [v.version for v in policies.policy_versions(policy=again)] == [1]
    assert RetryPolicyVersion.objects.count() == 3


def test_the_api_and_the_admin_write_versions_too(api, admin_user, client):
    api.post("/api/v1/retry-policies", DOC, format="json")
    api.put("/api/v1/retry-policies/ml", {**DOC, "retryLimit": 7}, format="json")
    client.force_login(admin_user)
    response = client.post(
        "/admin/armada/retrypolicy/add/",
        {"name": "from-admin", "retry_limit": 1, "default_action": "Fail", "rules": "[]"},
    )
    assert response.status_code == 302
    assert sorted(RetryPolicyVersion.objects.values_list("policy_name", "version")) == [
        ("from-admin", 1),
        ("ml", 1),
        ("ml", 2),
    ]


def test_backfill_gives_existing_policies_their_current_document_once():
    migration = importlib.import_module("armada.migrations.0008_backfill_policy_versions")
    old = RetryPolicy.objects.create(
        name="old",
        retry_limit=2,
        default_action="Retry",
        rules=[{"action": "Fail", "onCategory": "user-error"}],
        version=4,
        created_at=T0,
        updated_at=at(30),
        updated_by="olive",
    )
    migration.backfill(apps, None)
    migration.backfill(apps, None)  # idempotent
    [row] = RetryPolicyVersion.objects.all()
    assert (row.policy_id, row.version, row.saved_by, row.saved_at) == (old.pk, 4, "olive", at(30))
    assert row.document == {
        "apiVersion": "armadaproject.io/v1beta1",
        "kind": "RetryPolicy",
        "name": "old",
        "retryLimit": 2,
        "defaultAction": "Retry",
        "rules": [{"action": "Fail", "onCategory": "user-error"}],
    }
    # the backfilled document is what the service would have stored
    assert row.document == policies.policy_file(old)


def test_attach_puts_the_policy_first_or_last_and_detach_removes_it(admin_user, queue):
    policies.policy_create(actor=admin_user, data=DOC, now=T0)
    policies.policy_create(actor=admin_user, data={**DOC, "name": "b"}, now=T0)
    policies.policy_attach(actor=admin_user, name="b", queue="demo", first=False, now=at(1))
    policies.policy_attach(actor=admin_user, name="ml", queue="demo", first=False, now=at(1))
    assert Queue.objects.get(name="demo").retry_policies == ["b", "ml"]
    policies.policy_attach(actor=admin_user, name="ml", queue="demo", first=True, now=at(2))
    assert Queue.objects.get(name="demo").retry_policies == ["ml", "b"]
    assert policies.queues_by_policy() == {"ml": ["demo"], "b": ["demo"]}
    policies.policy_detach(actor=admin_user, name="ml", queue="demo", now=at(3))
    assert Queue.objects.get(name="demo").retry_policies == ["b"]


def test_attaching_needs_the_queue_update_permission(admin_user, owner, queue):
    policies.policy_create(actor=admin_user, data=DOC, now=T0)
    with pytest.raises(PermissionDenied, match="create_queue"):
        policies.policy_attach(actor=owner, name="ml", queue="demo", first=True, now=at(1))
    assert Queue.objects.get(name="demo").retry_policies == []


def test_reading_policies_needs_the_view_or_a_management_permission(
    admin_user, outsider, django_user_model
):
    viewer = django_user_model.objects.create_user("vera")
    viewer.user_permissions.add(Permission.objects.get(codename="view_retrypolicy"))
    assert policies.can_read_policies(admin_user)
    assert policies.can_read_policies(viewer)
    assert not policies.can_read_policies(outsider)
    with pytest.raises(PermissionDenied, match="view_retrypolicy"):
        policies.require_policy_reader(outsider)


def test_the_admin_lists_the_history_of_deleted_policies_read_only(admin_user, client):
    policies.policy_create(actor=admin_user, data=DOC, now=T0)
    policies.policy_delete(actor=admin_user, name="ml")
    client.force_login(admin_user)
    listing = client.get("/admin/armada/retrypolicyversion/", {"q": "ml"})
    assert listing.status_code == 200
    assert [(v.policy_name, v.version, v.policy_id) for v in listing.context["cl"].result_list] == [
        ("ml", 1, None)
    ]
    assert client.get("/admin/armada/retrypolicyversion/add/").status_code == 403
