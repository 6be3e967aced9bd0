"""``backoff`` on Retry rules (our extension) through the REST API: saved and shown back, a
bad one refused with a 400 naming its field (and nothing stored), a Fail rule's dropped with
a warning, and the schema documents it."""

from __future__ import annotations

import pytest

from armada.models import RetryPolicy

pytestmark = pytest.mark.django_db

POLICY_YAML = """
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: paced
retryLimit: 3
defaultAction: Fail
rules:
  - action: Retry
    onCategory: gpu
    backoff: {initial: 30s, factor: 2, max: 10m}
  - action: Fail
    onCategory: user-error
    backoff: {initial: 1m}
"""


def test_a_backoff_is_saved_and_shown_back(api):
    response = api.post("/api/v1/retry-policies", data=POLICY_YAML, content_type="application/yaml")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["rules"][0]["backoff"] == {"initial": "30s", "factor": 2, "max": "10m"}
    assert "backoff" not in body["rules"][1]
    assert [w["field"] for w in body["warnings"]] == ["rules[1].backoff"]
    stored = api.get("/api/v1/retry-policies/paced").json()
    assert stored["rules"] == body["rules"]
    # What get shows is what update takes back, unchanged.
    again = api.put("/api/v1/retry-policies/paced", stored, format="json")
    assert again.status_code == 200, again.json()
    assert again.json()["rules"] == body["rules"]


@pytest.mark.parametrize(
    ("backoff", "field"),
    [
        ({"factor": 2, "max": "1m"}, "rules[0].backoff.initial"),
        ({"initial": "soon"}, "rules[0].backoff.initial"),
        ({"initial": "30s", "factor": 0.5}, "rules[0].backoff.factor"),
        ({"initial": "30s", "factor": 2}, "rules[0].backoff.max"),
        ({"initial": "1m", "max": "30s"}, "rules[0].backoff.max"),
        ({"initial": "1s", "jitter": True}, "rules[0].backoff.jitter"),
        ("30s", "rules[0].backoff"),
    ],
    ids=["no-initial", "bad-duration", "factor-below-one", "no-max", "max-below", "unknown", "str"],
)
@pytest.mark.parametrize("dry_run", [False, True], ids=["create", "dry-run"])
def test_a_bad_backoff_is_a_400_naming_its_field(api, backoff, field, dry_run):
    body = {
        "name": "p",
        "retryLimit": 1,
        "defaultAction": "Fail",
        "rules": [{"action": "Retry", "onCategory": "gpu", "backoff": backoff}],
    }
    url = "/api/v1/retry-policies" + ("?dryRun=true" if dry_run else "")
    response = api.post(url, body, format="json")
    assert response.status_code == 400, response.json()
    assert [e["field"] for e in response.json()["errors"]] == [field]
    assert RetryPolicy.objects.count() == 0


def test_the_schema_documents_backoff_and_the_trail_fields(api):
    schema = api.get("/api/v1/schema?format=json").json()
    components = schema["components"]["schemas"]
    assert set(components["Backoff"]["properties"]) == {"initial", "factor", "max"}
    assert "backoff" in components["Rule"]["properties"]
    trail = components["DecisionTrail"]["properties"]
    assert {"retryDelaySeconds", "retryNotBefore"} <= set(trail)
