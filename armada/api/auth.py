"""How API callers prove who they are.

- ``Authorization: Bearer <key>`` or ``Authorization: Token <key>`` (armadactl sends
  ``Token``): a personal API token (``services.tokens``: one indexed query, no password
  hashing), or a legacy DRF token (``rest_framework.authtoken``). Unknown, revoked and
  expired keys are refused with a 401 that says which.
- A session cookie (Lookout's login), through DRF's own SessionAuthentication (with its
  CSRF check).
- ``Authorization: Basic``: username and password. Slow by design (one password hash per
  call, about 0.3 s of CPU with the production hasher) and throttled after failed attempts
  (``services.login_throttle``): a locked-out caller gets 429 with ``Retry-After``.

The ASGI body guard (``armada.api.bodyguard``) checks credentials before it reads a body,
with the functions below; it leaves what it found in the ASGI scope (``SCOPE_KEY``) so that
the view's authentication takes it instead of hashing the password a second time.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.contrib.auth import authenticate
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import (
    BaseAuthentication,
    BasicAuthentication,
    TokenAuthentication,
)
from rest_framework.request import Request

from armada.services import login_throttle
from armada.services.tokens import TokenRefused, is_token_key, token_authenticate

SCOPE_KEY = "armada.authenticated"
TOKEN_KEYWORDS = ("bearer", "token")

Credentials = tuple[Any, Any]


class LoginThrottled(exceptions.Throttled):
    """429 with ``Retry-After``: too many failed logins for this user or address; 503 with
    ``Retry-After`` while the throttle's store does not answer (password logins paused)."""

    def __init__(self, refusal: login_throttle.Refusal) -> None:
        exceptions.APIException.__init__(self, refusal.message)
        self.wait = refusal.wait
        self.status_code = refusal.status


def _scheme(header: str) -> tuple[str, list[str]]:
    parts = header.split()
    return (parts[0].lower() if parts else ""), parts[1:]


def token_credentials(header: str) -> Credentials | None:
    """(user, token) for a Bearer/Token header, None for any other header; raises
    AuthenticationFailed for a key that authenticates no one."""
    scheme, rest = _scheme(header)
    if scheme not in TOKEN_KEYWORDS:
        return None
    if len(rest) != 1:
        raise exceptions.AuthenticationFailed(
            "invalid token header: write 'Authorization: Bearer <key>' with the key and nothing else"
        )
    key = rest[0]
    if is_token_key(key):
        try:
            token = token_authenticate(key=key, now=timezone.now())
        except TokenRefused as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        return token.user, token
    try:
        return TokenAuthentication().authenticate_credentials(key)
    except exceptions.AuthenticationFailed:
        raise exceptions.AuthenticationFailed(
            "invalid token: no such token (mistyped, revoked or deleted)"
        ) from None


def basic_credentials(header: str, address: str) -> Credentials | None:
    """(user, None) for a Basic header with a right password, None for any other header;
    raises LoginThrottled while the user or address is locked out (before any hashing) and
    AuthenticationFailed for a wrong password, which is counted."""
    scheme, rest = _scheme(header)
    if scheme != "basic":
        return None
    try:
        if len(rest) != 1:
            raise ValueError
        raw = base64.b64decode(rest[0], validate=True)
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            decoded = raw.decode("latin-1")
        username, password = decoded.split(":", 1)
    except (ValueError, binascii.Error):
        raise exceptions.AuthenticationFailed(
            "invalid basic header: send base64 of 'username:password'"
        ) from None
    refusal = login_throttle.login_refusal(
        username=username, address=address, now=login_throttle.wall_clock()
    )
    if refusal is not None:
        raise LoginThrottled(refusal)
    user = authenticate(request=None, username=username, password=password)
    if user is None or not user.is_active:
        login_throttle.login_failed(
            username=username, address=address, now=login_throttle.wall_clock()
        )
        raise exceptions.AuthenticationFailed("invalid username or password")
    login_throttle.login_succeeded(username=username)
    return user, None


def _address(request: Request) -> str:
    return str(request.META.get("REMOTE_ADDR") or "")


def _preauthenticated(request: Request, scheme: str) -> Credentials | None:
    """What the body guard found for this request's credentials, if it checked them."""
    scope = getattr(request._request, "scope", None)
    found = scope.get(SCOPE_KEY) if isinstance(scope, dict) else None
    if found is not None and found[0] == scheme:
        return found[1], found[2]
    return None


class ApiTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer <key>`` or ``Token <key>``: personal or legacy tokens."""

    def authenticate(self, request: Request) -> Credentials | None:
        return _preauthenticated(request, "token") or token_credentials(
            request.META.get("HTTP_AUTHORIZATION", "")
        )

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class ThrottledBasicAuthentication(BasicAuthentication):
    """HTTP Basic with failed-login throttling (429 with Retry-After when locked out)."""

    def authenticate(self, request: Request) -> Credentials | None:
        return _preauthenticated(request, "basic") or basic_credentials(
            request.META.get("HTTP_AUTHORIZATION", ""), _address(request)
        )
