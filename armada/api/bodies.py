"""Checks every API request passes before a view sees it.

- A body longer than ``settings.DATA_UPLOAD_MAX_MEMORY_SIZE`` is refused with 413 before it
  is read (DRF's parsers read the stream themselves, so Django's own check never runs).
- The parsed body must be data the store can keep (``armada.web.storable``: no NUL or lone
  surrogate, finite numbers, plain JSON types, bounded nesting); such a body is refused with
  400 naming the field, instead of failing half-way through a write. Path parameters are
  held to the same rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.request import Request

from armada.web.storable import MAX_DEPTH, check_storable, check_storable_texts

__all__ = ["MAX_DEPTH", "check_body_size", "check_path_values", "check_storable"]


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"


def max_body_bytes() -> int:
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def check_body_size(request: Request) -> None:
    """Refuse (413) a body whose declared length is over the limit, without reading it."""
    meta = request._request.META
    try:
        length = int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    limit = max_body_bytes()
    if length > limit:
        raise RequestTooLarge(
            f"the request body is {length} bytes; at most {limit} are accepted "
            "(split a job file into several submits)"
        )


def check_path_values(kwargs: Mapping[str, Any]) -> None:
    """Path parameters (queue, policy, job and run names) follow the same rule."""
    check_storable_texts(kwargs)
