"""Kubernetes' JSON -> Kubernetes messages: the reading direction of ``wire.podspec`` (whose
docstring has the mapping). What does not fit a message (a key Kubernetes does not know, a
value of another type) is skipped and reported under its path, so that a caller decides
whether that is an error or a part left out."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from armada.core.errors import FieldError
from armada.wire.go_duration import parse_go_duration
from armada.wire.k8s_types import (
    DURATION,
    EPOCH,
    FIELDS_V1,
    INT_OR_STRING,
    MICRO_TIME,
    QUANTITY,
    TIME,
    field_path,
    is_inline,
    is_map,
    is_repeated,
)

_INT_TYPES = {
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_SFIXED64,
}
_INT_RANGES = {
    FieldDescriptor.CPPTYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.CPPTYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.CPPTYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.CPPTYPE_UINT64: (0, 2**64 - 1),
}
_FLOAT_TYPES = {FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT}


def json_to_message(msg: Message, data: Any, where: str, problems: list[FieldError]) -> None:
    """Fill ``msg`` from its Kubernetes JSON form ``data``; what does not fit is skipped and
    reported in ``problems`` under its path."""
    special = _FROM_JSON.get(msg.DESCRIPTOR.full_name)
    if special is not None:
        problem = special(msg, data)
        if problem:
            problems.append(FieldError(where, problem))
        return
    if not isinstance(data, Mapping):
        problems.append(FieldError(where, "must be a mapping"))
        return
    _fill(msg, data, where, problems)


def _fill(msg: Message, data: Mapping[str, Any], where: str, problems: list[FieldError]) -> None:
    descriptor: Descriptor = msg.DESCRIPTOR
    fields = _fields_by_json_name(descriptor)
    for key, value in data.items():
        path = field_path(where, key)
        found = fields.get(key) if isinstance(key, str) else None
        if found is None:
            problems.append(FieldError(path, "unknown field for Kubernetes' " + descriptor.name))
            continue
        if value is None:  # JSON null: the field is unset
            continue
        embedded, field = found
        holder = msg
        for inline in embedded:  # down into the embedded message(s) that hold the field
            holder = getattr(holder, inline.name)
            holder.SetInParent()
        _fill_field(holder, field, value, path, problems)


def _fill_field(
    msg: Message, field: FieldDescriptor, value: Any, path: str, problems: list[FieldError]
) -> None:
    if is_map(field):
        _fill_map(msg, field, value, path, problems)
    elif is_repeated(field):
        if not isinstance(value, list):
            problems.append(FieldError(path, "must be a list"))
            return
        target = getattr(msg, field.name)
        for i, item in enumerate(value):
            _append(target, field, item, f"{path}[{i}]", problems)
    elif field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = getattr(msg, field.name)
        sub.SetInParent()  # present even when empty ({} in JSON)
        json_to_message(sub, value, path, problems)
    else:
        converted = _scalar(field, value)
        if isinstance(converted, _Problem):
            problems.append(FieldError(path, converted.text))
        else:
            setattr(msg, field.name, converted)


def _fill_map(
    msg: Message, field: FieldDescriptor, value: Any, path: str, problems: list[FieldError]
) -> None:
    if not isinstance(value, Mapping):
        problems.append(FieldError(path, "must be a mapping"))
        return
    key_field = field.message_type.fields_by_name["key"]
    value_field = field.message_type.fields_by_name["value"]
    target = getattr(msg, field.name)
    for k, v in value.items():
        item_path = field_path(path, k)
        key = _scalar(key_field, k)
        if isinstance(key, _Problem):
            problems.append(FieldError(item_path, "key " + key.text))
            continue
        if v is None:
            continue
        if value_field.type == FieldDescriptor.TYPE_MESSAGE:
            json_to_message(target[key], v, item_path, problems)
        else:
            converted = _scalar(value_field, v)
            if isinstance(converted, _Problem):
                problems.append(FieldError(item_path, converted.text))
            else:
                target[key] = converted


def _append(
    target: Any, field: FieldDescriptor, item: Any, path: str, problems: list[FieldError]
) -> None:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        if item is None:
            problems.append(FieldError(path, "must not be null"))
            return
        json_to_message(target.add(), item, path, problems)
        return
    converted = _scalar(field, item)
    if isinstance(converted, _Problem):
        problems.append(FieldError(path, converted.text))
    else:
        target.append(converted)


class _Problem:
    def __init__(self, text: str) -> None:
        self.text = text


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    """``value`` converted for a scalar field, or a _Problem saying why it does not fit."""
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return value if isinstance(value, str) else _Problem("must be text")
    if kind == FieldDescriptor.TYPE_BOOL:
        return value if isinstance(value, bool) else _Problem("must be true or false")
    if kind in _INT_TYPES:
        number = _integer(value)
        low, high = _INT_RANGES[field.cpp_type]
        if number is None or not low <= number <= high:
            return _Problem(f"must be a whole number from {low} to {high}")
        return number
    if kind in _FLOAT_TYPES:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _Problem("must be a number")
        return float(value)
    if kind == FieldDescriptor.TYPE_BYTES:
        if not isinstance(value, str):
            return _Problem("must be base64 text")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return _Problem("must be base64 text")
    if kind == FieldDescriptor.TYPE_ENUM:
        named = field.enum_type.values_by_name.get(value) if isinstance(value, str) else None
        if named is None:
            return _Problem(f"must be one of {', '.join(field.enum_type.values_by_name)}")
        return named.number
    return _Problem("cannot be given here")


def _integer(value: Any) -> int | None:
    """A whole number from JSON: an int, an integral float, or decimal digits in text (the
    way protobuf's JSON writes 64-bit numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,20}", value):
        return int(value)
    return None


def _quantity_from_json(msg: Message, value: Any) -> str | None:
    if isinstance(value, str):
        msg.string = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        msg.string = str(value)
    else:
        return "must be a quantity such as '1', '500m' or '4Gi'"
    return None


def _int_or_string_from_json(msg: Message, value: Any) -> str | None:
    if isinstance(value, str):
        msg.type, msg.strVal = 1, value
        return None
    number = _integer(value)
    if number is None or not -(2**31) <= number < 2**31:
        return "must be a whole number (32 bits) or a name"
    msg.type, msg.intVal = 0, number
    return None


def _time_from_json(msg: Message, value: Any) -> str | None:
    when = _parse_rfc3339(value)
    if when is None:
        return "must be a time in RFC 3339 form, e.g. 2026-01-01T12:00:00Z"
    since = when - EPOCH
    msg.seconds = since.days * 86_400 + since.seconds
    if msg.DESCRIPTOR.full_name == MICRO_TIME:
        msg.nanos = since.microseconds * 1000
    return None


def _parse_rfc3339(value: Any) -> datetime | None:
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return when.astimezone(UTC)


def _duration_from_json(msg: Message, value: Any) -> str | None:
    nanos = parse_go_duration(value) if isinstance(value, str) else None
    if nanos is None:
        return "must be a duration such as '30s', '1m30s' or '1h'"
    msg.duration = nanos
    return None


def _fields_v1_from_json(msg: Message, value: Any) -> str | None:
    try:
        msg.Raw = json.dumps(value, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError, RecursionError):
        return "must be JSON data"
    return None


_FROM_JSON: dict[str, Callable[[Message, Any], str | None]] = {
    QUANTITY: _quantity_from_json,
    INT_OR_STRING: _int_or_string_from_json,
    TIME: _time_from_json,
    MICRO_TIME: _time_from_json,
    DURATION: _duration_from_json,
    FIELDS_V1: _fields_v1_from_json,
}


Found = tuple[tuple[FieldDescriptor, ...], FieldDescriptor]
_FIELD_CACHE: dict[str, dict[str, Found]] = {}


def _fields_by_json_name(descriptor: Descriptor) -> dict[str, Found]:
    """A message's JSON keys: each with the embedded fields to go through (empty unless the
    key belongs to an inlined struct) and its field. The proto name of a field is accepted as
    well as its JSON name (they are the same in Kubernetes' protos)."""
    found = _FIELD_CACHE.get(descriptor.full_name)
    if found is None:
        found = {}
        for f in descriptor.fields:
            if is_inline(f):
                for key, (chain, inner) in _fields_by_json_name(f.message_type).items():
                    found.setdefault(key, ((f, *chain), inner))
            else:
                found[f.name] = ((), f)
                found[f.json_name] = ((), f)
        _FIELD_CACHE[descriptor.full_name] = found
    return found
