"""The ASGI guard in front of Django: it decides about a request's body before anyone
reads it.

Django's ASGI handler reads the whole body (spooling it to a temporary file past 2.5 MB)
before any middleware or view runs, so a 401 or 413 from a view comes after the upload.
For every request that has a body (a ``Content-Length`` above 0, or a chunked one), in
this order:

1. A declared length over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (``ARMADA_MAX_BODY_BYTES``): 413
   at once, nothing read.
2. API paths (``/api/``, and Armada's REST gateway under ``/v1/``): the caller must
   authenticate first, the way the API does (``armada.api.auth``: token, then session,
   then Basic with its throttle): no or bad credentials give 401 (429 while a login is
   throttled), nothing read. What was found is left in the ASGI scope, so that DRF does
   not hash a Basic password a second time. With ``auth.anonymousAuth`` on, a gateway
   caller without credentials is anonymous (the limit of step 3), but bad ones still 401.
   Gateway refusals are in grpc-gateway's shape (``{"code", "message", "details"}``).
3. Other paths (Lookout forms, the login pages, the admin): a caller without a session
   may send at most ``ANONYMOUS_MAX_BODY_BYTES`` (413 above it); a logged-in one, the
   full limit.
4. A body without a declared length (chunked) is read here up to the caller's limit (413
   as soon as it goes past, reading no further) and handed to Django whole, with its
   ``Content-Length`` (Django would otherwise see an empty body).

So an unauthenticated caller's body is never larger than the anonymous limit, which is
well below the size Django spools to disk. ``armada.api.bodies`` keeps its own 413 check
for the WSGI handler and the test client.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user
from django.db import close_old_connections
from django.http.cookie import parse_cookie
from rest_framework import exceptions

from armada.api.auth import SCOPE_KEY, LoginThrottled, basic_credentials, token_credentials
from armada.services.dbfaults import DATABASE_ERRORS, read_again_if_lost
from armada.wire.errors import gateway_error_json

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

API_PREFIX = "/api/"
GATEWAY_PREFIX = "/v1/"
# grpc-gateway's error code (a gRPC status number) for each refusal's HTTP status.
GATEWAY_CODES = {400: 3, 401: 16, 413: 8, 429: 8, 503: 14}


class Refused(Exception):
    """Answer the request with ``status`` and ``message`` without reading its body."""

    def __init__(self, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []


def _header(scope: Scope, name: bytes) -> str | None:
    values = [v for k, v in scope.get("headers", []) if k.lower() == name]
    return b",".join(values).decode("latin-1") if values else None


def declared_body(scope: Scope) -> tuple[int | None, bool]:
    """(declared length or None, chunked). Raises Refused(400) for a length that is not a
    whole number (servers normally refuse those before we see them)."""
    chunked = "chunked" in (_header(scope, b"transfer-encoding") or "").lower()
    raw = _header(scope, b"content-length")
    if raw is None or chunked:
        return None, chunked
    text = raw.strip()
    if not text.isascii() or not text.isdigit():
        raise Refused(400, f"Content-Length {text[:40]!r} is not a whole number")
    return int(text), False


def _session_user(scope: Scope) -> Any | None:
    cookies = parse_cookie(_header(scope, b"cookie") or "")
    key = cookies.get(settings.SESSION_COOKIE_NAME)
    if not key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore(key)
    user = get_user(SimpleNamespace(session=store))
    return user if user.is_authenticated else None


def _identify(scope: Scope, api: bool, anonymous_ok: bool = False) -> bool:
    """``_look_up``, read once more if the database connection broke under it; a database
    that cannot be used is a 503, nothing read."""
    try:
        return read_again_if_lost(
            lambda: _look_up(scope, api, anonymous_ok), "a caller's credentials"
        )
    except DATABASE_ERRORS:
        close_old_connections()
        raise Refused(503, "the database is unavailable; try again shortly") from None


def _look_up(scope: Scope, api: bool, anonymous_ok: bool = False) -> bool:
    """Whether the caller is known. On an API path an unknown caller raises Refused (401 or
    429), unless ``anonymous_ok`` and they sent no credentials; a token or Basic caller is
    recorded in the scope for DRF. Runs in a thread: it may query the database and hash a
    password."""
    try:
        if not api:
            return _session_user(scope) is not None
        header = _header(scope, b"authorization") or ""
        address = (scope.get("client") or ("",))[0] or ""
        found = token_credentials(header)
        if found is not None:
            scope[SCOPE_KEY] = ("token", *found)
            return True
        if _session_user(scope) is not None:
            return True  # DRF loads the session again, with its CSRF check
        found = basic_credentials(header, address)
        if found is not None:
            scope[SCOPE_KEY] = ("basic", *found)
            return True
    except LoginThrottled as exc:
        raise Refused(
            exc.status_code, str(exc.detail), [(b"retry-after", str(exc.wait).encode())]
        ) from None
    except exceptions.AuthenticationFailed as exc:
        raise Refused(
            401, str(exc.detail), [(b"www-authenticate", b'Bearer realm="api"')]
        ) from None
    finally:
        # This thread is not a request's: hand its connection back to the pool now.
        close_old_connections()
    if anonymous_ok and not header.strip():
        return False
    raise Refused(
        401,
        "authentication credentials were not provided: send 'Authorization: Bearer <token>' "
        "before the body",
        [(b"www-authenticate", b'Bearer realm="api"')],
    )


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, reading no more than ``limit`` bytes (Refused 413 past it); None
    when the client went away."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body = message.get("body", b"")
        size += len(body)
        if size > limit:
            raise Refused(
                413, f"the request body is more than {limit} bytes; at most {limit} are accepted"
            )
        chunks.append(body)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` whole, then whatever the client sends next (the
    disconnect Django listens for)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


async def _refuse(send: Send, refusal: Refused, api: bool, gateway: bool = False) -> None:
    if gateway:
        error = gateway_error_json(GATEWAY_CODES.get(refusal.status, 2), refusal.message)
        body = json.dumps(error, separators=(",", ":")).encode()
        kind = b"application/json"
    elif api:
        body = json.dumps(
            {"message": refusal.message, "errors": []}, separators=(",", ":")
        ).encode()
        kind = b"application/json"
    else:
        body = (refusal.message + "\n").encode()
        kind = b"text/plain; charset=utf-8"
    headers = [
        (b"content-type", kind),
        (b"content-length", str(len(body)).encode()),
        # The body was not read, so the connection cannot carry another request.
        (b"connection", b"close"),
        *refusal.headers,
    ]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyGuard:
    """Wraps the Django ASGI application (see the module docstring)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._identify = sync_to_async(_identify, thread_sensitive=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        gateway = scope.get("path", "").startswith(GATEWAY_PREFIX)
        api = gateway or scope.get("path", "").startswith(API_PREFIX)
        anonymous_ok = gateway and settings.ARMADA.auth.anonymous_auth
        try:
            length, chunked = declared_body(scope)
            if not chunked and not length:
                return await self.app(scope, receive, send)
            limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
            if length is not None and length > limit:
                raise Refused(
                    413, f"the request body is {length} bytes; at most {limit} are accepted"
                )
            anonymous = min(limit, int(settings.ANONYMOUS_MAX_BODY_BYTES))
            # An API caller must be known before any of the body is read; elsewhere a
            # body small enough for anyone needs no look-up.
            if (api or length is None or length > anonymous) and not await self._identify(
                scope, api, anonymous_ok
            ):
                limit = anonymous
                if length is not None and length > limit:
                    raise Refused(
                        413,
                        f"the request body is {length} bytes; at most {limit} are accepted "
                        "before you log in",
                    )
            if not chunked:
                return await self.app(scope, receive, send)
            body = await _read_body(receive, limit)
        except Refused as refusal:
            return await _refuse(send, refusal, api, gateway)
        if body is None:
            return None  # the client went away; there is no one to answer
        headers = [
            (k, v)
            for k, v in scope["headers"]
            if k.lower() not in (b"content-length", b"transfer-encoding")
        ]
        headers.append((b"content-length", str(len(body)).encode()))
        return await self.app({**scope, "headers": headers}, _replay(body, receive), send)
