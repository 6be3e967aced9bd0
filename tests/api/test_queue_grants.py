"""``POST /api/v1/queues/{name}/grant|revoke``: a user or group gets or loses verbs on one
queue, the other grants kept; bad bodies are a 400 naming the field; only those who may
update queues may (403); an unknown queue is a 404."""

from __future__ import annotations

import pytest

from armada.models import Queue

pytestmark = pytest.mark.django_db
ALICE = {"kind": "User", "name": "alice"}


def test_grant_then_revoke_watch(api, queue, outsider, api_as):
    url = "/api/v1/queues/demo"
    otto = api_as(outsider)
    assert otto.get("/api/v1/jobs", {"queue": "demo"}).status_code == 403
    granted = api.post(
        f"{url}/grant",
        {"subjects": [{"kind": "User", "name": "otto"}], "verbs": ["watch"]},
        format="json",
    )
    assert granted.status_code == 200, granted.json()
    assert granted.json()["permissions"] == [
        {"subjects": [{"kind": "Group", "name": "submitters"}], "verbs": ["submit"]},
        {"subjects": [{"kind": "User", "name": "otto"}], "verbs": ["watch"]},
    ]
    assert otto.get("/api/v1/jobs", {"queue": "demo"}).status_code == 200
    revoked = api.post(
        f"{url}/revoke", {"subjects": [{"kind": "User", "name": "otto"}]}, format="json"
    )
    assert revoked.status_code == 200, revoked.json()
    assert revoked.json()["permissions"] == granted.json()["permissions"][:1]
    assert otto.get("/api/v1/jobs", {"queue": "demo"}).status_code == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"subjects": [ALICE], "verbs": ["peek"]}, "verbs"),
        ({"subjects": [ALICE]}, "verbs"),
        ({"subjects": [{"kind": "Team", "name": "x"}], "verbs": ["watch"]}, "subjects[0]"),
        ({"verbs": ["watch"]}, "subjects"),
    ],
)
def test_a_bad_grant_is_a_400_naming_the_field(api, queue, body, field):
    before = Queue.objects.get(name="demo").permissions
    response = api.post("/api/v1/queues/demo/grant", body, format="json")
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == [field]
    assert Queue.objects.get(name="demo").permissions == before


def test_only_those_who_may_update_queues_may_grant(api_as, queue, owner, api):
    body = {"subjects": [ALICE], "verbs": ["watch"]}
    refused = api_as(owner).post("/api/v1/queues/demo/grant", body, format="json")
    assert refused.status_code == 403 and "create_queue" in refused.json()["message"]
    assert api.post("/api/v1/queues/nowhere/grant", body, format="json").status_code == 404
