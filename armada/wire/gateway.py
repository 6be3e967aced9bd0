"""Armada's REST gateway under ``/v1/``: the paths of the ``google.api.http`` rules of its
methods (``wire.http_rules``), each answered by the same registered operation as the gRPC
method (``wire.registry``), in the JSON Armada's gateway speaks (``wire.jsonmap``: Go's
``encoding/json`` over Armada's Go structs, as grpc-gateway v1's ``JSONBuiltin`` writes it).

- Authentication is our ``/api/v1``'s, through DRF's authenticators (personal or legacy
  token, session with its CSRF check, Basic with its throttle); ``auth.anonymousAuth``
  admits callers with no credentials as ``services.anonymous.AnonymousCaller``, as on gRPC.
- Errors are grpc-gateway v1's: ``{"error": <message>, "code": <gRPC code number>,
  "message": <message>}`` (``details`` only when there are some; every key is left out when
  empty), with the HTTP status grpc-gateway gives the code (:data:`HTTP_STATUS`). A bug is
  logged and answered 500 with a message that says nothing of the inside.
- A path whose method no module has registered yet answers 501 (UNIMPLEMENTED).
- A unary method is a sync view (the operation runs in the request's thread, like our DRF
  views). A streaming one (``POST /v1/job-set/{queue}/{id}``, ``GET /v1/batched/queues``) is
  an async view that writes one JSON object per line: ``{"result": <message>}`` per message,
  and, if the stream fails after it started, ``{"error": {"grpc_code", "http_code",
  "message", "http_status"}}`` (grpc-gateway v1's stream error). A stream that fails before
  its first message answers like a unary error.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from http import HTTPStatus
from typing import Any

import grpc
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import connection
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.settings import api_settings

from armada.services.anonymous import anonymous_caller
from armada.services.dbfaults import DATABASE_ERRORS
from armada.services.errors import PermissionDenied
from armada.services.stream_access import Credential, credential_of
from armada.wire.errors import Unauthenticated, gateway_error_json
from armada.wire.gojson import go_dumps
from armada.wire.http_rules import HttpRule, django_route, http_rules, kwarg_name
from armada.wire.jsonmap import message_json, request_message
from armada.wire.registry import Call, Operation, load_operations
from armada.wire.server import database_unavailable, status_of

log = logging.getLogger(__name__)

JSON = "application/json"
GATEWAY_NO_CREDENTIALS = (
    "authentication credentials were not provided: send 'Authorization: Bearer <token>' "
    "(armadactl login makes one) or Basic credentials"
)


class BodyTooLarge(Exception):
    """413: the body is over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (the ASGI body guard refuses
    most such bodies before they are read; this covers the rest)."""


# grpc-gateway v1's HTTPStatusFromCode.
HTTP_STATUS = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 408,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
}


def _omitempty(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v not in (0, "", None, [])}


def error_body(code: grpc.StatusCode, message: str) -> dict[str, Any]:
    """grpc-gateway v1's body for a failed call (its ``internal.Error``, every key
    ``omitempty``; we send no details)."""
    return gateway_error_json(code.value[0], message)


def stream_error_body(code: grpc.StatusCode, message: str) -> dict[str, Any]:
    """grpc-gateway v1's ``internal.StreamError``, for a stream that fails after it
    started."""
    status = HTTP_STATUS.get(code, 500)
    return _omitempty(
        {
            "grpc_code": code.value[0],
            "http_code": status,
            "message": message,
            "http_status": HTTPStatus(status).phrase,
        }
    )


def _json_response(data: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(go_dumps(data), status=status, content_type=JSON)


def error_response(exc: BaseException, method: str) -> HttpResponse:
    """grpc-gateway's answer to a failed call."""
    if isinstance(exc, BodyTooLarge):
        return _json_response(error_body(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc)), 413)
    status = status_of(exc)
    if status.code == grpc.StatusCode.INTERNAL:
        log.error("%s failed", method, exc_info=exc)
    response = _json_response(
        error_body(status.code, status.message), HTTP_STATUS.get(status.code, 500)
    )
    if isinstance(exc, exceptions.Throttled) and exc.wait:
        response["Retry-After"] = str(max(1, int(exc.wait)))
    if response.status_code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    if response.status_code == 503:
        response["Retry-After"] = "1"
    return response


class _Unparsed(BaseParser):
    """Takes any body and parses none of it: the session's CSRF check looks at ``POST``,
    which must not make DRF parse (or refuse) a JSON body that ``wire.jsonmap`` reads."""

    media_type = "*/*"

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> dict:
        return {}


def authenticate(request: HttpRequest, op: Operation | None) -> Any:
    """The caller, as ``/api/v1`` authenticates them (see the module docstring)."""
    return caller(request, op)[0]


def caller(request: HttpRequest, op: Operation | None) -> tuple[Any, Credential]:
    """:func:`authenticate`'s caller with the credential they came with, which a stream
    checks again while it is open (``api.stream_guard``)."""
    drf_request = Request(
        request,
        parsers=[_Unparsed()],
        authenticators=[a() for a in api_settings.DEFAULT_AUTHENTICATION_CLASSES],
    )
    try:
        user = drf_request.user
    except exceptions.PermissionDenied as exc:  # a session without its CSRF token
        raise PermissionDenied(str(exc.detail)) from None
    if user.is_authenticated:
        session = isinstance(drf_request.successful_authenticator, SessionAuthentication)
        key = request.session.session_key if session else None
        return user, credential_of(user, drf_request.auth, session_key=key)
    if (op is not None and op.anonymous) or settings.ARMADA.auth.anonymous_auth:
        anonymous = anonymous_caller()  # with auth.anonymousGroups' groups
        return anonymous, credential_of(anonymous)
    raise Unauthenticated(GATEWAY_NO_CREDENTIALS)


def _operation(rule: HttpRule) -> Operation | None:
    return load_operations().get(rule.method)


def _unimplemented(rule: HttpRule) -> HttpResponse:
    body = error_body(
        grpc.StatusCode.UNIMPLEMENTED, f"{rule.method} is not served by this server yet"
    )
    return _json_response(body, 501)


def _path_values(rule: HttpRule, kwargs: dict[str, str]) -> dict[str, str]:
    return {field: kwargs[kwarg_name(field)] for field in rule.path_fields}


def _body(request: HttpRequest) -> bytes:
    """The request's body, read once (before authentication, whose CSRF check may look at
    the stream); BodyTooLarge past the limit."""
    try:
        return request.body
    except RequestDataTooBig:
        limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        raise BodyTooLarge(
            f"the request body is more than {limit} bytes; at most {limit} are accepted"
        ) from None


def _build(rule: HttpRule, op: Operation, request: HttpRequest, kwargs: dict[str, str]):
    message = request_message(
        op.request_class,
        rule,
        body=_body(request) if rule.body else b"",
        query=[(k, v) for k, values in request.GET.lists() for v in values],
        path=_path_values(rule, kwargs),
    )
    # No ``wire.inputs.check_message`` here: the body's JSON was held to the store's rule as
    # it was parsed, and the path and query by the input guard middleware.
    return message


def _call(request: HttpRequest, actor: Any, credential: Credential | None = None) -> Call:
    peer = str(request.META.get("REMOTE_ADDR") or "")
    return Call(actor=actor, now=timezone.now(), peer=peer, credential=credential)


def unary_response(rule: HttpRule, request: HttpRequest, kwargs: dict[str, str]) -> HttpResponse:
    op = _operation(rule)
    if op is None:
        return _unimplemented(rule)
    try:
        try:
            _body(request)
            actor = authenticate(request, op)
            message = _build(rule, op, request, kwargs)
            answer = go_dumps(message_json(op.func(_call(request, actor), message)))
        except DATABASE_ERRORS as exc:
            raise database_unavailable(exc) from exc
    except Exception as exc:  # noqa: BLE001 - every failure gets grpc-gateway's answer
        return error_response(exc, rule.method)
    return HttpResponse(answer, content_type=JSON)


def _prepare_stream(rule: HttpRule, op: Operation, request: HttpRequest, kwargs: dict) -> tuple:
    """Authenticate and build the request on a worker thread; its connection is closed."""
    try:
        _body(request)
        actor, credential = caller(request, op)
        return _call(request, actor, credential), _build(rule, op, request, kwargs)
    except DATABASE_ERRORS as exc:
        raise database_unavailable(exc) from exc
    finally:
        connection.close()


def _line(data: dict[str, Any]) -> bytes:
    return go_dumps(data) + b"\n"


async def stream_response(
    rule: HttpRule, request: HttpRequest, kwargs: dict[str, str]
) -> HttpResponse:
    op = _operation(rule)
    if op is None:
        return _unimplemented(rule)
    try:
        call, message = await sync_to_async(_prepare_stream, thread_sensitive=False)(
            rule, op, request, kwargs
        )
        messages = op.func(call, message)
        first = await messages.__anext__()
    except StopAsyncIteration:
        first, messages = None, None
    except Exception as exc:  # noqa: BLE001
        return error_response(exc, rule.method)

    async def lines() -> AsyncIterator[bytes]:
        if first is None:
            return
        try:
            yield _line({"result": message_json(first)})
            async for item in messages:
                yield _line({"result": message_json(item)})
        except Exception as exc:  # noqa: BLE001 - the status line is sent already
            status = status_of(exc)
            if status.code == grpc.StatusCode.INTERNAL:
                log.error("%s failed", rule.method, exc_info=exc)
            yield _line({"error": stream_error_body(status.code, status.message)})
        finally:
            await messages.aclose()

    response = StreamingHttpResponse(lines(), content_type=JSON)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _not_allowed(rules: dict[str, HttpRule], method: str) -> HttpResponse:
    body = error_body(
        grpc.StatusCode.UNIMPLEMENTED,
        f"method {method} not allowed here; allowed: {', '.join(sorted(rules))}",
    )
    response = _json_response(body, 405)
    response["Allow"] = ", ".join(sorted(rules))
    return response


def make_view(rules: dict[str, HttpRule]) -> Callable:
    """One view for one path template, dispatching on the HTTP method to its rule."""
    if any(rule.streaming for rule in rules.values()):

        async def async_view(request: HttpRequest, **kwargs: str) -> HttpResponse:
            rule = rules.get(request.method or "")
            if rule is None:
                return _not_allowed(rules, request.method or "")
            if rule.streaming:
                return await stream_response(rule, request, kwargs)
            return await sync_to_async(unary_response)(rule, request, kwargs)

        return csrf_exempt(async_view)

    def view(request: HttpRequest, **kwargs: str) -> HttpResponse:
        rule = rules.get(request.method or "")
        if rule is None:
            return _not_allowed(rules, request.method or "")
        return unary_response(rule, request, kwargs)

    return csrf_exempt(view)


def build_urlpatterns() -> list:
    """One URL pattern per path template of Armada's HTTP rules (see ``http_rules``)."""
    by_template: dict[str, dict[str, HttpRule]] = defaultdict(dict)
    for rule in http_rules():
        # The first rule for a path and verb wins (Armada has none twice).
        by_template[rule.template].setdefault(rule.verb, rule)
    return [
        path(django_route(template), make_view(rules)) for template, rules in by_template.items()
    ]


urlpatterns = build_urlpatterns()
