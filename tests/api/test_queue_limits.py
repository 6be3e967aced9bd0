"""A queue's ``resourceLimitsByPriorityClassName`` over ``/api/v1/queues``: stored, shown in
every answer (``{}`` when none), replaced whole by PUT and PATCH, and a bad value a 400
naming its path that changes nothing."""

from __future__ import annotations

import pytest

from armada.models import Queue
from tests.queue_limits import BAD, EXAMPLE, EXAMPLE_YAML, LIMITS, PC, two_pools

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _pools(settings):
    two_pools(settings)


def stored(name: str = "q") -> dict:
    return Queue.objects.get(name=name).resource_limits_by_priority_class_name


def test_round_trip(api):
    created = api.post("/api/v1/queues", {"name": "q", LIMITS: EXAMPLE}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()[LIMITS] == EXAMPLE
    assert stored() == EXAMPLE
    assert api.get("/api/v1/queues/q").json()[LIMITS] == EXAMPLE
    assert api.get("/api/v1/queues").json()[0][LIMITS] == EXAMPLE


def test_a_queue_without_limits_shows_an_empty_mapping(api):
    api.post("/api/v1/queues", {"name": "q"}, format="json")
    assert api.get("/api/v1/queues/q").json()[LIMITS] == {}


def test_armada_shaped_yaml_body(api):
    response = api.post(
        "/api/v1/queues", data="name: q\n" + EXAMPLE_YAML, content_type="application/yaml"
    )
    assert response.status_code == 201, response.json()
    assert stored() == EXAMPLE


def test_values_are_normalised(api):
    body = {
        "name": "q",
        LIMITS: {PC: {"maximumResourceFraction": {"cpu": 1}}, "armada-default": None},
    }
    assert api.post("/api/v1/queues", body, format="json").status_code == 201
    assert stored() == {
        PC: {"maximumResourceFraction": {"cpu": 1.0}, "maximumResourceFractionByPool": {}},
        "armada-default": {"maximumResourceFraction": {}, "maximumResourceFractionByPool": {}},
    }


@pytest.mark.parametrize("method", ["patch", "put"])
def test_update_replaces_the_field_and_leaves_it_when_not_given(api, method):
    api.post("/api/v1/queues", {"name": "q", LIMITS: EXAMPLE}, format="json")
    send = getattr(api, method)
    assert send("/api/v1/queues/q", {"priorityFactor": 2}, format="json").json()[LIMITS] == EXAMPLE
    only_cpu = {PC: {"maximumResourceFraction": {"cpu": 0.5}}}
    response = send("/api/v1/queues/q", {LIMITS: only_cpu}, format="json")
    assert response.status_code == 200, response.json()
    expected = {PC: {"maximumResourceFraction": {"cpu": 0.5}, "maximumResourceFractionByPool": {}}}
    assert response.json()[LIMITS] == expected == stored()
    assert send("/api/v1/queues/q", {LIMITS: {}}, format="json").json()[LIMITS] == {}
    assert stored() == {}


def test_dry_run_shows_the_limits_and_stores_nothing(api):
    response = api.post("/api/v1/queues?dryRun=true", {"name": "q", LIMITS: EXAMPLE}, format="json")
    assert response.status_code == 200 and response.json()[LIMITS] == EXAMPLE
    assert not Queue.objects.exists()


@pytest.mark.parametrize(("value", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_value_is_a_400_naming_it_and_creates_nothing(api, value, field):
    response = api.post("/api/v1/queues", {"name": "q", LIMITS: value}, format="json")
    assert response.status_code == 400
    assert field in [e["field"] for e in response.json()["errors"]]
    assert not Queue.objects.exists()


@pytest.mark.parametrize(("value", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_update_is_a_400_naming_it_and_changes_nothing(api, value, field):
    api.post("/api/v1/queues", {"name": "q", LIMITS: EXAMPLE}, format="json")
    before = Queue.objects.get(name="q")
    response = api.patch("/api/v1/queues/q", {"priorityFactor": 3, LIMITS: value}, format="json")
    assert response.status_code == 400
    assert field in [e["field"] for e in response.json()["errors"]]
    after = Queue.objects.get(name="q")
    assert (after.priority_factor, after.updated_at) == (before.priority_factor, before.updated_at)
    assert after.resource_limits_by_priority_class_name == EXAMPLE


def test_the_unknown_class_error_lists_the_configured_ones(api):
    response = api.post("/api/v1/queues", {"name": "q", LIMITS: {"nope": {}}}, format="json")
    [error] = response.json()["errors"]
    assert (
        error["message"] == "unknown priority class; configured: armada-default, armada-preemptible"
    )


def test_the_schema_documents_the_field(api):
    schema = api.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    queue = schema["components"]["schemas"]["Queue"]["properties"]
    assert LIMITS in queue
    limits = schema["components"]["schemas"]["PriorityClassResourceLimits"]["properties"]
    assert set(limits) == {"maximumResourceFraction", "maximumResourceFractionByPool"}
