"""Executor credentials over REST: create (the key once), list (never the keys), revoke
(idempotent); who may (the global ``manage_executor_credentials``); bad input answered 400
naming the field, never 500; and an executor key refused (401) by every user API: ours, the
event stream, the body guard and Armada's REST gateway."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import AsyncClient, Client
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.test import APIClient

from armada.api.auth import token_credentials
from armada.api.bodyguard import BodyGuard
from armada.models import ExecutorCredential
from armada.services.executor_credentials import (
    executor_credential_authenticate,
    executor_credential_create,
    executor_credential_issue,
    executor_credential_revoke,
)
from armada.services.submit import job_submit
from armada.services.tokens import key_digest
from tests.api.test_bodyguard import Inner, Upload, call, scope
from tests.conftest import T0, job_file
from tests.services.test_executor_credentials import grant_manage

pytestmark = pytest.mark.django_db

URL = "/api/v1/executor-credentials"
FIELDS = {"id", "clusterId", "name", "prefix", "createdAt", "createdBy", "lastUsedAt", "revokedAt"}


@pytest.fixture
def operator(django_user_model):
    user = django_user_model.objects.create_user("opal", password="opal-password")
    grant_manage(user)
    return user


def new_key(actor, cluster_id: str = "cluster-1", name: str = "executor") -> str:
    return executor_credential_create(
        actor=actor, cluster_id=cluster_id, name=name, now=timezone.now()
    ).key


def assert_error(response, status: int, fragment: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"message", "errors"} and fragment in body["message"], body
    return body


# --- create, list, revoke -----------------------------------------------------------------


def test_a_credential_is_created_with_its_key_once_and_listed_without_it(api_as, operator):
    api = api_as(operator)
    created = api.post(URL, {"clusterId": "cluster-1", "name": "primary"}, format="json")
    assert created.status_code == 201, created.json()
    assert created["Cache-Control"] == "no-store"
    body = created.json()
    assert set(body) == FIELDS | {"key"}
    key = body["key"]
    assert key.startswith("arme_") and len(key) == 45 and body["prefix"] == key[:13]
    assert (body["clusterId"], body["name"], body["createdBy"]) == ("cluster-1", "primary", "opal")
    assert body["lastUsedAt"] is None and body["revokedAt"] is None and body["createdAt"]
    assert ExecutorCredential.objects.get().digest == key_digest(key)

    listed = api.get(URL)
    assert listed.status_code == 200
    [row] = listed.json()
    assert set(row) == FIELDS and key not in json.dumps(listed.json())
    assert row == {k: v for k, v in body.items() if k != "key"}


@pytest.mark.parametrize(
    "body", [{"clusterId": "cluster-1"}, {"clusterId": "cluster-1", "name": None}]
)
def test_the_name_defaults_to_executor(api, body):
    created = api.post(URL, body, format="json")
    assert created.status_code == 201 and created.json()["name"] == "executor"


def test_the_list_holds_revoked_ones_and_filters_by_cluster(api, admin_user):
    new_key(admin_user, "cluster-1")
    new_key(admin_user, "cluster-2")
    gone = ExecutorCredential.objects.get(cluster_id="cluster-2")
    executor_credential_revoke(actor=admin_user, credential_id=gone.pk, now=timezone.now())
    rows = api.get(URL).json()
    assert [(r["clusterId"], r["revokedAt"] is None) for r in rows] == [
        ("cluster-1", True),
        ("cluster-2", False),
    ]
    assert [r["clusterId"] for r in api.get(URL, {"clusterId": "cluster-2"}).json()] == [
        "cluster-2"
    ]
    assert api.get(URL, {"clusterId": "nowhere"}).json() == []
    assert len(api.get(URL, {"clusterId": ""}).json()) == 2  # empty: no filter


def test_a_credential_made_by_no_user_is_listed_with_created_by_null(api):
    executor_credential_issue(cluster_id="cluster-1", name="local", now=T0)
    [row] = api.get(URL).json()
    assert (row["name"], row["createdBy"]) == ("local", None)


@pytest.mark.parametrize("cluster_id", ["Bad", "a_b", "x" * 64, "a%00b", "-a"])
def test_listing_by_a_bad_cluster_id_is_400_naming_it(api, cluster_id):
    response = api.get(f"{URL}?clusterId={cluster_id}")
    body = assert_error(response, 400, "clusterId")
    assert body["errors"][0]["field"] == "clusterId"


def test_revoking_answers_the_credential_and_stops_the_key_at_once(api, admin_user):
    key = new_key(admin_user)
    pk = ExecutorCredential.objects.get().pk
    assert executor_credential_authenticate(key=key, now=timezone.now()).cluster_id == "cluster-1"
    revoked = api.post(f"{URL}/{pk}/revoke")
    assert revoked.status_code == 200, revoked.json()
    body = revoked.json()
    assert set(body) == FIELDS and body["id"] == pk and body["revokedAt"]
    with pytest.raises(Exception, match="was revoked at"):
        executor_credential_authenticate(key=key, now=timezone.now())

    again = api.post(f"{URL}/{pk}/revoke")  # idempotent: the first time stays
    assert again.status_code == 200 and again.json() == body


@pytest.mark.parametrize(
    "credential_id",
    ["999", "0", "-1", "abc", "1.5", "1e3", "9" * 30, "9223372036854775808", "%C2%B2", "%20"],
)
def test_revoking_an_id_no_credential_has_is_404(api, admin_user, credential_id):
    new_key(admin_user)
    ExecutorCredential.objects.update(id=1)
    assert_error(api.post(f"{URL}/{credential_id}/revoke"), 404, "no executor credential with id")
    assert ExecutorCredential.objects.get().revoked_at is None


@pytest.mark.parametrize("body", [{"reason": "leaked"}, ["x"], "text"])
def test_revoking_takes_no_body(api, admin_user, body):
    new_key(admin_user)
    pk = ExecutorCredential.objects.get().pk
    response = api.post(f"{URL}/{pk}/revoke", body, format="json")
    assert_error(response, 400, "")
    assert ExecutorCredential.objects.get().revoked_at is None


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        ({}, "clusterId", "is required"),
        ({"name": "x"}, "clusterId", "is required"),
        ({"clusterId": ""}, "clusterId", "is required"),
        ({"clusterId": None}, "clusterId", "is required"),
        ({"clusterId": 5}, "clusterId", "must be text"),
        ({"clusterId": ["cluster-1"]}, "clusterId", "must be text"),
        ({"clusterId": {"a": 1}}, "clusterId", "must be text"),
        ({"clusterId": "Cluster-1"}, "clusterId", "RFC 1123"),
        ({"clusterId": "x" * 64}, "clusterId", "at most 63"),
        ({"clusterId": "c1", "name": ""}, "name", "1 to 100"),
        ({"clusterId": "c1", "name": "x" * 101}, "name", "at most 100"),
        ({"clusterId": "c1", "name": "a\tb"}, "name", "control characters"),
        ({"clusterId": "c1", "name": "a\x00b"}, "name", ""),
        ({"clusterId": "c1", "name": "\ud800"}, "name", ""),
        ({"clusterId": "c1", "name": 5}, "name", "must be text"),
        ({"clusterId": "c1", "name": True}, "name", "must be text"),
        ({"clusterId": "c1", "key": "arme_mine"}, "key", "unknown field"),
        ({"clusterId": "c1", "clusterid": "c1"}, "clusterid", "unknown field"),
        (["clusterId"], "", "JSON object"),
        ("cluster-1", "", "JSON object"),
        (5, "", "JSON object"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_creates_nothing(api, body, field, fragment):
    response = api.generic("POST", URL, json.dumps(body), content_type="application/json")
    error = assert_error(response, 400, fragment)
    assert error["errors"] and error["errors"][0]["field"] == field, error
    assert not ExecutorCredential.objects.exists()


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        (b"{", "application/json"),
        (b"null", "application/json"),
        (b'{"clusterId": NaN}', "application/json"),
        (b"\xff\xfe", "application/json"),
        (b"clusterId: [", "application/yaml"),
        (b"clusterId=c1", "application/x-www-form-urlencoded"),
        (b"", "application/json"),
    ],
)
def test_bodies_that_are_not_json_objects_are_4xx_never_500(api, raw, content_type):
    response = api.generic("POST", URL, raw, content_type=content_type)
    assert 400 <= response.status_code < 500 and response.json()["message"], response.content
    assert not ExecutorCredential.objects.exists()


def test_a_second_credential_of_the_same_name_for_the_cluster_is_409(api, admin_user):
    new_key(admin_user)
    response = api.post(URL, {"clusterId": "cluster-1", "name": "executor"}, format="json")
    assert_error(response, 409, "'cluster-1' already has an executor credential named 'executor'")
    assert ExecutorCredential.objects.count() == 1
    other = api.post(URL, {"clusterId": "cluster-2", "name": "executor"}, format="json")
    assert other.status_code == 201


def test_yaml_bodies_are_taken_too(api):
    response = api.generic(
        "POST", URL, b"clusterId: cluster-1\nname: from-yaml\n", content_type="application/yaml"
    )
    assert response.status_code == 201 and response.json()["name"] == "from-yaml"


# --- who may ------------------------------------------------------------------------------


OPERATIONS = [
    ("list", "GET", lambda pk: URL, None, 200),
    ("list-cluster", "GET", lambda pk: f"{URL}?clusterId=cluster-1", None, 200),
    ("create", "POST", lambda pk: URL, {"clusterId": "cluster-2"}, 201),
    ("create-bad-body", "POST", lambda pk: URL, {"clusterId": "BAD"}, 400),
    ("revoke", "POST", lambda pk: f"{URL}/{pk}/revoke", None, 200),
    ("revoke-unknown", "POST", lambda pk: f"{URL}/{pk + 1}/revoke", None, 404),
]
ALLOWED = {"admin_user", "operator"}


@pytest.mark.parametrize("operation", OPERATIONS, ids=[o[0] for o in OPERATIONS])
@pytest.mark.parametrize(
    "persona", ["admin_user", "operator", "owner", "member", "outsider", "anonymous"]
)
def test_only_holders_of_the_permission_may(request, api_as, admin_user, operation, persona):
    _, method, path, body, ok = operation
    pk = executor_credential_create(
        actor=admin_user, cluster_id="cluster-1", name="executor", now=T0
    ).credential.pk
    before = list(ExecutorCredential.objects.order_by("pk").values())
    user = None if persona == "anonymous" else request.getfixturevalue(persona)
    response = api_as(user).generic(
        method, path(pk), json.dumps(body) if body is not None else "", "application/json"
    )
    if persona in ALLOWED:
        assert response.status_code == ok, response.content
        return
    if persona == "anonymous":
        assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="api"'
    else:
        assert_error(response, 403, "needs the global 'manage_executor_credentials' permission")
    assert list(ExecutorCredential.objects.order_by("pk").values()) == before


# --- an executor key is no key for the user APIs --------------------------------------------


USER_CALLS = [
    ("GET", "/api/v1/queues", None),
    ("GET", "/api/v1/queues/demo", None),
    ("POST", "/api/v1/queues", {"name": "sneaky"}),
    ("POST", "/api/v1/jobs", job_file()),
    ("GET", "/api/v1/jobs?queue=demo", None),
    ("POST", "/api/v1/jobs/cancel", {"queue": "demo", "jobSetId": "set-1"}),
    ("GET", "/api/v1/executors", None),
    ("POST", "/api/v1/executors/cluster-1/cordon", None),
    ("GET", "/api/v1/tokens", None),
    ("POST", "/api/v1/tokens", {"name": "escalate"}),
    ("GET", URL, None),
    ("POST", URL, {"clusterId": "cluster-9"}),
    ("GET", "/api/v1/retry-policies", None),
    ("GET", "/v1/queue/demo", None),
    ("POST", "/v1/job/submit", {"queue": "demo", "jobSetId": "s", "jobRequestItems": []}),
    ("POST", "/v1/jobset/cancel", {"queue": "demo", "jobSetId": "set-1"}),
]


@pytest.fixture
def executor_keys(admin_user, queue) -> dict[str, str]:
    """A live key and a revoked one, each of a credential made by a superuser (what the
    key would act as, were it taken for a personal token)."""
    live = new_key(admin_user, name="live")
    revoked = new_key(admin_user, name="gone")
    pk = ExecutorCredential.objects.get(name="gone").pk
    executor_credential_revoke(actor=admin_user, credential_id=pk, now=timezone.now())
    return {"live": live, "revoked": revoked}


def _snapshot() -> tuple:
    from armada.models import ApiToken, Executor, Job, Queue

    return (
        list(Queue.objects.values_list("name", "cordoned")),
        Job.objects.count(),
        ApiToken.objects.count(),
        ExecutorCredential.objects.count(),
        list(Executor.objects.values_list("id", "cordoned")),
    )


@pytest.mark.parametrize("which", ["live", "revoked"])
@pytest.mark.parametrize("keyword", ["Bearer", "Token"])
@pytest.mark.parametrize(("method", "path", "body"), USER_CALLS)
def test_an_executor_key_is_401_on_the_user_apis(executor_keys, which, keyword, method, path, body):
    before = _snapshot()
    response = Client(HTTP_HOST="localhost").generic(
        method,
        path,
        json.dumps(body) if body is not None else "",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"{keyword} {executor_keys[which]}",
    )
    assert response.status_code == 401, (path, response.status_code, response.content[:300])
    assert _snapshot() == before


def test_the_shared_token_check_refuses_an_executor_key(executor_keys):
    """The one check behind /api/v1, the gateway, the body guard and Armada's gRPC API."""
    with pytest.raises(exceptions.AuthenticationFailed, match="no such token"):
        token_credentials(f"Bearer {executor_keys['live']}")


@pytest.mark.django_db(transaction=True)
def test_the_event_stream_refuses_an_executor_key(executor_keys, owner):
    """The stream authenticates in a thread of its own: the data must be committed."""
    job_submit(actor=owner, data=job_file(), now=T0)

    async def get() -> tuple[int, str]:
        response = await AsyncClient().get(
            "/api/v1/job-sets/demo/set-1/events",
            headers={"Authorization": f"Bearer {executor_keys['live']}"},
        )
        return response.status_code, response.content.decode()

    status, body = asyncio.run(get())
    assert status == 401 and "no such token" in body


@pytest.mark.django_db(transaction=True)
def test_the_body_guard_refuses_an_executor_key_before_reading_the_body(admin_user):
    key = new_key(admin_user)
    inner = Inner()
    upload = Upload(b"{}" * 100)
    headers = [("authorization", f"Bearer {key}"), ("content-length", "200")]
    answer = call(BodyGuard(inner), scope("/api/v1/jobs", headers), upload)
    assert answer["status"] == 401 and inner.calls == [] and upload.pulled == 0


def test_a_personal_token_cannot_manage_credentials_without_the_permission(owner):
    from armada.services.tokens import token_create

    key = token_create(user=owner, name="laptop", expires_at=None, now=timezone.now()).key
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert_error(api.get(URL), 403, "'manage_executor_credentials'")


# --- the schema ---------------------------------------------------------------------------


def test_the_schema_documents_the_operations_and_their_errors(api):
    schema = api.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    listing, create = paths[URL]["get"], paths[URL]["post"]
    revoke = paths[URL + "/{credential_id}/revoke"]["post"]
    assert {"clusterId"} <= {p["name"] for p in listing["parameters"]}
    assert set(create["responses"]) == {"201", "400", "403", "409", "413"}
    assert set(revoke["responses"]) == {"200", "400", "403", "404", "413"}
    new = schema["components"]["schemas"]["NewExecutorCredential"]
    assert set(new["properties"]) == FIELDS | {"key"}
    assert "key" not in schema["components"]["schemas"]["ExecutorCredential"]["properties"]
    for operation in (listing, create, revoke):
        assert "manage_executor_credentials" in operation["description"]
