"""The JSON of Kubernetes types whose proto form is not their JSON form.

Armada's REST gateway speaks Kubernetes JSON inside its messages: ``"cpu": "500m"``, a port
as ``8080`` or ``"http"``, a time as ``"2026-01-01T12:00:00Z"``. Their generated protos
are messages (``Quantity{string}``, ``IntOrString{type, intVal, strVal}``,
``Time{seconds, nanos}``), so protobuf's own JSON mapping would want
``"cpu": {"string": "500m"}``. :func:`to_proto_json` rewrites a request's JSON into the
proto mapping before it is parsed; :func:`from_proto_json` rewrites a response's JSON back.
Both walk the data guided by the message descriptors (by type, never by path) and skip
every branch whose type cannot hold one of these types.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
TIMES = (
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
)


def _quantity_in(value: Any) -> Any:
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"string": format(value, "g") if isinstance(value, float) else str(value)}
    return value


def _quantity_out(value: Any) -> Any:
    return value.get("string", "") if isinstance(value, dict) else value


def _int_or_string_in(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return {"type": 0, "intVal": value}
    if isinstance(value, str):
        return {"type": 1, "strVal": value}
    return value


def _int_or_string_out(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if value.get("type") == 1 or "strVal" in value:
        return value.get("strVal", "")
    return value.get("intVal", 0)


def _time_in(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value  # the parser names the field
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return {"seconds": int(moment.timestamp()), "nanos": moment.microsecond * 1000}


def _time_out(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    moment = datetime.fromtimestamp(int(value.get("seconds", 0)), tz=UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    nanos = int(value.get("nanos", 0))
    if nanos:
        text += f".{nanos:09d}".rstrip("0")
    return text + "Z"


_IN: dict[str, Callable[[Any], Any]] = {QUANTITY: _quantity_in, INT_OR_STRING: _int_or_string_in}
_OUT: dict[str, Callable[[Any], Any]] = {
    QUANTITY: _quantity_out,
    INT_OR_STRING: _int_or_string_out,
}
for _name in TIMES:
    _IN[_name], _OUT[_name] = _time_in, _time_out


@cache
def _fields(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    """Message-typed fields by JSON name and by proto name (JSON input may use either)."""
    found: dict[str, FieldDescriptor] = {}
    for field in descriptor.fields:
        if field.message_type is not None:
            found[field.name] = found[field.json_name] = field
    return found


@cache
def _holds_special(descriptor: Descriptor) -> bool:
    """Whether a message of this type can contain one of the rewritten types."""
    seen: set[str] = set()
    stack = [descriptor]
    while stack:
        current = stack.pop()
        if current.full_name in _IN:
            return True
        if current.full_name in seen:
            continue
        seen.add(current.full_name)
        stack.extend(f.message_type for f in current.fields if f.message_type is not None)
    return False


def _rewrite(descriptor: Descriptor, data: Any, table: dict[str, Callable[[Any], Any]]) -> Any:
    convert = table.get(descriptor.full_name)
    if convert is not None:
        return convert(data)
    if not isinstance(data, dict) or not _holds_special(descriptor):
        return data
    fields = _fields(descriptor)
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            continue
        kind = field.message_type
        if kind.GetOptions().map_entry:
            value_type = kind.fields_by_name["value"].message_type
            if value_type is not None and isinstance(value, dict):
                for k, item in value.items():
                    value[k] = _rewrite(value_type, item, table)
        elif field.is_repeated:
            if isinstance(value, list):
                value[:] = [_rewrite(kind, item, table) for item in value]
        else:
            data[key] = _rewrite(kind, value, table)
    return data


def to_proto_json(descriptor: Descriptor, data: Any) -> Any:
    """Request JSON in Kubernetes form -> protobuf's JSON mapping (in place)."""
    return _rewrite(descriptor, data, _IN)


def from_proto_json(descriptor: Descriptor, data: Any) -> Any:
    """``MessageToDict`` output -> Kubernetes form (in place)."""
    return _rewrite(descriptor, data, _OUT)
