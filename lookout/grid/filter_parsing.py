"""Reading the grid's filters from a query string: every value is checked, and a value that
cannot be used raises ``FilterError`` naming its parameter (never ignored, never a 500)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, time
from typing import Any

from django.utils import timezone

from armada.web.inputs import whole_number
from lookout.grid.filters import (
    COUNT_FILTERS,
    DECISIONS,
    MAX_ANNOTATION_FILTERS,
    MAX_ANNOTATION_KEY,
    MAX_ANNOTATION_VALUE,
    MAX_COUNT,
    MAX_EXIT_CODE,
    MAX_INT,
    MAX_TEXT,
    MAX_VALUES,
    MIN_EXIT_CODE,
    MULTI_FILTERS,
    NONE,
    RANGE_FILTERS,
    RETRYABLE_CHOICES,
    STATES,
    TEXT_FILTERS,
    AnnotationFilter,
    FilterError,
    text_ok,
)

# Multi-valued filters whose values are a closed set.
CHOICES: dict[str, tuple[str, ...]] = {
    "state": STATES,
    "retryable": RETRYABLE_CHOICES,
    "decision": (*DECISIONS, NONE),
}


# The bounds of the whole-number ranges (others: 0 to MAX_INT).
INT_BOUNDS: dict[str, tuple[int, int]] = {
    "exit_code": (MIN_EXIT_CODE, MAX_EXIT_CODE),
    **{name: (0, MAX_COUNT) for name in COUNT_FILTERS},
}


def _values(query: Mapping[str, Any], name: str) -> list[str]:
    if hasattr(query, "getlist"):
        raw = query.getlist(name)
    else:
        raw = query.get(name)
        raw = [] if raw is None else [raw] if isinstance(raw, str) else list(raw)
    return [str(v) for v in raw]


def _one(query: Mapping[str, Any], name: str) -> str:
    values = [v for v in _values(query, name) if v.strip()]
    if len(values) > 1:
        raise FilterError(name, "is given more than once")
    return values[0] if values else ""


def _multi(query: Mapping[str, Any], param: str) -> tuple[str, ...]:
    values = []
    for raw in _values(query, param):
        value = text_ok(param, raw, MAX_TEXT)
        if not value:
            continue
        allowed = CHOICES.get(param)
        if allowed is not None and value not in allowed:
            raise FilterError(param, f"{value!r} is not one of {', '.join(allowed)}")
        values.append(value)
    values = list(dict.fromkeys(values))
    if len(values) > MAX_VALUES:
        raise FilterError(param, f"has more than {MAX_VALUES} values")
    return tuple(values)


def _int(param: str, raw: str, low: int, high: int) -> int | None:
    text = raw.strip()
    if not text:
        return None
    negative = text.startswith("-")
    number = whole_number(text[1:] if negative else text)
    if number is None:
        raise FilterError(param, f"{text[:40]!r} is not a whole number")
    number = -number if negative else number
    if not low <= number <= high:
        raise FilterError(param, f"must be from {low} to {high}")
    return number


def parse_time(param: str, raw: str, *, end: bool = False) -> datetime | None:
    """An ISO 8601 time (``2024-05-01T12:30``, with seconds or an offset or not), or a date
    (the start of that day, or for ``end`` its last moment). Without an offset it is in
    the server's time zone."""
    text = raw.strip()
    if not text:
        return None
    if len(text) > 40:
        raise FilterError(param, "is longer than a time can be")
    try:
        if len(text) == 10:
            day = datetime.fromisoformat(text).date()
            moment = datetime.combine(day, time.max if end else time.min)
        else:
            moment = datetime.fromisoformat(text.replace(" ", "T", 1))
    except ValueError:
        raise FilterError(
            param, f"{text!r} is not a time (write it as 2024-05-01T12:30 or 2024-05-01)"
        ) from None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, timezone.get_current_timezone())
    return moment


def format_time(moment: datetime) -> str:
    """A time as the URL holds it: ISO 8601 in the server's time zone, seconds only when
    they are not zero (so that a form's ``datetime-local`` field shows it)."""
    local = timezone.localtime(moment).replace(tzinfo=None)
    if local.microsecond:
        return local.isoformat()
    return local.isoformat(timespec="seconds" if local.second else "minutes")


def _annotations(query: Mapping[str, Any]) -> tuple[AnnotationFilter, ...]:
    found: list[AnnotationFilter] = []
    for raw in _values(query, "ann"):
        text = text_ok("ann", raw, MAX_ANNOTATION_KEY + 1 + MAX_ANNOTATION_VALUE)
        if not text:
            continue
        missing = text.startswith("!")
        key, has_value, value = text.removeprefix("!").partition("=")
        key = key.strip()
        if not key:
            raise FilterError("ann", f"{text[:60]!r} has no annotation key before '='")
        if len(key) > MAX_ANNOTATION_KEY:
            raise FilterError("ann", f"the key is longer than {MAX_ANNOTATION_KEY} characters")
        if missing and has_value:
            raise FilterError("ann", "'!key' (no such annotation) takes no value")
        if len(value) > MAX_ANNOTATION_VALUE:
            raise FilterError("ann", f"the value is longer than {MAX_ANNOTATION_VALUE} characters")
        found.append(AnnotationFilter(key, value if has_value else None, missing))
    added = _added_annotation(query)
    if added is not None:
        found.append(added)
    found = list(dict.fromkeys(found))
    if len(found) > MAX_ANNOTATION_FILTERS:
        raise FilterError("ann", f"has more than {MAX_ANNOTATION_FILTERS} annotation filters")
    return tuple(found)


def _added_annotation(query: Mapping[str, Any]) -> AnnotationFilter | None:
    """The annotation filter of the grid's "add" fields: ``ann_key``, ``ann_op`` (``=``, the
    default, or ``exists``) and ``ann_value``."""
    key = text_ok("ann_key", _one(query, "ann_key"), MAX_ANNOTATION_KEY)
    op = _one(query, "ann_op").strip() or "="
    value = text_ok("ann_value", _one(query, "ann_value"), MAX_ANNOTATION_VALUE)
    if op not in ("=", "exists"):
        raise FilterError("ann_op", "must be = or exists")
    if not key:
        if value:
            raise FilterError("ann_key", "is needed to filter on an annotation's value")
        return None
    if "=" in key or key.startswith("!"):
        raise FilterError("ann_key", "an annotation key cannot hold '=' or start with '!'")
    return AnnotationFilter(key, None if op == "exists" else value)


def parse_filters(query: Mapping[str, Any]) -> dict[str, Any]:
    """The ``JobFilters`` fields ``query`` sets."""
    values: dict[str, Any] = {}
    for name, (_, limit) in TEXT_FILTERS.items():
        values[name] = text_ok(name, _one(query, name), limit)
    for name, param in MULTI_FILTERS.items():
        values[name] = _multi(query, param)
    for low, high, param, kind in RANGE_FILTERS:
        if kind == "int":
            lo, hi = INT_BOUNDS.get(param, (0, MAX_INT))
            first = _int(f"{param}_min", _one(query, f"{param}_min"), lo, hi)
            last = _int(f"{param}_max", _one(query, f"{param}_max"), lo, hi)
            if first is not None and last is not None and first > last:
                raise FilterError(param, f"the minimum {first} is greater than the maximum {last}")
        else:
            first = parse_time(f"{param}_from", _one(query, f"{param}_from"))
            last = parse_time(f"{param}_to", _one(query, f"{param}_to"), end=True)
            if first is not None and last is not None and first > last:
                raise FilterError(param, "the 'from' time is after the 'to' time")
        values[low], values[high] = first, last
    exit_code = _one(query, "exit_code").strip()
    if exit_code and exit_code != NONE:
        exit_code = str(_int("exit_code", exit_code, MIN_EXIT_CODE, MAX_EXIT_CODE))
    values["exit_code"] = exit_code
    for name in COUNT_FILTERS:
        values[name] = _int(name, _one(query, name), 0, MAX_COUNT)
    values["annotations"] = _annotations(query)
    return values
