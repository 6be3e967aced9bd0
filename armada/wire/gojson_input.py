"""Request bodies read the way Armada's REST gateway reads them: Go's ``encoding/json`` into
the Go structs of ``pkg/api`` (grpc-gateway v1, ``JSONBuiltin``), by walking the request
message's descriptor.

- A key names a field by its ``json`` tag (the descriptor's ``json_name``), exactly or
  ignoring case (``jobsetid`` sets ``jobSetId``), as Go matches them. The proto field name
  (``job_set_id``) is taken too, so that callers of protobuf's JSON mapping keep working.
  A key that names no field is ignored, as Armada's gateway ignores it.
- ``null`` leaves a field unset.
- Numbers: integers must be whole JSON numbers within the field's type (no strings: Go's
  structs have no ``,string`` tags); ``double`` takes any finite number.
- Enums are numbers; the enum types with an ``UnmarshalJSON`` of their own
  (:data:`ENUM_READERS`: ``JobState``, ``IngressType``, ``ServiceType``, ``RetryAction``)
  take their names as well, as Armada's readers do (``RetryAction`` also takes ``"Fail"``,
  ``"retry"``).
- Bytes are standard base64; a map with integer keys takes them as text (``{"80": ...}``).
- Kubernetes types (a pod spec) are read as Kubernetes' JSON (``wire.k8s_from_json``);
  a key Kubernetes does not know is ignored there too.
- A value of the wrong type, out of range or not a known enum value is a ValidationFailed
  naming the field as the caller spelled it (``jobRequestItems[0].priority``).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from armada.core.errors import FieldError, ValidationFailed
from armada.wire.gojson import KUBERNETES, STDTIME, TIMESTAMP, go_name
from armada.wire.k8s_from_json import json_to_message
from armada.wire.k8s_types import field_path

MAX_PROBLEMS = 20
_KUBERNETES_UNKNOWN = "unknown field for Kubernetes' "

_INT_RANGES = {
    FieldDescriptor.CPPTYPE_INT32: (-(2**31), 2**31 - 1, "int32"),
    FieldDescriptor.CPPTYPE_INT64: (-(2**63), 2**63 - 1, "int64"),
    FieldDescriptor.CPPTYPE_UINT32: (0, 2**32 - 1, "uint32"),
    FieldDescriptor.CPPTYPE_UINT64: (0, 2**64 - 1, "uint64"),
}
_FLOAT32_MAX = 3.4028234663852886e38


class _Bad(Exception):
    """One value that does not fit its field (the walk catches it and names the field)."""


def _known_name(enum: EnumDescriptor, text: str) -> int | None:
    value = enum.values_by_name.get(text)
    return value.number if value is not None else None


def _retry_action_name(enum: EnumDescriptor, text: str) -> int | None:
    """``RetryAction.UnmarshalJSON``: the proto name, or the short name in any case."""
    found = _known_name(enum, text)
    return found if found is not None else _known_name(enum, "RETRY_ACTION_" + text.upper())


# Enum types with an UnmarshalJSON of their own (pkg/api/deserialize.go): each takes a known
# number or a name, as the function given reads names.
ENUM_READERS: dict[str, Callable[[EnumDescriptor, str], int | None]] = {
    "api.JobState": _known_name,
    "api.IngressType": _known_name,
    "api.ServiceType": _known_name,
    "api.RetryAction": _retry_action_name,
}


def read_message(message: Message, data: Any, where: str = "") -> None:
    """Fill ``message`` from ``data`` (parsed JSON); ValidationFailed naming every field that
    does not fit (at most :data:`MAX_PROBLEMS`)."""
    problems: list[FieldError] = []
    _fill(message, data, where, problems)
    if problems:
        raise ValidationFailed(problems[:MAX_PROBLEMS])


def _lookup(descriptor: Descriptor) -> tuple[dict[str, Any], dict[str, Any]]:
    """Exact keys, and lower-cased keys, to the field (or oneof) they name."""
    cached = _LOOKUPS.get(descriptor.full_name)
    if cached is not None:
        return cached
    exact: dict[str, Any] = {}
    folded: dict[str, Any] = {}
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if oneof is not None and not (len(oneof.fields) == 1 and oneof.name == f"_{field.name}"):
            target: Any = oneof  # only the Go interface field is a key
            names = [go_name(oneof.name)]
        else:
            target, names = field, [field.json_name, field.name]
        for name in names:
            exact.setdefault(name, target)
            folded.setdefault(name.lower(), target)
    _LOOKUPS[descriptor.full_name] = (exact, folded)
    return exact, folded


_LOOKUPS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def _fill(message: Message, data: Any, where: str, problems: list[FieldError]) -> None:
    if not isinstance(data, dict):
        problems.append(FieldError(where, f"must be a JSON object, not {_kind(data)}"))
        return
    exact, folded = _lookup(message.DESCRIPTOR)
    for key, value in data.items():
        target = exact.get(key) or folded.get(key.lower())
        if target is None:
            continue  # unknown keys are ignored, as Go ignores them
        path = field_path(where, key) if where else key
        if not isinstance(target, FieldDescriptor):
            if value is not None:
                problems.append(FieldError(path, "cannot be set in a request"))
            continue
        if value is None:
            if target.is_repeated or target.type == FieldDescriptor.TYPE_MESSAGE:
                message.ClearField(target.name)
            continue
        try:
            _set(message, target, value, path, problems)
        except _Bad as bad:
            problems.append(FieldError(path, str(bad)))


def _set(message: Message, field: FieldDescriptor, value: Any, path: str, problems: list) -> None:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        _set_map(getattr(message, field.name), field, value, path, problems)
    elif field.is_repeated:
        if not isinstance(value, list):
            raise _Bad(f"must be a list, not {_kind(value)}")
        target = getattr(message, field.name)
        del target[:]
        for i, item in enumerate(value):
            where = f"{path}[{i}]"
            try:
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    if item is None:
                        raise _Bad("must not be null")
                    _read_into(target.add(), field, item, where, problems)
                else:
                    target.append(_scalar(field, item))
            except _Bad as bad:
                problems.append(FieldError(where, str(bad)))
    elif field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = getattr(message, field.name)
        sub.SetInParent()
        _read_into(sub, field, value, path, problems)
    else:
        setattr(message, field.name, _scalar(field, value))


def _set_map(target: Any, field: FieldDescriptor, value: Any, path: str, problems: list) -> None:
    if not isinstance(value, dict):
        raise _Bad(f"must be a JSON object, not {_kind(value)}")
    key_field = field.message_type.fields_by_name["key"]
    value_field = field.message_type.fields_by_name["value"]
    for text, item in value.items():
        where = field_path(path, text)
        try:
            key = _map_key(key_field, text)
            if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                entry = target[key]
                if item is not None:
                    _read_into(entry, value_field, item, where, problems)
            else:
                target[key] = _scalar(value_field, item) if item is not None else _zero(value_field)
        except _Bad as bad:
            problems.append(FieldError(where, str(bad)))


def _map_key(field: FieldDescriptor, text: str) -> Any:
    if field.type == FieldDescriptor.TYPE_STRING:
        return text
    if field.cpp_type in _INT_RANGES:
        try:
            number = int(text, 10) if text.strip() == text else None
        except ValueError:
            number = None
        if number is None:
            raise _Bad(f"the key {text!r} is not a whole number")
        return _in_range(field, number)
    raise _Bad("a map with keys of this type cannot be read from JSON")


def _read_into(sub: Message, field: FieldDescriptor, value: Any, path: str, problems: list) -> None:
    name = sub.DESCRIPTOR.full_name
    if name.startswith(KUBERNETES):
        found: list[FieldError] = []
        json_to_message(sub, value, path, found)
        problems += [p for p in found if not p.message.startswith(_KUBERNETES_UNKNOWN)]
    elif name == TIMESTAMP and field.full_name in STDTIME:
        _read_rfc3339(sub, value)
    else:
        _fill(sub, value, path, problems)


def _read_rfc3339(sub: Message, value: Any) -> None:
    if not isinstance(value, str):
        raise _Bad(f"must be a time in RFC 3339 text, not {_kind(value)}")
    try:
        sub.FromJsonString(value)
    except ValueError as exc:
        raise _Bad(f"must be a time in RFC 3339 text: {exc}") from None


def _zero(field: FieldDescriptor) -> Any:
    """Go's zero value of one element of ``field`` (what ``null`` reads as)."""
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return ""
    if kind == FieldDescriptor.TYPE_BYTES:
        return b""
    if kind == FieldDescriptor.TYPE_BOOL:
        return False
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return 0.0
    return 0


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    kind = field.type
    if value is None:
        return _zero(field)
    if kind == FieldDescriptor.TYPE_STRING:
        if not isinstance(value, str):
            raise _Bad(f"must be a string, not {_kind(value)}")
        return value
    if kind == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise _Bad(f"must be true or false, not {_kind(value)}")
        return value
    if kind == FieldDescriptor.TYPE_ENUM:
        return _enum(field.enum_type, value)
    if kind == FieldDescriptor.TYPE_BYTES:
        return _bytes(value)
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return _float(field, value)
    return _in_range(field, _whole(value))


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"must be a whole number, not {_kind(value)}")
    if isinstance(value, float):
        raise _Bad(f"must be a whole number (written without a fraction or exponent): {value}")
    return value


def _in_range(field: FieldDescriptor, number: int) -> int:
    low, high, name = _INT_RANGES[field.cpp_type]
    if not low <= number <= high:
        raise _Bad(f"{number} is out of range for {name} ({low} to {high})")
    return number


def _float(field: FieldDescriptor, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"must be a number, not {_kind(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    single = field.type == FieldDescriptor.TYPE_FLOAT
    if not math.isfinite(number) or (single and abs(number) > _FLOAT32_MAX):
        raise _Bad(f"{value} is out of range for a {'float' if single else 'double'}")
    return number


def _enum(enum: EnumDescriptor, value: Any) -> int:
    reader = ENUM_READERS.get(enum.full_name)
    if isinstance(value, str) and reader is not None:
        found = reader(enum, value)
        if found is None:
            names = ", ".join(v.name for v in enum.values)
            raise _Bad(f"{value!r} is not a {enum.name} (one of {names}, or its number)")
        return found
    if isinstance(value, bool) or not isinstance(value, int):
        what = "a number or a name" if reader is not None else "a number"
        raise _Bad(f"must be {what} of {enum.name}, not {_kind(value)}")
    if reader is not None and value not in enum.values_by_number:
        raise _Bad(f"{value} is not a number of {enum.name}")
    if not -(2**31) <= value <= 2**31 - 1:
        raise _Bad(f"{value} is out of range for {enum.name}")
    return value


def _bytes(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _Bad(f"must be base64 text, not {_kind(value)}")
    try:
        return base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        raise _Bad("must be standard base64 text") from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a JSON object"
