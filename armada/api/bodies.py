"""Checks every API request passes before a view sees it.

- A body longer than ``settings.DATA_UPLOAD_MAX_MEMORY_SIZE`` is refused with 413 before it
  is read (DRF's parsers read the stream themselves, so Django's own check never runs).
- The parsed body must be data the store can keep: PostgreSQL refuses the NUL character in
  text and JSON, and JSON has no NaN or infinity (a YAML body can hold all three, and dates,
  binary and sets besides). Such a body is refused with 400 naming the field, instead of
  failing half-way through a write. Path parameters are held to the same rule.
- Nesting is bounded, so that no later step (validation, JSON encoding) runs out of stack.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.request import Request

from armada.core.errors import FieldError, ValidationFailed

MAX_DEPTH = 64
MAX_PROBLEMS = 20
_SCALARS = (str, int, float, bool, type(None))
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


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


def _key_path(where: str, key: object) -> str:
    """``where.key``, or ``where[key]`` for keys such as ``armadaproject.io/gangId`` (the
    way the core names annotations)."""
    text = str(key)
    if where and not _PLAIN_KEY.fullmatch(text):
        return f"{where}[{text}]"
    return f"{where}.{text}" if where else text


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return "must not contain the NUL character (\\u0000)" if "\x00" in value else None
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number (NaN and infinity cannot be stored)"
    if isinstance(value, _SCALARS):
        return None
    return (
        f"must be a string, number, boolean, null, list or mapping, not {type(value).__name__} "
        "(quote dates and other special values)"
    )


def _walk(data: Any) -> Iterator[FieldError]:
    """Problems in ``data``, depth first; iterative, so deep nesting cannot overflow."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, Mapping | list):
            if depth >= MAX_DEPTH:
                yield FieldError(where, f"is nested more than {MAX_DEPTH} levels deep")
                continue
            if isinstance(value, list):
                children = [(v, f"{where}[{i}]") for i, v in enumerate(value)]
            else:
                children = []
                for k, v in value.items():
                    path = _key_path(where, k)
                    problem = _scalar_problem(k)
                    if problem is not None:
                        yield FieldError(path, f"(the key) {problem}")
                    children.append((v, path))
            stack.extend((v, path, depth + 1) for v, path in reversed(children))
            continue
        problem = _scalar_problem(value)
        if problem is not None:
            yield FieldError(where, problem)


def _surely_clean(data: Any) -> bool:
    """True when ``data`` certainly has no problem: plain JSON types only, no NUL, finite
    numbers, not too deep. No paths are built, so a 5,000-job file takes milliseconds; on
    False the full walk runs and names each problem."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth = pop()
        kind = type(value)
        if kind is str:
            if "\x00" in value:
                return False
        elif kind is dict:
            if depth >= MAX_DEPTH:
                return False
            for key, child in value.items():
                if type(key) is not str or "\x00" in key:
                    return False
                push((child, depth + 1))
        elif kind is list:
            if depth >= MAX_DEPTH:
                return False
            for child in value:
                push((child, depth + 1))
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif not (kind is int or kind is bool or value is None):
            return False
    return True


def check_storable(data: Any) -> None:
    """Raise ValidationFailed (400) naming each field that the store could not keep."""
    if _surely_clean(data):
        return
    errors: list[FieldError] = []
    for error in _walk(data):
        errors.append(error)
        if len(errors) >= MAX_PROBLEMS:
            break
    if errors:
        raise ValidationFailed(errors)


def check_path_values(kwargs: Mapping[str, Any]) -> None:
    """Path parameters (queue, policy, job and run names) follow the same rule."""
    errors = [
        FieldError(name, "must not contain the NUL character (\\u0000)")
        for name, value in kwargs.items()
        if isinstance(value, str) and "\x00" in value
    ]
    if errors:
        raise ValidationFailed(errors)
