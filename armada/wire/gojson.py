"""Response messages in the JSON Armada's REST gateway writes.

Armada's gateway (grpc-gateway v1 with its ``JSONBuiltin`` marshaller) runs Go's
``encoding/json`` over the Go structs generated for ``pkg/api``. That is not protobuf's JSON
mapping, and :func:`go_json` writes what those structs give, by walking the message's
descriptor:

- a field's key is its ``json`` tag, which for Armada's messages is the descriptor's
  ``json_name`` (``jobSetId``, ``useClusterIP``, ``MaxResourcesForPeriod``);
- every tag has ``omitempty``: a zero number, ``false``, ``""``, an empty list or map and an
  unset message are left out. A message that is set is written even when empty (``{}``), and
  a non-nullable struct field (:data:`NON_NULLABLE`) is written always;
- 64-bit integers are JSON numbers; a ``double`` with no fraction is written as an integer
  (Go writes ``1``, not ``1.0``); NaN and infinity cannot be written (a ValueError, as Go's
  marshaller fails);
- enums are numbers, except the types with a ``MarshalJSON`` of their own
  (:data:`ENUM_MARSHALLERS`: ``RetryAction`` is ``"Fail"``/``"Retry"``);
- a oneof is the Go interface field, keyed by its Go name and never left out:
  ``"Event": {"queue": {...}}``, or ``"Event": null`` when unset; a message with a
  ``MarshalJSON`` of its own (:data:`MESSAGE_MARSHALLERS`) is written by it
  (``EventMessage`` writes only its oneof's wrapper: ``{"submitted": {...}}``);
- ``google.protobuf.Timestamp`` is gogo's struct, ``{"seconds": ..., "nanos": ...}``; a field
  declared ``stdtime`` (:data:`STDTIME`) is a Go ``time.Time``, RFC 3339 with nanoseconds;
- bytes are standard base64; map keys are text, in Go's order (sorted as text);
- Kubernetes types (a pod spec, a quantity) are in Kubernetes' JSON (``wire.k8s_to_json``).

Armada's protos declare no ``gogoproto`` options today, so :data:`NON_NULLABLE` and
:data:`STDTIME` are empty; they are here so that a field that gains one is one line.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor, OneofDescriptor
from google.protobuf.message import Message

from armada.wire.k8s_to_json import message_to_json

KUBERNETES = "k8s.io."
TIMESTAMP = "google.protobuf.Timestamp"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Fields declared (gogoproto.nullable) = false: Go value structs, written even when unset.
NON_NULLABLE: frozenset[str] = frozenset()
# Timestamp fields declared (gogoproto.stdtime) = true: Go time.Time, written as RFC 3339.
STDTIME: frozenset[str] = frozenset()


def _retry_action(number: int, enum: Any) -> str:
    """``RetryAction.MarshalJSON``: the name without its prefix, capitalised."""
    value = enum.values_by_number.get(number)
    if value is None:
        raise ValueError(f"no RetryAction of value {number}")
    short = value.name.removeprefix("RETRY_ACTION_")
    return short[:1].upper() + short[1:].lower()


# Enum types with a MarshalJSON of their own (pkg/api/deserialize.go).
ENUM_MARSHALLERS: dict[str, Callable[[int, Any], Any]] = {"api.RetryAction": _retry_action}


def _only_the_oneof(name: str) -> Callable[[Message], Any]:
    """A ``MarshalJSON`` that writes the oneof's wrapper alone (``null`` when unset)."""

    def marshal(message: Message) -> Any:
        oneof = message.DESCRIPTOR.oneofs_by_name[name]
        return _oneof_value(message, oneof)

    return marshal


# Messages with a MarshalJSON of their own (pkg/api/event_util.go).
MESSAGE_MARSHALLERS: dict[str, Callable[[Message], Any]] = {
    "api.EventMessage": _only_the_oneof("events"),
}


def go_name(name: str) -> str:
    """The Go name protoc gives a proto name: ``events`` -> ``Events``, ``a_b`` -> ``AB``."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def go_json(message: Message) -> Any:
    """``message`` as Go's ``encoding/json`` writes its struct (see the module docstring)."""
    full_name = message.DESCRIPTOR.full_name
    if full_name.startswith(KUBERNETES):
        return message_to_json(message, "")
    custom = MESSAGE_MARSHALLERS.get(full_name)
    if custom is not None:
        return custom(message)
    return _struct(message)


def _real_oneof(field: FieldDescriptor) -> OneofDescriptor | None:
    oneof = field.containing_oneof
    if oneof is None or (len(oneof.fields) == 1 and oneof.name == f"_{field.name}"):
        return None  # a proto3 ``optional`` field: a plain pointer field in Go
    return oneof


def _struct(message: Message) -> dict[str, Any]:
    descriptor: Descriptor = message.DESCRIPTOR
    out: dict[str, Any] = {}
    done: set[str] = set()
    for field in descriptor.fields:
        oneof = _real_oneof(field)
        if oneof is not None:
            if oneof.name not in done:
                done.add(oneof.name)
                out[go_name(oneof.name)] = _oneof_value(message, oneof)
            continue
        if _omitted(message, field):
            continue
        out[field.json_name] = _field_value(field, getattr(message, field.name))
    return out


def _oneof_value(message: Message, oneof: OneofDescriptor) -> Any:
    """The Go wrapper struct of the set member (``{"queue": {...}}``), or None."""
    member = message.WhichOneof(oneof.name)
    if member is None:
        return None
    field = oneof.containing_type.fields_by_name[member]
    return {field.json_name: _field_value(field, getattr(message, member))}


def _omitted(message: Message, field: FieldDescriptor) -> bool:
    """``omitempty``: zero scalars, empty lists and maps, unset (nullable) messages."""
    if field.is_repeated:
        return len(getattr(message, field.name)) == 0
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return field.full_name not in NON_NULLABLE and not message.HasField(field.name)
    value = getattr(message, field.name)
    return value == 0 or value == "" or value == b"" or value is False


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _field_value(field: FieldDescriptor, value: Any) -> Any:
    if _is_map(field):
        value_field = field.message_type.fields_by_name["value"]
        keys = sorted(value, key=str)  # Go sorts a map's keys by their text
        return {str(k): _value(value_field, value[k]) for k in keys}
    if field.is_repeated:
        return [_value(field, item) for item in value]
    return _value(field, value)


def _value(field: FieldDescriptor, value: Any) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        if field.full_name in STDTIME and field.message_type.full_name == TIMESTAMP:
            return rfc3339_nano(value.seconds, value.nanos)
        return go_json(value)
    if kind == FieldDescriptor.TYPE_ENUM:
        custom = ENUM_MARSHALLERS.get(field.enum_type.full_name)
        return custom(value, field.enum_type) if custom is not None else value
    if kind == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return go_float(value, 32 if kind == FieldDescriptor.TYPE_FLOAT else 64)
    return value


def go_float(value: float, bits: int = 64) -> float | int:
    """A float as Go writes it: no NaN or infinity; no ``.0`` on whole numbers below 1e21;
    a float32 in its shortest 32-bit spelling."""
    if not math.isfinite(value):
        raise ValueError(f"json: unsupported value: {value}")
    if bits == 32:
        value = _shortest_float32(value)
    if value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _shortest_float32(value: float) -> float:
    import struct

    exact = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        candidate = float(f"{exact:.{digits}g}")
        if struct.unpack("f", struct.pack("f", candidate))[0] == exact:
            return candidate
    return exact


def rfc3339_nano(seconds: int, nanos: int) -> str:
    """Go's ``time.Time`` JSON in UTC: ``2024-01-02T03:04:05.5Z`` (no trailing zeros)."""
    when = EPOCH + timedelta(seconds=seconds)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text + "Z"


_SURROGATE = re.compile("[\ud800-\udfff]")


def go_dumps(data: Any) -> bytes:
    """JSON text as Go's ``json.Marshal`` writes it: compact, UTF-8, with ``<``, ``>``, ``&``,
    U+2028 and U+2029 escaped, and what is not a character replaced by U+FFFD."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for char, escaped in _GO_ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    if not text.isascii():
        text = _SURROGATE.sub("\ufffd", text)
    return text.encode("utf-8")


_GO_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)
