"""Every API error is JSON ``{"message": ..., "errors": [{"field", "message"}]}``.

Domain errors from the services map to 400 (ValidationFailed), 403 (PermissionDenied),
404 (NotFound), 409 (Conflict) and 503 (Unavailable: the database could not be used, and the
message says whether anything was written); DRF's own errors are reshaped the same way.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from armada.services.errors import (
    Conflict,
    NotFound,
    PermissionDenied,
    Unavailable,
    ValidationFailed,
)


def _flatten(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    if isinstance(detail, dict):
        out = []
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors":
                name = prefix
            out += _flatten(value, name)
        return out
    if isinstance(detail, list):
        out = []
        for item in detail:
            out += _flatten(item, prefix)
        return out
    return [{"field": prefix, "message": str(detail)}]


def error_response(code: int, message: str, errors: list[dict[str, str]] | None = None) -> Response:
    return Response({"message": message, "errors": errors or []}, status=code)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, ValidationFailed):
        errors = [{"field": e.field, "message": e.message} for e in exc.errors]
        # The message names the first problem; ``errors`` lists them all, each with its field.
        return error_response(
            status.HTTP_400_BAD_REQUEST, f"invalid request: {exc.summary()}", errors
        )
    if isinstance(exc, PermissionDenied):
        return error_response(status.HTTP_403_FORBIDDEN, str(exc))
    if isinstance(exc, NotFound):
        return error_response(status.HTTP_404_NOT_FOUND, str(exc))
    if isinstance(exc, Conflict):
        return error_response(status.HTTP_409_CONFLICT, str(exc))
    if isinstance(exc, Unavailable):
        response = error_response(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc))
        response["Retry-After"] = "1"
        return response
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        errors = _flatten(exc.detail)
        response.data = {
            "message": "invalid request: "
            + "; ".join(
                f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors
            ),
            "errors": errors,
        }
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        if not str(detail) and isinstance(response.data, dict):
            detail = response.data.get("detail", "")  # DRF's words for a bare Http404
        response.data = {"message": str(detail), "errors": []}
    return response
