"""The REST contract for acting on many queues at once (``POST /api/v1/queues/{cancel,preempt,
cordon,uncordon}``), listing queues by label (``GET /api/v1/queues?selector=...``), and the
warnings of a retry policy saved with a mutate block on a Fail rule."""

from __future__ import annotations

import pytest

from armada.models import Event, Job, Queue, RetryPolicy
from armada.services.queues import queue_create
from armada.services.submit import job_submit
from tests.conftest import T0, job, job_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues(admin_user, owner):
    for name, labels in [
        ("ml-a", {"team": "ml"}),
        ("ml-b", {"team": "ml"}),
        ("web", {"team": "web"}),
    ]:
        queue_create(
            actor=admin_user, data={"name": name, "labels": labels, "owners": ["olive"]}, now=T0
        )
    return {
        name: job_submit(actor=owner, data=job_file(queue=name, jobs=[job(), job()]), now=T0)
        for name in ("ml-a", "ml-b", "web")
    }


def states(ids):
    return sorted(Job.objects.get(id=i).state for i in ids)


# --- cancel -----------------------------------------------------------------------------------


def test_cancel_by_selector(api_as, owner, queues):
    response = api_as(owner).post(
        "/api/v1/queues/cancel",
        {"selector": "team=ml", "states": ["queued"], "reason": "drain"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "dryRun": False,
        "queues": [
            {"name": "ml-a", "jobIds": sorted(queues["ml-a"])},
            {"name": "ml-b", "jobIds": sorted(queues["ml-b"])},
        ],
    }
    assert states(queues["ml-a"] + queues["ml-b"]) == ["cancelled"] * 4
    assert states(queues["web"]) == ["queued", "queued"]


def test_cancel_by_names_with_inverse_and_dry_run(api, queues):
    response = api.post(
        "/api/v1/queues/cancel", {"queues": ["web"], "inverse": True, "dryRun": True}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["dryRun"] is True and [q["name"] for q in body["queues"]] == ["ml-a", "ml-b"]
    assert not Job.objects.filter(state="cancelled").exists()
    assert not Event.objects.filter(type="cancelled").exists()


def test_cancel_needs_the_verb_on_every_queue(api_as, member, admin_user, owner, queues):
    queue_create(
        actor=admin_user, data={"name": "ops", "owners": ["root"], "labels": {"team": "ml"}}, now=T0
    )
    response = api_as(owner).post("/api/v1/queues/cancel", {"selector": "team=ml"}, format="json")
    assert response.status_code == 403
    assert "'ops'" in response.json()["message"]
    assert not Job.objects.filter(state="cancelled").exists()


def test_cancel_of_an_unknown_queue_is_404_and_changes_nothing(api, queues):
    response = api.post("/api/v1/queues/cancel", {"queues": ["ml-a", "ghost"]}, format="json")
    assert response.status_code == 404 and "ghost" in response.json()["message"]
    assert not Job.objects.filter(state="cancelled").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "selector"),
        ({"queues": ["ml-a"], "selector": "team=ml"}, "queues"),
        ({"selector": "team=m l"}, "selector"),
        ({"selector": "team=ml", "states": ["done"]}, "states[0]"),
        ({"selector": "team=ml", "priorityClasses": ["gold"]}, "priorityClasses[0]"),
        ({"selector": "team=ml", "pools": ["moon"]}, "pools[0]"),
        ({"selector": "team=ml", "dryRun": "maybe"}, "dryRun"),
        ({"selector": "team=ml", "jobSetId": "x"}, "jobSetId"),
    ],
    ids=[
        "neither",
        "both",
        "bad-selector",
        "bad-state",
        "bad-class",
        "bad-pool",
        "bad-dry-run",
        "unknown",
    ],
)
def test_a_bad_cancel_is_400_naming_the_field_and_changes_nothing(api, queues, body, field):
    response = api.post("/api/v1/queues/cancel", body, format="json")
    assert response.status_code == 400
    assert field in [e["field"] for e in response.json()["errors"]]
    assert not Job.objects.filter(state="cancelled").exists()


# --- preempt ----------------------------------------------------------------------------------


def test_preempt_answers_the_jobs_it_stops(api, queues):
    response = api.post(
        "/api/v1/queues/preempt", {"queues": ["ml-a"], "reason": "maintenance"}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "dryRun": False,
        "queues": [{"name": "ml-a", "jobIds": []}],
    }  # none running


def test_preempt_takes_no_states(api, queues):
    response = api.post(
        "/api/v1/queues/preempt", {"queues": ["ml-a"], "states": ["running"]}, format="json"
    )
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "states"


# --- cordon, uncordon -------------------------------------------------------------------------


def test_cordon_and_uncordon_by_selector(api, queues):
    response = api.post("/api/v1/queues/cordon", {"selector": "team=ml"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "dryRun": False,
        "queues": [{"name": "ml-a", "cordoned": True}, {"name": "ml-b", "cordoned": True}],
    }
    assert sorted(Queue.objects.filter(cordoned=True).values_list("name", flat=True)) == [
        "ml-a",
        "ml-b",
    ]
    listed = api.get("/api/v1/queues", {"onlyCordoned": "true"}).json()
    assert [q["name"] for q in listed] == ["ml-a", "ml-b"]
    response = api.post(
        "/api/v1/queues/uncordon", {"queues": ["ml-b"], "dryRun": True}, format="json"
    )
    assert response.json() == {"dryRun": True, "queues": [{"name": "ml-b", "cordoned": False}]}
    assert Queue.objects.get(name="ml-b").cordoned
    api.post("/api/v1/queues/uncordon", {"queues": ["ml-b"]}, format="json")
    assert not Queue.objects.get(name="ml-b").cordoned


def test_cordon_needs_the_global_permission(api_as, owner, queues):
    response = api_as(owner).post("/api/v1/queues/cordon", {"queues": ["ml-a"]}, format="json")
    assert response.status_code == 403 and "cordon_queue" in response.json()["message"]
    assert not Queue.objects.filter(cordoned=True).exists()


def test_cordon_takes_only_the_selection(api, queues):
    response = api.post("/api/v1/queues/cordon", {"queues": ["ml-a"], "reason": "x"}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "reason"


# --- listing by label -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "names"),
    [
        ({}, ["ml-a", "ml-b", "web"]),
        ({"selector": "team=ml"}, ["ml-a", "ml-b"]),
        ({"selector": "team=ml", "inverse": "true"}, ["web"]),
        ({"selector": "!team"}, []),
        ({"onlyCordoned": "true"}, []),
    ],
)
def test_list_queues_by_label(api, queues, params, names):
    response = api.get("/api/v1/queues", params)
    assert response.status_code == 200
    assert [q["name"] for q in response.json()] == names


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"selector": "team=a b"}, "selector"),
        ({"selector": ""}, "selector"),
        ({"onlyCordoned": "maybe"}, "onlyCordoned"),
    ],
)
def test_a_bad_listing_filter_is_400_naming_it(api, queues, params, field):
    response = api.get("/api/v1/queues", params)
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == [field]


# --- a queue named like an action -------------------------------------------------------------


@pytest.mark.parametrize("name", ["cancel", "preempt", "cordon", "uncordon"])
def test_a_queue_named_like_an_action_is_still_reachable(api, name):
    assert (
        api.post("/api/v1/queues", {"name": name, "labels": {"a": "b"}}, format="json").status_code
        == 201
    )
    assert api.get(f"/api/v1/queues/{name}").json()["labels"] == {"a": "b"}
    assert (
        api.patch(f"/api/v1/queues/{name}", {"priorityFactor": 2}, format="json").status_code == 200
    )
    assert api.post(f"/api/v1/queues/{name}/cordon").json()["cordoned"] is True
    assert api.delete(f"/api/v1/queues/{name}").status_code == 204
    assert not Queue.objects.exists()


# --- retry-policy warnings --------------------------------------------------------------------

FAIL_WITH_MUTATE = {
    "name": "p",
    "retryLimit": 1,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "oom", "mutate": {"affinity": {"avoidSameNode": True}}}
    ],
}
WARNING = {
    "field": "rules[0].mutate",
    "message": (
        "has no effect on a Fail rule and is ignored; remove it, or make the rule a Retry rule"
        " (a mutation applies only to retries)"
    ),
}


def test_a_mutate_block_on_a_fail_rule_is_saved_without_it_and_the_answer_warns(api):
    checked = api.post("/api/v1/retry-policies?dryRun=true", FAIL_WITH_MUTATE, format="json")
    assert checked.status_code == 200 and checked.json()["warnings"] == [WARNING]
    created = api.post("/api/v1/retry-policies", FAIL_WITH_MUTATE, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["warnings"] == [WARNING]
    assert created.json()["rules"] == [{"action": "Fail", "onCategory": "oom"}]
    assert RetryPolicy.objects.get(name="p").rules == [{"action": "Fail", "onCategory": "oom"}]
    updated = api.put("/api/v1/retry-policies/p", FAIL_WITH_MUTATE, format="json")
    assert updated.status_code == 200 and updated.json()["warnings"] == [WARNING]
    fetched = api.get("/api/v1/retry-policies/p").json()
    assert "warnings" not in fetched


def test_a_policy_saved_without_doubt_has_no_warnings(api):
    body = {**FAIL_WITH_MUTATE, "rules": [{"action": "Fail", "onCategory": "oom"}]}
    assert api.post("/api/v1/retry-policies", body, format="json").json()["warnings"] == []
