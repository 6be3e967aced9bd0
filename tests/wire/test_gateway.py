"""Armada's REST gateway under ``/v1/`` (``armada.wire.gateway``) through Django's test
client: paths from the methods' HTTP rules, requests built from bodies, queries and paths,
grpc-gateway's JSON and errors, our API's authentication, and the ASGI body guard.

Most tests swap a test-only operation into the registry for one method, so that what the
gateway hands the operation (and what it does with the answer) can be seen exactly."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from armada_client.armada import event_pb2, submit_pb2
from django.db.utils import OperationalError
from django.test import AsyncClient, Client
from django.urls import resolve
from django.utils import timezone
from google.protobuf import empty_pb2
from rest_framework.authtoken.models import Token

from armada.api.bodyguard import BodyGuard
from armada.core.config import parse_config
from armada.services.errors import (
    AlreadyExists,
    FailedPrecondition,
    FieldError,
    NotFound,
    PermissionDenied,
    Unavailable,
    ValidationFailed,
)
from armada.services.tokens import token_create
from armada.wire.gateway import make_view
from armada.wire.http_rules import django_route, http_rules
from armada.wire.registry import OPERATIONS, Call, load_operations, method_descriptor
from armada.wire.server import INTERNAL_MESSAGE
from tests.api.test_bodyguard import Inner, Upload, basic, call, length, scope
from tests.wire.fake_operations import operation, raiser

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def swap(monkeypatch) -> Callable[[str, Callable], list]:
    """``swap(method, func)`` serves ``method`` with ``func``; returns the list of requests
    the function was given."""
    load_operations()

    def install(name: str, func: Callable) -> list:
        seen: list = []

        def recording(call: Call, request: Any) -> Any:
            seen.append((call, request))
            return func(call, request)

        if method_descriptor(name).server_streaming:

            async def recording_stream(call: Call, request: Any):  # noqa: RUF029
                seen.append((call, request))
                async for item in func(call, request):
                    yield item

            monkeypatch.setitem(OPERATIONS, name, operation(name, recording_stream))
        else:
            monkeypatch.setitem(OPERATIONS, name, operation(name, recording))
        return seen

    return install


@pytest.fixture
def client(admin_user) -> Client:
    client = Client(HTTP_HOST="localhost")
    client.force_login(admin_user)
    return client


def body(response) -> dict:
    return json.loads(response.content)


def streamed(response) -> bytes:
    """The whole body of a streamed response (an async view's is an async iterator)."""
    content = response.streaming_content
    if hasattr(content, "__aiter__"):

        async def collect() -> bytes:
            return b"".join([chunk async for chunk in content])

        return asyncio.run(collect())
    return b"".join(content)


ROOT_AUTH = {"Authorization": "Basic " + base64.b64encode(b"root:root-password").decode()}


def post_async(path: str, data: Any, **headers: str) -> tuple[Any, bytes]:
    """POST with Django's AsyncClient and read the whole answer on the same event loop, as
    an ASGI server does (a stream's operation runs on the loop of its request)."""

    async def go() -> tuple[Any, bytes]:
        client = AsyncClient()
        response = await client.post(path, json.dumps(data), content_type=JSON, headers=headers)
        if not response.streaming:
            return response, response.content
        return response, b"".join([chunk async for chunk in response.streaming_content])

    return asyncio.run(go())


def post(client: Client, path: str, data: Any, **extra) -> Any:
    raw = data if isinstance(data, str | bytes) else json.dumps(data)
    return client.post(path, raw, content_type=JSON, **extra)


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
    assert body(response) == {
        "code": 12,
        "message": "api.Submit/GetQueue is not served by this server yet",
        "details": [],
    }


# --- requests ----------------------------------------------------------------------------


def test_the_body_becomes_the_request_and_the_path_sets_its_fields_last(client, swap):
    seen = swap("api.Submit/UpdateQueue", lambda c, r: empty_pb2.Empty())
    response = client.put(
        "/v1/queue/from-path",
        json.dumps({"name": "from-body", "priority_factor": "2.5", "userOwners": ["a", "b"]}),
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


def test_enums_by_name_and_numbers_as_strings_are_taken_and_answered_like_grpc_gateway(
    client, swap
):
    policy = submit_pb2.RetryPolicy(
        name="p", retry_limit=3, default_action=submit_pb2.RETRY_ACTION_FAIL
    )
    seen = swap("api.RetryPolicyService/CreateRetryPolicy", lambda c, r: empty_pb2.Empty())
    swap("api.RetryPolicyService/GetRetryPolicy", lambda c, r: policy)
    response = post(
        client,
        "/v1/retry-policy",
        {"name": "p", "retryLimit": "3", "defaultAction": "RETRY_ACTION_FAIL", "rules": []},
    )
    assert response.status_code == 200, response.content
    assert seen[0][1] == policy
    response = client.get("/v1/retry-policy/p")
    assert response.status_code == 200
    assert response["Content-Type"] == JSON
    assert body(response) == {"name": "p", "retryLimit": 3, "defaultAction": "RETRY_ACTION_FAIL"}


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
            {"jobRequestItems": [{"podSpec": {"containers": [{"nme": "x"}]}}]},
            "jobRequestItems[0].podSpec.containers[0].nme",
            "unknown field",
        ),
        ({"queue": "q", "colour": "red"}, "colour", "unknown field"),
        ({"jobRequestItems": [{"priority": "high"}]}, "jobRequestItems[0].priority", "float"),
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
    assert answer["code"] == 3 and answer["details"] == []
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


def test_a_body_over_the_limit_is_413(client, swap, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    seen = swap("api.Submit/SubmitJobs", lambda c, r: submit_pb2.JobSubmitResponse())
    response = post(client, "/v1/job/submit", {"queue": "x" * 2000})
    assert response.status_code == 413
    assert body(response)["code"] == 8
    assert seen == []


@pytest.mark.django_db(transaction=True)
def test_query_parameters_set_fields_and_unknown_ones_are_400(client, swap):
    async def queues(call: Call, request: submit_pb2.StreamingQueueGetRequest):
        yield submit_pb2.StreamingQueueMessage(queue=submit_pb2.Queue(name=f"n{request.num}"))

    seen = swap("api.Submit/GetQueues", queues)
    swap("api.RetryPolicyService/GetRetryPolicies", lambda c, r: submit_pb2.RetryPolicyList())
    response = client.get("/v1/retry-policies", {"colour": "red"})
    assert response.status_code == 400
    assert body(response)["message"] == "invalid request: colour: unknown query parameter"
    response = client.get("/v1/batched/queues", {"num": "7"})
    assert response.status_code == 200
    assert streamed(response) == b'{"result":{"queue":{"name":"n7"}}}\n'
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
    assert answer["details"] == []
    if not isinstance(exc, OperationalError):
        assert str(exc) in answer["message"]


def test_a_bug_is_500_logged_and_its_text_is_not_sent(client, swap, caplog):
    swap("api.Submit/GetQueue", raiser(ZeroDivisionError("secret-internal-detail")))
    response = client.get("/v1/queue/x")
    assert response.status_code == 500
    assert body(response) == {"code": 13, "message": INTERNAL_MESSAGE, "details": []}
    assert any(
        "api.Submit/GetQueue failed" in r.getMessage() and r.exc_info for r in caplog.records
    )


# --- authentication ----------------------------------------------------------------------


@pytest.fixture
def whoami(swap) -> list:
    return swap(
        "api.Submit/GetQueue",
        lambda c, r: submit_pb2.Queue(name=r.name, user_owners=[c.actor.get_username()]),
    )


def test_no_credentials_are_401_with_the_gateways_shape(whoami):
    response = Client(HTTP_HOST="localhost").get("/v1/queue/x")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert body(response)["code"] == 16
    assert "Authorization: Bearer" in body(response)["message"]
    assert whoami == []


def test_tokens_and_basic_credentials_are_their_users(whoami, owner, outsider):
    anonymous = Client(HTTP_HOST="localhost")
    key = token_create(user=owner, name="gw", expires_at=None, now=timezone.now()).key
    legacy = Token.objects.create(user=outsider).key
    for header, user in (
        (f"Bearer {key}", "olive"),
        (f"Token {legacy}", "otto"),
        (basic("olive", "olive-password")[1], "olive"),
    ):
        response = anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=header)
        assert response.status_code == 200, response.content
        assert body(response)["userOwners"] == [user]
    response = anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=basic("olive", "nope")[1])
    assert response.status_code == 401
    assert body(response) == {"code": 16, "message": "invalid username or password", "details": []}


def test_failed_logins_are_throttled_429(whoami, owner, settings):
    anonymous = Client(HTTP_HOST="localhost")
    for _ in range(settings.LOGIN_THROTTLE["USER_FAILURES"]):
        anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=basic("olive", "nope")[1])
    response = anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=basic("olive", "olive-password")[1])
    assert response.status_code == 429
    assert body(response)["code"] == 8
    assert int(response["Retry-After"]) >= 1


def test_a_session_needs_its_csrf_token_for_a_post(swap, owner):
    seen = swap("api.Submit/CancelJobSet", lambda c, r: empty_pb2.Empty())
    browser = Client(HTTP_HOST="localhost", enforce_csrf_checks=True)
    browser.force_login(owner)
    response = post(browser, "/v1/jobset/cancel", {"queue": "q", "jobSetId": "s"})
    assert response.status_code == 403
    assert body(response)["code"] == 7
    assert "CSRF" in body(response)["message"]
    assert seen == []
    token = "A" * 32  # a CSRF secret in the cookie, and the same in the header
    browser.cookies["csrftoken"] = token
    response = post(
        browser, "/v1/jobset/cancel", {"queue": "q", "jobSetId": "s"}, HTTP_X_CSRFTOKEN=token
    )
    assert response.status_code == 200, response.content
    assert seen[0][0].actor == owner


def test_anonymous_access_when_configured(whoami, settings, owner):
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True}})
    anonymous = Client(HTTP_HOST="localhost")
    response = anonymous.get("/v1/queue/x")
    assert response.status_code == 200
    assert body(response)["userOwners"] == [""]
    assert not whoami[0][0].actor.is_authenticated
    # Credentials that are sent must still be right.
    response = anonymous.get("/v1/queue/x", HTTP_AUTHORIZATION=basic("olive", "nope")[1])
    assert response.status_code == 401


# --- streams -----------------------------------------------------------------------------


def events(count: int, then: BaseException | None = None):
    async def stream(call: Call, request: event_pb2.JobSetRequest):
        for i in range(count):
            yield event_pb2.EventStreamMessage(
                id=str(i + 1),
                message=event_pb2.EventMessage(
                    queued=event_pb2.JobQueuedEvent(job_id=f"j{i}", queue=request.queue)
                ),
            )
        if then is not None:
            raise then

    return stream


@pytest.mark.django_db(transaction=True)
def test_a_stream_is_one_result_per_line_then_its_error(admin_user, swap):
    seen = swap("api.Event/GetJobSetEvents", events(2, NotFound("job set gone")))
    response, content = post_async(
        "/v1/job-set/q/s", {"watch": False, "fromMessageId": "7"}, **ROOT_AUTH
    )
    assert response.status_code == 200
    assert response["Content-Type"] == JSON
    lines = [json.loads(line) for line in content.splitlines()]
    assert lines == [
        {"result": {"id": "1", "message": {"queued": {"jobId": "j0", "queue": "q"}}}},
        {"result": {"id": "2", "message": {"queued": {"jobId": "j1", "queue": "q"}}}},
        {"error": {"code": 5, "message": "job set gone", "details": []}},
    ]
    request = seen[0][1]
    assert (request.queue, request.id, request.from_message_id) == ("q", "s", "7")


@pytest.mark.django_db(transaction=True)
def test_a_stream_that_fails_before_its_first_message_answers_with_the_status(admin_user, swap):
    swap("api.Event/GetJobSetEvents", events(0, PermissionDenied("may not watch queue 'q'")))
    response, content = post_async("/v1/job-set/q/s", {}, **ROOT_AUTH)
    assert response.status_code == 403
    assert json.loads(content) == {"code": 7, "message": "may not watch queue 'q'", "details": []}
    response, content = post_async("/v1/job-set/q/s", {})
    assert response.status_code == 401
    assert json.loads(content)["code"] == 16


@pytest.mark.django_db(transaction=True)
def test_a_stream_with_no_messages_is_an_empty_answer(admin_user, swap):
    swap("api.Event/GetJobSetEvents", events(0))
    response, content = post_async("/v1/job-set/q/s", {}, **ROOT_AUTH)
    assert response.status_code == 200
    assert content == b""


@pytest.mark.django_db(transaction=True)
def test_a_stream_with_a_bad_body_is_400(admin_user, swap):
    seen = swap("api.Event/GetJobSetEvents", events(1))
    response, content = post_async("/v1/job-set/q/s", {"watch": "yes"}, **ROOT_AUTH)
    assert response.status_code == 400
    assert json.loads(content)["message"].startswith("invalid request: watch: ")
    assert seen == []


def test_a_view_for_a_template_with_a_stream_is_async():

    stream_rule = next(r for r in http_rules() if r.template == "/v1/job-set/{queue}/{id}")
    unary_rule = next(r for r in http_rules() if r.template == "/v1/job/submit")
    assert asyncio.iscoroutinefunction(make_view({"POST": stream_rule}))
    assert not asyncio.iscoroutinefunction(make_view({"POST": unary_rule}))


# --- the ASGI body guard -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_body_guard_refuses_an_unknown_gateway_caller_before_reading_the_body():
    inner = Inner()
    upload = Upload(5000)
    answer = call(BodyGuard(inner), scope("/v1/job/submit", [length(5000)]), upload)
    assert answer["status"] == 401
    assert json.loads(answer["body"])["code"] == 16
    assert upload.pulled == 0 and inner.calls == []


@pytest.mark.django_db(transaction=True)
def test_with_anonymous_access_the_guard_lets_small_anonymous_bodies_through(settings, owner):
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True}})
    inner = Inner()
    answer = call(BodyGuard(inner), scope("/v1/job/submit", [length(100)]), Upload(100))
    assert answer["status"] == 200 and len(inner.calls) == 1
    big = settings.ANONYMOUS_MAX_BODY_BYTES + 1
    upload = Upload(big)
    answer = call(BodyGuard(inner), scope("/v1/job/submit", [length(big)]), upload)
    assert answer["status"] == 413 and upload.pulled == 0
    assert json.loads(answer["body"])["code"] == 8
    # A known caller may send the full limit; a wrong password is 401 all the same.
    answer = call(
        BodyGuard(inner),
        scope("/v1/job/submit", [length(big), basic("olive", "olive-password")]),
        Upload(big),
    )
    assert answer["status"] == 200
    answer = call(
        BodyGuard(inner), scope("/v1/job/submit", [length(100), basic("olive", "no")]), Upload(100)
    )
    assert answer["status"] == 401


# --- no input is a 500 -------------------------------------------------------------------

ODD_VALUES = [
    None,
    0,
    -1,
    2**64,
    1.5,
    1e308,
    True,
    "",
    "x",
    "-1",
    "a\u0000b",
    [],
    [1],
    {},
    {"a": 1},
]


def odd_bodies(rule) -> list[dict]:
    """For each field of the rule's request message: the field set to each odd value."""
    from armada.wire.registry import method_descriptor

    fields = method_descriptor(rule.method).input_type.fields
    return [{f.json_name: v} for f in fields for v in ODD_VALUES] + [{}]


def test_no_body_or_query_makes_a_registered_operation_answer_500(client, queue):
    """Every gateway path with the real operations, as the admin (who may do anything), fed
    each field of its request with values of every JSON type: never a 500."""
    load_operations()
    failures = []
    for rule in http_rules():
        if rule.streaming:
            continue  # streams read on other threads; their tests are transactional
        path = rule.template.replace("{name}", "demo").replace("{queue}", "demo")
        path = path.replace("{id}", "set-1")
        for data in odd_bodies(rule):
            if rule.body:
                response = client.generic(rule.verb, path, json.dumps(data), content_type=JSON)
            else:
                query = {k: json.dumps(v) if not isinstance(v, str) else v for k, v in data.items()}
                response = client.generic(rule.verb, path + "?" + urlencode(query))
            if response.status_code >= 500 and response.status_code != 503:
                failures.append((rule.verb, path, data, response.content[:300]))
            elif response.status_code != 200:
                assert set(body(response)) == {"code", "message", "details"}, response.content
    assert failures == []


def call_async(method: str, path: str, data: Any = None, **headers: str) -> tuple[Any, bytes]:
    """Like ``post_async``, for any method (``data`` as the query of a GET)."""

    async def go() -> tuple[Any, bytes]:
        client = AsyncClient()
        if method == "GET":
            response = await client.get(path, data or {}, headers=headers)
        else:
            response = await client.generic(
                method, path, json.dumps(data), content_type=JSON, headers=headers
            )
        if not response.streaming:
            return response, response.content
        return response, b"".join([chunk async for chunk in response.streaming_content])

    return asyncio.run(go())


@pytest.mark.django_db(transaction=True)
def test_no_body_or_query_makes_a_registered_stream_answer_500(admin_user, queue):
    load_operations()
    failures = []
    for rule in http_rules():
        if not rule.streaming:
            continue
        path = rule.template.replace("{queue}", "demo").replace("{id}", "set-1")
        for data in odd_bodies(rule):
            if rule.verb == "GET":
                data = {k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
            elif "watch" in data:
                continue  # a watching stream never ends by itself
            response, content = call_async(rule.verb, path, data, **ROOT_AUTH)
            if response.status_code >= 500 and response.status_code != 503:
                failures.append((rule.verb, path, data, content[:300]))
            elif response.status_code == 200:
                for line in content.splitlines():
                    answer = json.loads(line)
                    if "error" in answer and answer["error"]["code"] in (2, 13):
                        failures.append((rule.verb, path, data, line))
    assert failures == []
