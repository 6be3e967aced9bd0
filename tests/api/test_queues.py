from __future__ import annotations

import pytest

from armada.models import Queue

pytestmark = pytest.mark.django_db


def test_create_get_and_list_queues(api, admin_user):
    created = api.post(
        "/api/v1/queues",
        {"name": "team-a", "priorityFactor": 2, "labels": {"team": "a"}},
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["name"] == "team-a" and body["priorityFactor"] == 2.0
    assert body["owners"] == [admin_user.username]  # the creator owns a queue given no owners
    assert api.get("/api/v1/queues/team-a").json()["labels"] == {"team": "a"}
    assert [q["name"] for q in api.get("/api/v1/queues").json()] == ["team-a"]


def test_create_queue_from_yaml_body(api):
    response = api.post(
        "/api/v1/queues",
        data="name: yaml-queue\npriorityFactor: 3\n",
        content_type="application/yaml",
    )
    assert response.status_code == 201, response.json()
    assert Queue.objects.get(name="yaml-queue").priority_factor == 3.0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "Bad_Name"}, "name"),
        ({"name": "x" * 64}, "name"),
        ({}, "name"),
        ({"name": "ok", "priorityFactor": 0.5}, "priorityFactor"),
        ({"name": "ok", "priorityFactor": "high"}, "priorityFactor"),
        ({"name": "ok", "colour": "blue"}, "colour"),
        ({"name": "ok", "retryPolicies": ["missing-policy"]}, "retryPolicies"),
        (
            {
                "name": "ok",
                "permissions": [
                    {"subjects": [{"kind": "Robot", "name": "r"}], "verbs": ["submit"]}
                ],
            },
            "permissions[0].subjects[0]",
        ),
        (
            {
                "name": "ok",
                "permissions": [{"subjects": [{"kind": "User", "name": "u"}], "verbs": ["fly"]}],
            },
            "permissions[0].verbs",
        ),
    ],
    ids=[
        "uppercase",
        "too-long",
        "missing",
        "factor-below-one",
        "factor-not-number",
        "unknown-field",
        "unknown-policy",
        "bad-subject",
        "bad-verb",
    ],
)
def test_bad_queue_is_a_400_naming_the_field_and_writes_nothing(api, body, field):
    response = api.post("/api/v1/queues", body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert field in [e["field"] for e in payload["errors"]]
    assert payload["message"].startswith("invalid request")
    assert Queue.objects.count() == 0


def test_duplicate_queue_is_a_409(api):
    assert api.post("/api/v1/queues", {"name": "dup"}, format="json").status_code == 201
    response = api.post("/api/v1/queues", {"name": "dup"}, format="json")
    assert response.status_code == 409
    assert "already exists" in response.json()["message"]


def test_missing_queue_is_a_404(api):
    response = api.get("/api/v1/queues/ghost")
    assert response.status_code == 404
    assert "ghost" in response.json()["message"]


def test_update_cordon_and_delete(api):
    api.post("/api/v1/queues", {"name": "q"}, format="json")
    assert (
        api.patch("/api/v1/queues/q", {"priorityFactor": 5}, format="json").json()["priorityFactor"]
        == 5.0
    )
    assert api.post("/api/v1/queues/q/cordon").json()["cordoned"] is True
    assert api.post("/api/v1/queues/q/uncordon").json()["cordoned"] is False
    assert api.delete("/api/v1/queues/q").status_code == 204
    assert not Queue.objects.filter(name="q").exists()


def test_anonymous_calls_get_401(client):
    response = client.get("/api/v1/queues")
    assert response.status_code == 401
    assert response.json()["message"]


def test_creating_queues_needs_the_create_queue_permission(api_as, outsider):
    response = api_as(outsider).post("/api/v1/queues", {"name": "mine"}, format="json")
    assert response.status_code == 403
    assert "create_queue" in response.json()["message"]
    assert Queue.objects.count() == 0


def test_create_queue_permission_from_a_group(api_as, outsider):
    from django.contrib.auth.models import Group, Permission

    group = Group.objects.create(name="queue-makers")
    group.permissions.add(Permission.objects.get(codename="create_queue"))
    outsider.groups.add(group)
    response = api_as(outsider).post("/api/v1/queues", {"name": "mine"}, format="json")
    assert response.status_code == 201
    assert response.json()["owners"] == [outsider.username]


def test_openapi_schema_is_published(api):
    response = api.get("/api/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/v1/queues" in paths and "/api/v1/jobs" in paths


@pytest.mark.parametrize("dry", [False, True], ids=["create", "dry-run"])
def test_deprecated_resource_limits_are_ignored_with_a_warning_header(api, dry):
    """Armada's queue files carry ``resourceLimits``: accepted, not stored, and the answer
    says so in an HTTP ``Warning`` header (the body stays the documented queue)."""
    url = "/api/v1/queues" + ("?dryRun=true" if dry else "")
    response = api.post(url, {"name": "q", "resourceLimits": {"cpu": 0.2}}, format="json")
    assert response.status_code == (200 if dry else 201), response.json()
    assert response["Warning"].startswith('299 - "resourceLimits: is deprecated and ignored')
    assert "resourceLimits" not in response.json()
    updated = api.patch("/api/v1/queues/q", {"resourceLimits": {"memory": 1}}, format="json")
    if dry:
        assert updated.status_code == 404
        return
    assert updated.status_code == 200 and "resourceLimits: is deprecated" in updated["Warning"]


def test_a_queue_without_ignored_fields_has_no_warning_header(api):
    response = api.post("/api/v1/queues", {"name": "q"}, format="json")
    assert response.status_code == 201 and "Warning" not in response


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ({"cpu": 1.5}, "resourceLimits.cpu"),
        ({"cpu": "half"}, "resourceLimits.cpu"),
        ("cpu", "resourceLimits"),
    ],
)
def test_a_bad_resource_limit_is_a_400_naming_it(api, limits, field):
    response = api.post("/api/v1/queues", {"name": "q", "resourceLimits": limits}, format="json")
    assert response.status_code == 400
    assert field in {e["field"] for e in response.json()["errors"]}
    assert not Queue.objects.exists()
