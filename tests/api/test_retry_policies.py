from __future__ import annotations

import pytest

from armada.models import Queue, RetryPolicy

pytestmark = pytest.mark.django_db

POLICY_YAML = """
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: ml-training-retries
retryLimit: 3
defaultAction: Fail
rules:
  - action: Fail
    onCategory: user-error
  - action: Retry
    onCategory: gpu
    onSubcategory: transient
  - action: Retry
    onCategory: oom
    mutate:
      resources:
        memory:
          factor: 1.5
"""


def create(api, body=POLICY_YAML):
    return api.post("/api/v1/retry-policies", data=body, content_type="application/yaml")


def test_create_from_yaml_get_and_list(api):
    response = create(api)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["name"], body["retryLimit"], body["version"], body["kind"]) == (
        "ml-training-retries",
        3,
        1,
        "RetryPolicy",
    )
    assert body["rules"][2]["mutate"] == {"resources": {"memory": {"factor": 1.5}}}
    assert api.get("/api/v1/retry-policies/ml-training-retries").json()["rules"] == body["rules"]
    assert [p["name"] for p in api.get("/api/v1/retry-policies").json()] == ["ml-training-retries"]


def test_update_replaces_the_rules_and_bumps_the_version(api):
    create(api)
    document = api.get("/api/v1/retry-policies/ml-training-retries").json()
    document["retryLimit"] = 5
    document["rules"] = document["rules"][:1]
    response = api.put("/api/v1/retry-policies/ml-training-retries", document, format="json")
    assert response.status_code == 200, response.json()
    assert (
        response.json()["version"],
        response.json()["retryLimit"],
        len(response.json()["rules"]),
    ) == (2, 5, 1)
    assert RetryPolicy.objects.get().updated_by == "root"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "Bad_Name"}, "name"),
        ({"retryLimit": -1}, "retryLimit"),
        ({"defaultAction": "retry"}, "defaultAction"),
        ({"rules": [{"action": "Retry"}]}, "rules[0].onCategory"),
        ({"rules": [{"action": "Retry", "onSubcategory": "x"}]}, "rules[0].onCategory"),
        ({"rules": [{"action": "Maybe", "onCategory": "oom"}]}, "rules[0].action"),
        (
            {
                "rules": [
                    {
                        "action": "Retry",
                        "onCategory": "oom",
                        "mutate": {"resources": {"memory": {"factor": 1.0}}},
                    }
                ]
            },
            "rules[0].mutate.resources.memory.factor",
        ),
        (
            {
                "rules": [
                    {
                        "action": "Retry",
                        "onCategory": "oom",
                        "mutate": {"resources": {"memory": {"factor": 2, "static": "1Gi"}}},
                    }
                ]
            },
            "rules[0].mutate.resources.memory",
        ),
        ({"colour": "red"}, "colour"),
    ],
    ids=[
        "name",
        "negative-limit",
        "action-case",
        "no-category",
        "subcategory-alone",
        "bad-action",
        "factor-not-above-one",
        "factor-and-static",
        "unknown-field",
    ],
)
def test_bad_policies_are_400_naming_the_field_and_store_nothing(api, change, field):
    base = {
        "apiVersion": "armadaproject.io/v1beta1",
        "kind": "RetryPolicy",
        "name": "p",
        "retryLimit": 1,
        "defaultAction": "Fail",
    }
    response = api.post("/api/v1/retry-policies", {**base, **change}, format="json")
    assert response.status_code == 400
    assert field in [e["field"] for e in response.json()["errors"]], response.json()
    assert RetryPolicy.objects.count() == 0


def test_a_policy_cannot_be_renamed_by_update(api):
    create(api)
    document = api.get("/api/v1/retry-policies/ml-training-retries").json() | {"name": "other"}
    response = api.put("/api/v1/retry-policies/ml-training-retries", document, format="json")
    assert response.status_code == 400
    assert RetryPolicy.objects.get().version == 1


def test_queues_attach_policies_in_order_and_unknown_names_are_refused(api):
    create(api)
    api.post(
        "/api/v1/retry-policies",
        {"name": "second", "retryLimit": 0, "defaultAction": "Fail"},
        format="json",
    )
    assert (
        api.post(
            "/api/v1/queues",
            {"name": "q", "retryPolicies": ["ml-training-retries", "second"]},
            format="json",
        ).status_code
        == 201
    )
    assert Queue.objects.get(name="q").retry_policies == ["ml-training-retries", "second"]
    response = api.patch(
        "/api/v1/queues/q", {"retryPolicies": ["second", "missing"]}, format="json"
    )
    assert response.status_code == 400 and "missing" in response.json()["message"]
    assert Queue.objects.get(name="q").retry_policies == ["ml-training-retries", "second"]


def test_deleting_a_policy_a_queue_uses_is_a_409_naming_the_queues(api):
    create(api)
    api.post(
        "/api/v1/queues", {"name": "alpha", "retryPolicies": ["ml-training-retries"]}, format="json"
    )
    api.post(
        "/api/v1/queues", {"name": "beta", "retryPolicies": ["ml-training-retries"]}, format="json"
    )
    response = api.delete("/api/v1/retry-policies/ml-training-retries")
    assert response.status_code == 409
    assert "alpha, beta" in response.json()["message"]
    assert RetryPolicy.objects.count() == 1
    api.patch("/api/v1/queues/alpha", {"retryPolicies": []}, format="json")
    api.patch("/api/v1/queues/beta", {"retryPolicies": []}, format="json")
    assert api.delete("/api/v1/retry-policies/ml-training-retries").status_code == 204
    assert RetryPolicy.objects.count() == 0


@pytest.mark.parametrize(
    ("method", "codename"),
    [
        ("create", "create_retry_policy"),
        ("update", "update_retry_policy"),
        ("delete", "delete_retry_policy"),
    ],
)
def test_managing_policies_needs_its_permission(api, api_as, outsider, method, codename):
    from django.contrib.auth.models import Permission

    create(api)
    client = api_as(outsider)
    calls = {
        "create": lambda: client.post(
            "/api/v1/retry-policies",
            {"name": "x", "retryLimit": 0, "defaultAction": "Fail"},
            format="json",
        ),
        "update": lambda: client.put(
            "/api/v1/retry-policies/ml-training-retries",
            {"name": "ml-training-retries", "retryLimit": 9, "defaultAction": "Fail"},
            format="json",
        ),
        "delete": lambda: client.delete("/api/v1/retry-policies/ml-training-retries"),
    }
    response = calls[method]()
    assert response.status_code == 403
    assert codename in response.json()["message"]
    assert list(RetryPolicy.objects.values_list("name", "retry_limit")) == [
        ("ml-training-retries", 3)
    ]
    outsider.user_permissions.add(Permission.objects.get(codename=codename))
    from django.contrib.auth import get_user_model

    allowed = api_as(get_user_model().objects.get(pk=outsider.pk))
    client = allowed
    assert calls[method]().status_code in (200, 201, 204)


def test_the_admin_validates_policies_with_the_core(client, admin_user):
    client.force_login(admin_user)
    response = client.post(
        "/admin/armada/retrypolicy/add/",
        {
            "name": "p",
            "retry_limit": "1",
            "default_action": "Fail",
            "rules": '[{"action": "Retry"}]',
        },
    )
    assert response.status_code == 200
    assert "onCategory" in response.content.decode()
    assert RetryPolicy.objects.count() == 0
    response = client.post(
        "/admin/armada/retrypolicy/add/",
        {
            "name": "p",
            "retry_limit": "1",
            "default_action": "Fail",
            "rules": '[{"action": "Retry", "onCategory": "oom"}]',
        },
    )
    assert response.status_code == 302
    assert RetryPolicy.objects.get().updated_by == "root"
