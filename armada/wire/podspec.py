"""Kubernetes ``PodSpec`` messages <-> the pod spec dicts our job files hold.

Our job files keep a pod spec in Kubernetes' JSON shape (``core.submission`` validates it), and
Armada's wire messages carry it as the protobuf ``k8s.io.api.core.v1.PodSpec`` that the
``armada_client`` package ships. The Kubernetes protos are proto2 with the JSON names as field
names, so the JSON form is the message's set fields under their names, except for a few types
whose JSON is not their message shape. Both directions walk the message descriptors and treat
those types by type (never by path), wherever they appear:

- ``resource.Quantity`` ``{string: "1Gi"}`` <-> ``"1Gi"`` (a number in JSON is accepted too);
- ``intstr.IntOrString`` ``{type, intVal, strVal}`` <-> ``8080`` or ``"http"``;
- ``meta.v1.Time`` / ``MicroTime`` ``{seconds, nanos}`` <-> RFC 3339 text in UTC;
- ``meta.v1.Duration`` ``{duration: ns}`` <-> Go's duration text (``"1h2m3.5s"``);
- ``meta.v1.FieldsV1`` ``{Raw: bytes}`` <-> the JSON object the bytes hold;
- an embedded Go struct (``Volume.volumeSource``, ``Probe.handler``,
  ``EphemeralContainer.ephemeralContainerCommon``, every ``localObjectReference``) has a field
  of its own in the proto but is inlined in Kubernetes' JSON: its fields sit beside the outer
  message's (``{"name": "data", "emptyDir": {}}``, ``{"httpGet": {...}, "periodSeconds": 5}``).
  The proto does not mark them; they are known by field name and type (``INLINE``);
- int64 fields are JSON numbers (protobuf's own JSON would make them strings), bytes fields
  base64 text, map fields objects.

Only set fields are written, so an unset optional field stays absent and an explicit ``false``
or ``0`` survives a round trip.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from armada.core.errors import FieldError, ValidationFailed

QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.Time"
MICRO_TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime"
DURATION = "k8s.io.apimachinery.pkg.apis.meta.v1.Duration"
FIELDS_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1"

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

# Fields that hold an embedded Go struct (``json:",inline"`` in Kubernetes' Go types), as
# (field name, message type): their fields are spelled in the outer object in JSON.
INLINE = {
    ("volumeSource", "k8s.io.api.core.v1.VolumeSource"),
    ("handler", "k8s.io.api.core.v1.ProbeHandler"),
    ("ephemeralContainerCommon", "k8s.io.api.core.v1.EphemeralContainerCommon"),
    ("localObjectReference", "k8s.io.api.core.v1.LocalObjectReference"),
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# --- message -> JSON ------------------------------------------------------------------------


def pod_spec_from_message(msg: core_v1.PodSpec, *, where: str = "podSpec") -> dict[str, Any]:
    """The pod spec dict (Kubernetes' JSON shape) of a ``PodSpec`` message. Raises
    ValidationFailed naming the field (under ``where``) for a value JSON cannot spell, such as
    a time outside the years 1 to 9999."""
    return message_to_json(msg, where)


def message_to_json(msg: Message, where: str) -> Any:
    """Any Kubernetes message in its Kubernetes JSON form (see the module docstring)."""
    special = _TO_JSON.get(msg.DESCRIPTOR.full_name)
    if special is not None:
        try:
            return special(msg)
        except (OverflowError, ValueError, OSError) as exc:
            raise ValidationFailed.one(
                where, f"cannot be written in Kubernetes' JSON: {exc}"
            ) from None
    out: dict[str, Any] = {}
    for field, value in msg.ListFields():
        path = _path(where, field.json_name)
        if _is_inline(field):
            out.update(message_to_json(value, where))
        elif _is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            out[field.json_name] = {
                k: _value_to_json(value_field, v, _path(path, k)) for k, v in value.items()
            }
        elif _is_repeated(field):
            out[field.json_name] = [
                _value_to_json(field, v, f"{path}[{i}]") for i, v in enumerate(value)
            ]
        else:
            out[field.json_name] = _value_to_json(field, value, path)
    return out


def _value_to_json(field: FieldDescriptor, value: Any, where: str) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return message_to_json(value, where)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    if field.type == FieldDescriptor.TYPE_ENUM:
        named = field.enum_type.values_by_number.get(value)
        return named.name if named is not None else value
    return value


def _quantity_to_json(msg: Message) -> str:
    return msg.string


def _int_or_string_to_json(msg: Message) -> int | str:
    # type 0 is Int, 1 is String (Kubernetes' intstr.Type)
    return msg.strVal if msg.type == 1 else msg.intVal


def _time_to_json(msg: Message) -> str:
    when = _EPOCH + timedelta(seconds=msg.seconds)
    return when.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def _micro_time_to_json(msg: Message) -> str:
    if not 0 <= msg.nanos < 1_000_000_000:
        raise ValueError("nanos out of range")
    when = _EPOCH + timedelta(seconds=msg.seconds, microseconds=msg.nanos // 1000)
    return when.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _duration_to_json(msg: Message) -> str:
    return format_go_duration(msg.duration)


def _fields_v1_to_json(msg: Message) -> Any:
    """The JSON the raw bytes hold; bytes that are not JSON (or JSON nested too deep to read)
    are a problem of the field."""
    try:
        return json.loads(msg.Raw) if msg.Raw else {}
    except RecursionError:
        raise ValueError("nested too deep") from None


_TO_JSON: dict[str, Callable[[Message], Any]] = {
    QUANTITY: _quantity_to_json,
    INT_OR_STRING: _int_or_string_to_json,
    TIME: _time_to_json,
    MICRO_TIME: _micro_time_to_json,
    DURATION: _duration_to_json,
    FIELDS_V1: _fields_v1_to_json,
}


# --- JSON -> message ------------------------------------------------------------------------


def pod_spec_message(
    data: Mapping[str, Any], *, strict: bool = False, dropped: list[str] | None = None
) -> core_v1.PodSpec:
    """The ``PodSpec`` message of a pod spec dict (Kubernetes' JSON shape).

    A stored pod spec may hold what the message cannot (a key Kubernetes does not know, a
    value of another type): by default such a part is left out, and its path is added to
    ``dropped`` when a list is given; with ``strict`` it raises ValidationFailed naming every
    such field (``podSpec.containers[0].ports[1].containerPort``) instead.
    """
    problems: list[FieldError] = []
    msg = core_v1.PodSpec()
    if not isinstance(data, Mapping):
        problems.append(FieldError("podSpec", "must be a mapping"))
    else:
        _fill(msg, data, "podSpec", problems)
    if problems and strict:
        raise ValidationFailed(problems)
    if dropped is not None:
        dropped.extend(p.field for p in problems)
    return msg


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
        path = _path(where, key)
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
    if _is_map(field):
        _fill_map(msg, field, value, path, problems)
    elif _is_repeated(field):
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
        item_path = _path(path, k)
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
    since = when - _EPOCH
    msg.seconds = since.days * 86_400 + since.seconds
    if msg.DESCRIPTOR.full_name == MICRO_TIME:
        msg.nanos = since.microseconds * 1000
    return None


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


# --- helpers --------------------------------------------------------------------------------


def _is_repeated(field: FieldDescriptor) -> bool:
    return field.is_repeated


def _is_map(field: FieldDescriptor) -> bool:
    return (
        _is_repeated(field)
        and field.type == FieldDescriptor.TYPE_MESSAGE
        and field.message_type.GetOptions().map_entry
    )


def _is_inline(field: FieldDescriptor) -> bool:
    return (
        field.type == FieldDescriptor.TYPE_MESSAGE
        and (field.name, field.message_type.full_name) in INLINE
    )


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
            if _is_inline(f):
                for key, (chain, inner) in _fields_by_json_name(f.message_type).items():
                    found.setdefault(key, ((f, *chain), inner))
            else:
                found[f.name] = ((), f)
                found[f.json_name] = ((), f)
        _FIELD_CACHE[descriptor.full_name] = found
    return found


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _path(where: str, key: Any) -> str:
    """``where.key``, or ``where[key]`` for keys such as ``nvidia.com/gpu`` (as the core names
    annotations)."""
    text = str(key)
    return f"{where}.{text}" if _PLAIN_KEY.fullmatch(text) else f"{where}[{text}]"


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


_GO_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_GO_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> int | None:
    """Nanoseconds in a Go duration (``"1h2m3.5s"``, ``"-30s"``, ``"0"``), or None."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body == "0":
        return 0
    if not body:
        return None
    total, pos = 0, 0
    while pos < len(body):
        m = _GO_PART.match(body, pos)
        if m is None:
            return None
        number, unit = m.group(1), m.group(2)
        whole, _, frac = number.partition(".")
        scale = _GO_UNITS[unit]
        total += int(whole or "0") * scale
        if frac:
            total += int(frac) * scale // 10 ** len(frac)
        pos = m.end()
    total *= sign
    return total if -(2**63) <= total < 2**63 else None


def format_go_duration(nanos: int) -> str:
    """Go's ``Duration.String()``: ``"1h2m3.5s"``, ``"1.5ms"``, ``"0s"``."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if n < 1_000_000_000:
        for unit, scale in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if n >= scale:
                return sign + _decimal(n, scale) + unit
    hours, rest = divmod(n, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _decimal(n: int, scale: int) -> str:
    whole, frac = divmod(n, scale)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(scale)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
