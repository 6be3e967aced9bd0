"""Cordoning an executor needs Armada's global ``update_executor_settings`` permission; a
cordon may carry a reason, shown with the executor until it is uncordoned."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command

from armada.core.config import parse_config
from armada.models import Executor
from armada.services.errors import PermissionDenied, ValidationFailed
from armada.services.executors_admin import executor_set_cordoned
from tests.conftest import at

pytestmark = pytest.mark.django_db


@pytest.fixture
def executor() -> Executor:
    return Executor.objects.create(
        id="cluster-1",
        pool="default",
        backend="fake",
        registered_at=at(0),
        last_heartbeat=at(0),
    )


def grant(user, codename: str) -> None:
    group, _ = Group.objects.get_or_create(name=f"holders-of-{codename}")
    group.permissions.add(
        Permission.objects.get(content_type__app_label="armada", codename=codename)
    )
    user.groups.add(group)


def test_the_permission_exists_and_can_be_granted(outsider, executor, api_as):
    assert Permission.objects.filter(codename="update_executor_settings").exists()
    grant(outsider, "update_executor_settings")
    response = api_as(outsider).post(
        "/api/v1/executors/cluster-1/cordon", {"reason": "kernel upgrade"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["cordoned"] is True
    assert response.json()["cordonReason"] == "kernel upgrade"
    stored = Executor.objects.get()
    assert (stored.cordoned, stored.cordon_reason) == (True, "kernel upgrade")
    listed = api_as(outsider).get("/api/v1/executors").json()
    assert listed[0]["cordonReason"] == "kernel upgrade"

    response = api_as(outsider).post("/api/v1/executors/cluster-1/uncordon")
    assert response.status_code == 200 and response.json()["cordonReason"] == ""
    assert Executor.objects.get().cordon_reason == ""


def test_cordon_queue_alone_no_longer_cordons_executors(outsider, executor, api_as):
    grant(outsider, "cordon_queue")
    response = api_as(outsider).post(
        "/api/v1/executors/cluster-1/cordon", {"reason": "x"}, format="json"
    )
    assert response.status_code == 403
    assert "'update_executor_settings'" in response.json()["message"]
    assert not Executor.objects.get().cordoned


def test_a_refused_caller_gets_403_even_with_a_bad_body(outsider, executor, api_as):
    response = api_as(outsider).post(
        "/api/v1/executors/cluster-1/cordon", {"bogus": 1}, format="json"
    )
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("cordon", {"reason": "x" * 256}, "reason"),
        ("cordon", {"reason": 7}, "reason"),
        ("cordon", {"reason": "ok", "until": "tomorrow"}, "until"),
        ("uncordon", {"reason": "done"}, "reason"),
        ("cordon", ["reason"], ""),
    ],
)
def test_bad_bodies_are_refused_naming_the_field(api, executor, path, body, field):
    response = api.post(f"/api/v1/executors/cluster-1/{path}", body, format="json")
    assert response.status_code == 400, response.content
    assert [e["field"] for e in response.json()["errors"]] == [field]
    stored = Executor.objects.get()
    assert (stored.cordoned, stored.cordon_reason) == (False, "")


def test_a_second_cordon_replaces_the_reason_and_unknown_executors_are_404(api, executor):
    api.post("/api/v1/executors/cluster-1/cordon", {"reason": "first"}, format="json")
    api.post("/api/v1/executors/cluster-1/cordon", {"reason": " second "}, format="json")
    assert Executor.objects.get().cordon_reason == "second"
    api.post("/api/v1/executors/cluster-1/cordon")  # no body: cordoned, no reason
    assert Executor.objects.get().cordon_reason == ""
    response = api.post("/api/v1/executors/ghost/cordon", {"reason": "x"}, format="json")
    assert response.status_code == 404 and "ghost" in response.json()["message"]


def test_the_service_checks_the_permission_before_anything(outsider, executor):
    with pytest.raises(PermissionDenied, match="update_executor_settings"):
        executor_set_cordoned(
            actor=outsider, executor_id="cluster-1", cordoned=True, reason="x", now=at(1)
        )
    with pytest.raises(ValidationFailed):
        executor_set_cordoned(
            actor=_superuser(), executor_id="cluster-1", cordoned=False, reason="x", now=at(1)
        )
    assert not Executor.objects.get().cordoned


def _superuser():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_superuser("boss", "boss@example.com", "pw")


def test_seed_permissions_grants_it_from_config(settings, outsider):
    settings.ARMADA = parse_config(
        {"auth": {"permissionGroupMapping": {"update_executor_settings": ["operators"]}}}
    )
    call_command("seed_permissions", verbosity=0)
    group = Group.objects.get(name="operators")
    assert list(group.permissions.values_list("codename", flat=True)) == [
        "update_executor_settings"
    ]
    outsider.groups.add(group)
    outsider = type(outsider).objects.get(pk=outsider.pk)  # a fresh permission cache
    assert outsider.has_perm("armada.update_executor_settings")


def test_the_admin_lets_only_holders_of_the_permission_change_an_executor(
    client, django_user_model, executor
):
    staff = django_user_model.objects.create_user("sam", password="sam-password", is_staff=True)
    grant(staff, "view_executor")
    grant(staff, "change_executor")
    client.force_login(staff)
    page = client.get(f"/admin/armada/executor/{executor.id}/change/")
    assert page.status_code == 200 and b'name="cordon_reason"' not in page.content
    response = client.post(
        f"/admin/armada/executor/{executor.id}/change/", {"cordoned": "on", "cordon_reason": "x"}
    )
    assert response.status_code == 403 and not Executor.objects.get().cordoned

    grant(staff, "update_executor_settings")
    staff = django_user_model.objects.get(pk=staff.pk)
    client.force_login(staff)
    page = client.get(f"/admin/armada/executor/{executor.id}/change/")
    assert b'name="cordon_reason"' in page.content and b'name="cordoned"' in page.content
