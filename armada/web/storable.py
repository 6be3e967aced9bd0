"""What the store can keep: the one rule every input path holds text and data to.

PostgreSQL refuses the NUL character in text and in JSON, and cannot hold a lone surrogate
(``\\ud800``, which JSON can spell and Python keeps) in either; JSON has no NaN or infinity;
and a YAML document can hold dates, binary and sets besides. Data with any of these is
refused with a problem naming its field, instead of failing half-way through a write.
Nesting is bounded too, so that no later step (validation, JSON encoding) runs out of stack.

Used by the API (path and query parameters, bodies), Lookout's forms and filters (through
``armada.web.inputs``) and the policy editor (through ``armada.web.documents``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from armada.core.errors import FieldError, ValidationFailed

MAX_DEPTH = 64
MAX_PROBLEMS = 20
NUL_PROBLEM = "must not contain the NUL character (\\u0000)"
SURROGATE_PROBLEM = (
    "must not contain a lone surrogate (\\ud800 to \\udfff): it is not a character and "
    "cannot be stored"
)
_SCALARS = (str, int, float, bool, type(None))
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None. Fast for plain ASCII (the usual case)."""
    if "\x00" in text:
        return NUL_PROBLEM
    if not text.isascii() and _SURROGATE.search(text):
        return SURROGATE_PROBLEM
    return None


def shown(text: str) -> str:
    """``text`` with each lone surrogate written out (``\\ud800``), so that an answer naming
    it can be sent as UTF-8."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _key_path(where: str, key: object) -> str:
    """``where.key``, or ``where[key]`` for keys such as ``armadaproject.io/gangId`` (the
    way the core names annotations)."""
    text = shown(str(key))
    if where and not _PLAIN_KEY.fullmatch(text):
        return f"{where}[{text}]"
    return f"{where}.{text}" if where else text


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return text_problem(value)
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
    """True when ``data`` certainly has no problem: plain JSON types only, no NUL or lone
    surrogate, finite numbers, not too deep. No paths are built, so a 5,000-job file takes
    milliseconds; on False the full walk runs and names each problem."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth = pop()
        kind = type(value)
        if kind is str:
            if "\x00" in value or (not value.isascii() and _SURROGATE.search(value)):
                return False
        elif kind is dict:
            if depth >= MAX_DEPTH:
                return False
            for key, child in value.items():
                if type(key) is not str or "\x00" in key:
                    return False
                if not key.isascii() and _SURROGATE.search(key):
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


def check_storable_texts(values: Mapping[str, Any]) -> None:
    """Named texts (path or query parameters, form fields) follow the same rule; values
    that are not text are left alone."""
    errors = [
        FieldError(name, problem)
        for name, value in values.items()
        if isinstance(value, str) and (problem := text_problem(value)) is not None
    ]
    if errors:
        raise ValidationFailed(errors)
