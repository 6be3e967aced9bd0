"""How the services' errors travel on Armada's wire: the gRPC status code Armada uses for each,
the HTTP status the REST gateway answers with (grpc-gateway's mapping of that code), and the
same messages as our REST API, so a field error names its field whichever way it arrives."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from rest_framework import exceptions as drf_exceptions

from armada.services.errors import (
    AlreadyExists,
    Conflict,
    CredentialGone,
    FailedPrecondition,
    NotFound,
    PermissionDenied,
    Unavailable,
    ValidationFailed,
)


@dataclass(frozen=True)
class WireError:
    code: grpc.StatusCode
    http_status: int
    message: str


class Unauthenticated(Exception):
    """No usable credentials (gRPC UNAUTHENTICATED, HTTP 401)."""


def wire_error(exc: BaseException) -> WireError | None:
    """The status for a known error, or None for a bug (the transport logs it and answers
    INTERNAL without its text)."""
    if isinstance(exc, ValidationFailed):
        return WireError(grpc.StatusCode.INVALID_ARGUMENT, 400, _all_problems(exc))
    if isinstance(exc, PermissionDenied):
        return WireError(grpc.StatusCode.PERMISSION_DENIED, 403, str(exc))
    if isinstance(exc, NotFound):
        return WireError(grpc.StatusCode.NOT_FOUND, 404, str(exc))
    if isinstance(exc, AlreadyExists):
        return WireError(grpc.StatusCode.ALREADY_EXISTS, 409, str(exc))
    if isinstance(exc, (FailedPrecondition, Conflict)):
        return WireError(grpc.StatusCode.FAILED_PRECONDITION, 400, str(exc))
    if isinstance(exc, Unavailable):
        return WireError(grpc.StatusCode.UNAVAILABLE, 503, str(exc))
    if isinstance(exc, (Unauthenticated, CredentialGone)):
        return WireError(grpc.StatusCode.UNAUTHENTICATED, 401, str(exc))
    if isinstance(exc, drf_exceptions.Throttled):  # too many failed logins
        return WireError(grpc.StatusCode.RESOURCE_EXHAUSTED, 429, str(exc.detail))
    if isinstance(exc, drf_exceptions.AuthenticationFailed):
        return WireError(grpc.StatusCode.UNAUTHENTICATED, 401, str(exc.detail))
    return None


def _all_problems(exc: ValidationFailed) -> str:
    """``invalid request: <field>: <problem>; ...``: REST's message, with every problem in it
    (a gRPC status has no structured list of fields, so all of them go into the text)."""
    return f"invalid request: {exc}"


def gateway_error_json(code: int, message: str) -> dict:
    """grpc-gateway v1's body of a failed call (its ``internal.Error``: ``error`` and
    ``message`` both the message, ``code`` the gRPC code number, each left out when empty,
    and no details), for every refusal on a ``/v1/`` path."""
    body = {"error": message, "code": code, "message": message}
    return {k: v for k, v in body.items() if v not in (0, "")}
