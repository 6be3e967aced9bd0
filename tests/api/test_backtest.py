"""POST /api/v1/retry-policies/backtest: the service's document over HTTP, 400 naming the
field, 403/404 for queues, nothing written, and the operation in the OpenAPI schema. The
recorded history is the one of tests/services/test_backtest.py."""

from __future__ import annotations

import pytest
import yaml

from tests.services.backtest_history import NOW, SINCE, STRICTER, history, snapshot  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("history")]
URL = "/api/v1/retry-policies/backtest"
RANGE = {"since": SINCE.isoformat(), "until": NOW.isoformat()}


def post(client, **body):
    return client.post(URL, {**RANGE, **body}, format="json")


def test_a_draft_is_replayed(api):
    response = post(api, draft=STRICTER)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["policy"]["source"] == "draft"
    assert body["overall"]["examined"] == 8
    assert (body["overall"]["retryToFail"], body["overall"]["failToRetry"]) == (3, 2)
    assert body["overall"]["savedCost"] == {
        "coreHours": 4.0,
        "memoryGibHours": 8.0,
        "gpuHours": 0.0,
    }
    assert [q["queue"] for q in body["queues"]] == ["demo", "other"]
    assert body["flips"][0]["from"] == "retry" and body["flips"][0]["count"] == 3
    assert body["sample"][0]["url"].startswith("/")
    assert "estimate" in body["estimateNote"]
    # No queue uses the draft's policy (ml-strict) yet: every queue was replayed.
    assert body["replayed"] == {"basis": "all", "queues": None, "notVisible": 0}
    assert set(body) == {
        "policy",
        "range",
        "replayed",
        "overall",
        "queues",
        "flips",
        "sample",
        "yield",
        "estimateNote",
    }


def test_a_yaml_body_and_filters(api):
    body = yaml.safe_dump({**RANGE, "draft": STRICTER, "queues": ["demo"], "jobSets": ["set-2"]})
    response = api.post(URL, data=body, content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert response.json()["overall"]["examined"] == 1
    assert [q["queue"] for q in response.json()["queues"]] == ["demo"]


def test_a_stored_policy_at_a_version(api):
    response = post(api, policy="ml", version=1, sampleSize=0)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["policy"]["name"], body["policy"]["version"], body["policy"]["source"]) == (
        "ml",
        1,
        "stored",
    )
    assert body["sample"] == []


def test_since_as_a_duration_reads_back_from_now(api):
    response = api.post(URL, {"since": "7d", "draft": STRICTER}, format="json")
    assert response.status_code == 200, response.json()
    # the history is older than a week: nothing in range
    assert response.json()["overall"]["examined"] == 0


def errors_of(response) -> set[str]:
    return {e["field"] for e in response.json()["errors"]}


def test_an_invalid_draft_gets_the_field_errors_of_a_save(api):
    bad = {**STRICTER, "defaultAction": "Later", "rules": [{"action": "Retry"}]}
    saved = api.post("/api/v1/retry-policies?dryRun=true", bad, format="json")
    response = post(api, draft=bad)
    assert saved.status_code == response.status_code == 400
    assert response.json()["errors"] == saved.json()["errors"]
    assert {"defaultAction", "rules[0].onCategory"} <= errors_of(response)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"since": "yesterday"}, "since"),
        ({"since": "2020-01-01T00:00:00Z"}, "since"),  # years before until
        ({"since": NOW.isoformat(), "until": SINCE.isoformat()}, "since"),
        ({"since": "2026-01-01T00:00:00"}, "since"),  # no time zone
        ({"since": None}, "since"),
        ({"until": "soon"}, "until"),
        ({"sampleSize": 100000}, "sampleSize"),
        ({"queues": "demo"}, "queues"),
        ({"draft": None, "policy": "nope"}, "policy"),
        ({"draft": None, "policy": "ml", "version": 7}, "version"),
        ({"draft": None}, "draft"),
        ({"policy": "ml"}, "draft"),
    ],
    ids=[
        "since-not-a-time",
        "since-years-back",
        "since-after-until",
        "since-naive",
        "since-missing",
        "until-not-a-time",
        "sample-too-big",
        "queues-not-a-list",
        "unknown-policy",
        "unknown-version",
        "nothing-to-replay",
        "draft-and-policy",
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, body, field):
    # None leaves the key out
    payload = {k: v for k, v in {**RANGE, "draft": STRICTER, **body}.items() if v is not None}
    response = api.post(URL, payload, format="json")
    assert response.status_code == 400, response.json()
    assert field in errors_of(response), response.json()


def test_queues_the_caller_may_not_view(api_as, owner, outsider):
    refused = post(api_as(owner), draft=STRICTER, queues=["other"])
    assert refused.status_code == 403
    assert "'other'" in refused.json()["message"]
    missing = post(api_as(owner), draft=STRICTER, queues=["nope"])
    assert missing.status_code == 404
    mine = post(api_as(owner), draft=STRICTER)
    assert [q["queue"] for q in mine.json()["queues"]] == ["demo"]
    assert post(api_as(outsider), draft=STRICTER).json()["overall"]["examined"] == 0
    assert post(api_as(None), draft=STRICTER).status_code in (401, 403)


def test_the_api_writes_nothing(api, api_as, owner):
    before = snapshot()
    assert post(api, draft=STRICTER).status_code == 200
    assert post(api, draft={**STRICTER, "retryLimit": -1}).status_code == 400
    assert post(api_as(owner), draft=STRICTER, queues=["other"]).status_code == 403
    assert snapshot() == before


def test_the_operation_is_in_the_schema(api):
    schema = api.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/retry-policies/backtest"]["post"]
    assert set(operation["responses"]) >= {"200", "400", "403", "404"}
    request = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    components = schema["components"]["schemas"]
    assert request.endswith("/BacktestRequest")
    assert {"draft", "policy", "version", "since", "until", "queues", "jobSets"} <= set(
        components["BacktestRequest"]["properties"]
    )
    document = components["Backtest"]["properties"]
    assert {"overall", "queues", "flips", "sample", "yield", "estimateNote"} <= set(document)
    assert "from" in components["BacktestFlip"]["properties"]
