"""Armada's REST gateway under ``/v1/`` (``armada.wire.gateway``) through Django's test
client: paths from the methods' HTTP rules, requests built from bodies, queries and paths,
and Armada's JSON (Go's encoding/json over its structs) and grpc-gateway v1's errors.

Most tests swap a test-only operation into the registry for one method (the ``swap`` fixture
of tests/wire/conftest.py), so that what the gateway hands the operation (and what it does
with the answer) can be seen exactly."""

from __future__ import annotations

import asyncio
import json

import pytest
from armada_client.armada import submit_pb2
from django.db.utils import OperationalError
from django.urls import resolve
from google.protobuf import empty_pb2

from armada.services.errors import (
    AlreadyExists,
    FailedPrecondition,
    FieldError,
    NotFound,
    PermissionDenied,
    Unavailable,
    ValidationFailed,
)
from armada.wire.http_rules import django_route, http_rules
from armada.wire.registry import OPERATIONS, Call, load_operations
from armada.wire.server import INTERNAL_MESSAGE
from tests.wire.fake_operations import raiser
from tests.wire.gateway_calls import JSON, body, post

pytestmark = pytest.mark.django_db


def streamed(response) -> bytes:
    """The whole body of a streamed response (an async view's is an async iterator)."""
    content = response.streaming_content
    if hasattr(content, "__aiter__"):

        async def collect() -> bytes:
            return b"".join([chunk async for chunk in content])

        return asyncio.run(collect())
    return b"".join(content)


# --- routes ------------------------------------------------------------------------------


def test_every_http_rule_of_armadas_methods_has_its_path():
    rules = http_rules()
    assert {(r.verb, r.template) for r in rules} >= {
        ("POST", "/v1/job/submit"),
        ("GET", "/v1/queue/{name}"),
        ("PUT", "/v1/queue/{name}"),
        ("DELETE", "/v1/queue/{name}"),
        ("POST", "/v1/queue"),
        ("GET", "/v1/batched/queues"),
        ("DELETE", "/v1/retry-policy/{name}"),
        ("GET", "/v1/retry-policies"),
        ("POST", "/v1/job-set/{queue}/{id}"),
        ("POST", "/v1/queues/active"),
    }
    assert {r.method for r in rules if r.template == "/v1/queue/{name}"} == {
        "api.Submit/GetQueue",
        "api.Submit/UpdateQueue",
        "api.Submit/DeleteQueue",
    }
    for rule in rules:
        concrete = rule.template.replace("{name}", "n").replace("{queue}", "q").replace("{id}", "i")
        match = resolve(concrete)
        assert match.func.__module__ == "armada.wire.gateway", rule
        assert set(match.kwargs) == set(rule.path_fields)
    # Methods without a rule (QueueService, Health, Watch) have no path.
    assert not any(r.method.startswith("api.QueueService/") for r in rules)
    assert not any(r.method.endswith("/Health") for r in rules)


def test_a_path_template_becomes_a_django_route():
    assert django_route("/v1/job-set/{queue}/{id}") == "job-set/<str:queue>/<str:id>"
    assert django_route("/v1/a/{x.y}/{rest=**}") == "a/<str:x__y>/<path:rest>"


def test_a_wrong_verb_is_405_and_an_unregistered_method_501(client, monkeypatch):
    response = client.delete("/v1/job/submit")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert body(response)["code"] == 12
    load_operations()
    monkeypatch.delitem(OPERATIONS, "api.Submit/GetQueue", raising=False)
    response = client.get("/v1/queue/anything")
    assert response.status_code == 501
    unserved = "api.Submit/GetQueue is not served by this server yet"
    assert body(response) == {"error": unserved, "code": 12, "message": unserved}


# --- requests ----------------------------------------------------------------------------


def test_the_body_becomes_the_request_and_the_path_sets_its_fields_last(client, swap):
    seen = swap("api.Submit/UpdateQueue", lambda c, r: empty_pb2.Empty())
    response = client.put(
        "/v1/queue/from-path",
        json.dumps({"name": "from-body", "priority_factor": 2.5, "USEROWNERS": ["a", "b"]}),
        content_type=JSON,
    )
    assert response.status_code == 200, response.content
    assert body(response) == {}
    ((call_, request),) = seen
    assert request == submit_pb2.Queue(
        name="from-path", priority_factor=2.5, user_owners=["a", "b"]
    )
    assert call_.actor.username == "root"
    assert call_.now.tzinfo is not None


def test_retry_actions_are_read_by_short_name_and_written_as_fail_or_retry(client, swap):
    policy = submit_pb2.RetryPolicy(
        name="p", retry_limit=3, default_action=submit_pb2.RETRY_ACTION_FAIL
    )
    seen = swap("api.RetryPolicyService/CreateRetryPolicy", lambda c, r: empty_pb2.Empty())
    swap("api.RetryPolicyService/GetRetryPolicy", lambda c, r: policy)
    for action in ("Fail", "fail", "FAIL", "RETRY_ACTION_FAIL", 1):
        response = post(
            client,
            "/v1/retry-policy",
            {"name": "p", "retryLimit": 3, "defaultAction": action, "rules": [], "owner": "x"},
        )
        assert response.status_code == 200, (action, response.content)
        assert seen[-1][1] == policy
    response = client.get("/v1/retry-policy/p")
    assert response.status_code == 200
    assert response["Content-Type"] == JSON
    assert response.content == b'{"name":"p","retryLimit":3,"defaultAction":"Fail"}'


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"defaultAction": "Maybe"}, "defaultAction", "'Maybe' is not a RetryAction"),
        ({"defaultAction": 7}, "defaultAction", "7 is not a number of RetryAction"),
        ({"defaultAction": "retry_action_fail"}, "defaultAction", "is not a RetryAction"),
        ({"retryLimit": "3"}, "retryLimit", "must be a whole number, not a string"),
        ({"retryLimit": 3.5}, "retryLimit", "must be a whole number"),
        ({"retryLimit": -1}, "retryLimit", "out of range for uint32"),
        ({"retryLimit": 2**32}, "retryLimit", "out of range for uint32"),
        (
            {"rules": [{"mutate": {"resources": {"memory": {"factor": "2"}}}}]},
            "rules[0].mutate.resources.memory.factor",
            "must be a number",
        ),
        ({"name": True}, "name", "must be a string, not a boolean"),
        ({"rules": [None]}, "rules[0]", "must not be null"),
        ({"rules": [{"mutate": []}]}, "rules[0].mutate", "must be a JSON object"),
    ],
)
def test_a_value_go_would_not_read_is_400_naming_the_field(client, swap, data, field, words):
    seen = swap("api.RetryPolicyService/CreateRetryPolicy", lambda c, r: empty_pb2.Empty())
    response = post(client, "/v1/retry-policy", {"name": "p", **data})
    assert response.status_code == 400, response.content
    answer = body(response)
    assert answer["code"] == 3 and answer["error"] == answer["message"]
    assert answer["message"].startswith(f"invalid request: {field}: "), answer
    assert words in answer["message"]
    assert seen == []


def test_unknown_keys_are_ignored_and_keys_match_in_any_case(client, swap):
    seen = swap("api.Submit/CancelJobs", lambda c, r: submit_pb2.CancellationResult())
    response = post(
        client,
        "/v1/job/cancel",
        {"QUEUE": "q", "jobsetid": "s", "job_ids": ["a"], "colour": "red", "nested": {"x": 1}},
    )
    assert response.status_code == 200, response.content
    assert body(response) == {}
    assert seen[0][1] == submit_pb2.JobCancelRequest(queue="q", job_set_id="s", job_ids=["a"])


def test_enums_with_a_reader_take_names_and_numbers(client, swap):
    seen = swap("api.Submit/CancelJobSet", lambda c, r: empty_pb2.Empty())
    response = post(
        client,
        "/v1/jobset/cancel",
        {"queue": "q", "jobSetId": "s", "filter": {"states": ["QUEUED", 1, "RUNNING", None]}},
    )
    assert response.status_code == 200, response.content
    assert list(seen[0][1].filter.states) == [
        submit_pb2.QUEUED,
        submit_pb2.PENDING,
        submit_pb2.RUNNING,
        submit_pb2.QUEUED,  # null is the zero value, as Go reads it
    ]
    for bad, words in (("queued", "'queued' is not a JobState"), (99, "99 is not a number")):
        response = post(client, "/v1/jobset/cancel", {"filter": {"states": [bad]}})
        assert response.status_code == 400
        assert body(response)["message"].startswith("invalid request: filter.states[0]: ")
        assert words in body(response)["message"]


def test_null_and_an_empty_body_are_an_empty_request(client, swap):
    seen = swap("api.Submit/CancelJobSet", lambda c, r: empty_pb2.Empty())
    for raw in ("null", '{"queue": null, "filter": null}'):
        response = client.post("/v1/jobset/cancel", raw, content_type=JSON)
        assert response.status_code == 200, response.content
    assert [request for _, request in seen] == [submit_pb2.JobSetCancelRequest()] * 2


def test_kubernetes_types_travel_in_their_own_json(client, swap):
    """Quantities as "500m", int-or-string ports as 8080 or "http", both ways."""

    def submit(call: Call, request: submit_pb2.JobSubmitRequest) -> submit_pb2.JobSubmitResponse:
        return submit_pb2.JobSubmitResponse(
            job_response_items=[submit_pb2.JobSubmitResponseItem(job_id="01")]
        )

    seen = swap("api.Submit/SubmitJobs", submit)
    container = {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": 1}},
        "livenessProbe": {"httpGet": {"port": "http"}},
        "readinessProbe": {"httpGet": {"port": 8080}},
    }
    response = post(
        client,
        "/v1/job/submit",
        {
            "queue": "q",
            "jobSetId": "s",
            "jobRequestItems": [{"priority": 1, "podSpec": {"containers": [container]}}],
        },
    )
    assert response.status_code == 200, response.content
    assert body(response) == {"jobResponseItems": [{"jobId": "01"}]}
    spec = seen[0][1].job_request_items[0].pod_spec.containers[0]
    assert spec.resources.requests["cpu"].string == "500m"
    assert spec.resources.limits["cpu"].string == "1"
    assert spec.livenessProbe.handler.httpGet.port.strVal == "http"
    assert spec.readinessProbe.handler.httpGet.port.intVal == 8080

    from armada.wire.jsonmap import message_json

    assert message_json(spec)["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"cpu": "1"},
    }
    assert message_json(spec)["livenessProbe"] == {"httpGet": {"port": "http"}}
    assert message_json(spec)["readinessProbe"] == {"httpGet": {"port": 8080}}


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (
            {"jobRequestItems": [{"podSpec": {"containers": [{"name": 5}]}}]},
            "jobRequestItems[0].podSpec.containers[0].name",
            "",
        ),
        ({"jobRequestItems": [{"priority": "high"}]}, "jobRequestItems[0].priority", "number"),
        (
            {"jobRequestItems": [{"services": [{"ports": [80, -1]}]}]},
            "jobRequestItems[0].services[0].ports[1]",
            "out of range for uint32",
        ),
        (
            {"jobRequestItems": [{"ingress": [{"type": "Route"}]}]},
            "jobRequestItems[0].ingress[0].type",
            "not a IngressType",
        ),
        ({"queue": 5}, "queue", "must be a string"),
        ({"jobRequestItems": {"a": 1}}, "jobRequestItems", "must be a list"),
        ({"queue": "a\u0000b"}, "queue", "NUL"),
        ({"jobRequestItems": [{"labels": {"k": "\ud800"}}]}, "jobRequestItems[0].labels.k", ""),
    ],
)
def test_a_bad_body_is_400_naming_the_field_and_the_operation_never_runs(
    client, swap, data, field, words
):
    seen = swap("api.Submit/SubmitJobs", lambda c, r: submit_pb2.JobSubmitResponse())
    response = post(client, "/v1/job/submit", data)
    assert response.status_code == 400, response.content
    answer = body(response)
    assert answer["code"] == 3 and "details" not in answer
    assert f"invalid request: {field}: " in answer["message"]
    assert words in answer["message"]
    assert seen == []


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"text"', "must be a JSON object"),
        (b"\xff\xfe{}", "UTF-8"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"a": ' * 70 + "1" + "}" * 70, "nested more than"),
        ('{"priority": NaN}', "finite"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_400(client, swap, raw, words):
    seen = swap("api.Submit/SubmitJobs", lambda c, r: submit_pb2.JobSubmitResponse())
    response = post(client, "/v1/job/submit", raw)
    assert response.status_code == 400, response.content
    assert body(response)["code"] == 3
    assert words in body(response)["message"]
    assert seen == []


def test_an_empty_body_is_an_empty_request(client, swap):
    seen = swap("api.Submit/CancelJobSet", lambda c, r: empty_pb2.Empty())
    response = client.post("/v1/jobset/cancel", b"", content_type=JSON)
    assert response.status_code == 200, response.content
    assert seen[0][1] == submit_pb2.JobSetCancelRequest()
    assert response.content == b"{}"


def test_a_body_over_the_limit_is_413(client, swap, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    seen = swap("api.Submit/SubmitJobs", lambda c, r: submit_pb2.JobSubmitResponse())
    response = post(client, "/v1/job/submit", {"queue": "x" * 2000})
    assert response.status_code == 413
    assert body(response)["code"] == 8
    assert seen == []


@pytest.mark.django_db(transaction=True)
def test_query_parameters_set_fields_and_unknown_ones_are_ignored(client, swap):
    async def queues(call: Call, request: submit_pb2.StreamingQueueGetRequest):
        yield submit_pb2.StreamingQueueMessage(queue=submit_pb2.Queue(name=f"n{request.num}"))

    seen = swap("api.Submit/GetQueues", queues)
    swap("api.RetryPolicyService/GetRetryPolicies", lambda c, r: submit_pb2.RetryPolicyList())
    response = client.get("/v1/retry-policies", {"colour": "red"})
    assert response.status_code == 200  # grpc-gateway ignores what names no field
    assert body(response) == {}
    response = client.get("/v1/batched/queues", {"num": "7", "colour": "red"})
    assert response.status_code == 200
    assert streamed(response) == b'{"result":{"Event":{"queue":{"name":"n7"}}}}\n'
    assert seen[0][1].num == 7
    response = client.get("/v1/batched/queues", {"num": "many"})
    assert response.status_code == 400
    assert body(response)["message"].startswith("invalid request: num: ")


def test_path_text_that_cannot_be_stored_is_400_in_the_gateways_shape(client, swap):
    seen = swap("api.Submit/GetQueue", lambda c, r: submit_pb2.Queue())
    response = client.get("/v1/queue/a%00b")
    assert response.status_code == 400
    assert body(response)["code"] == 3
    assert "name" in body(response)["message"]
    response = client.get("/v1/retry-policies?x=a%00b")  # a query parameter likewise
    assert response.status_code == 400
    assert body(response)["code"] == 3
    assert "NUL" in body(response)["message"]
    assert seen == []


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (ValidationFailed([FieldError("name", "must be a DNS label")]), 400, 3),
        (PermissionDenied("needs create_queue"), 403, 7),
        (NotFound("queue 'x' does not exist"), 404, 5),
        (AlreadyExists("queue 'x' exists"), 409, 6),
        (FailedPrecondition("queue 'x' has jobs"), 400, 9),
        (Unavailable("the database is unavailable"), 503, 14),
        (OperationalError("connection refused"), 503, 14),
    ],
)
def test_errors_are_grpc_gateways_with_the_status_of_their_code(client, swap, exc, status, code):
    swap("api.Submit/GetQueue", raiser(exc))
    response = client.get("/v1/queue/x")
    assert response.status_code == status
    answer = body(response)
    assert answer["code"] == code
    assert set(answer) == {"error", "code", "message"}
    assert answer["error"] == answer["message"]
    if not isinstance(exc, OperationalError):
        assert str(exc) in answer["message"]


def test_a_bug_is_500_logged_and_its_text_is_not_sent(client, swap, caplog):
    swap("api.Submit/GetQueue", raiser(ZeroDivisionError("secret-internal-detail")))
    response = client.get("/v1/queue/x")
    assert response.status_code == 500
    assert body(response) == {"error": INTERNAL_MESSAGE, "code": 13, "message": INTERNAL_MESSAGE}
    assert any(
        "api.Submit/GetQueue failed" in r.getMessage() and r.exc_info for r in caplog.records
    )
