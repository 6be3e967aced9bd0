"""From an HTTP request to a request message and from a response message to JSON, the way
Armada's REST gateway (grpc-gateway v1 with Go's ``encoding/json``) maps them.

- The body (for rules with ``body: "*"``) is read by ``wire.gojson_input``: Go's rules over
  Armada's Go structs (keys by json tag in any case, unknown keys ignored, numbers as
  numbers, enums by number or, where Armada reads them, by name), with the Kubernetes types
  inside in Kubernetes' own JSON. An empty body (or ``null``) is an empty request.
- Query parameters (rules without a body) set fields by proto or json name, dotted for
  nested fields (``?num=5``); a repeated field takes the parameter repeated; a parameter
  that names no field is ignored, as grpc-gateway ignores it. Values are text: numbers in
  decimal, booleans as Go's ``strconv.ParseBool`` reads them, enums by name or number.
- Path parameters set their fields last, over anything the body or query said.
- Responses: ``wire.gojson.go_json``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from armada.core.errors import ValidationFailed
from armada.web.storable import check_storable
from armada.wire.gojson import go_json
from armada.wire.gojson_input import read_message
from armada.wire.http_rules import HttpRule

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")
_SIGNED = re.compile(r"[+-]?[0-9]+")
_UNSIGNED = re.compile(r"[0-9]+")
_INT_RANGES = {
    FieldDescriptor.CPPTYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.CPPTYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.CPPTYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.CPPTYPE_UINT64: (0, 2**64 - 1),
}


def parse_json_body(raw: bytes) -> dict[str, Any]:
    """A body's JSON object ({} for an empty body or ``null``); ValidationFailed for
    anything else."""
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValidationFailed.one("", "the body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ValidationFailed.one(
            "", f"the body is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise ValidationFailed.one("", "the body is nested too deeply") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValidationFailed.one("", "the body must be a JSON object")
    check_storable(data)
    return data


def _field(descriptor: Descriptor, name: str) -> FieldDescriptor | None:
    return descriptor.fields_by_name.get(name) or next(
        (f for f in descriptor.fields if f.json_name == name), None
    )


def _parameter(field: FieldDescriptor, name: str, text: str) -> Any:
    """A parameter's text as the value of ``field`` (grpc-gateway's conversions)."""
    kind, cpp = field.type, field.cpp_type
    if kind == FieldDescriptor.TYPE_STRING:
        return text
    if kind == FieldDescriptor.TYPE_BOOL:
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise ValidationFailed.one(name, f"must be true or false, not {text[:40]!r}")
    if kind == FieldDescriptor.TYPE_ENUM:
        named = field.enum_type.values_by_name.get(text)
        if named is not None:
            return named.number
        if _SIGNED.fullmatch(text) and int(text) in field.enum_type.values_by_number:
            return int(text)
        names = ", ".join(v.name for v in field.enum_type.values)
        raise ValidationFailed.one(name, f"{text[:40]!r} is not one of {names} or its number")
    if kind == FieldDescriptor.TYPE_BYTES:
        for decode in (base64.standard_b64decode, base64.urlsafe_b64decode):
            try:
                return decode(text.encode("ascii"))
            except (binascii.Error, ValueError, UnicodeEncodeError):
                continue
        raise ValidationFailed.one(name, "must be base64 text")
    if cpp in (FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT):
        try:
            number = float(text)
        except ValueError:
            raise ValidationFailed.one(name, f"must be a number, not {text[:40]!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ValidationFailed.one(name, "must be a finite number")
        return number
    low, high = _INT_RANGES[cpp]
    pattern = _SIGNED if low < 0 else _UNSIGNED
    if not pattern.fullmatch(text) or not low <= int(text) <= high:
        raise ValidationFailed.one(
            name, f"must be a whole number from {low} to {high}, not {text[:40]!r}"
        )
    return int(text)


def set_parameters(message: Message, pairs: Iterable[tuple[str, str]]) -> None:
    """Set fields of ``message`` from ``[("num", "5"), ("a.b", "x")]``; names that name no
    field are skipped, a singular field takes its first value, a repeated one all of them."""
    seen: set[str] = set()
    for name, value in pairs:
        target, parts = message, name.split(".")
        for i, part in enumerate(parts):
            field = _field(target.DESCRIPTOR, part)
            if field is None:
                break  # a name that is no field: ignored
            if i < len(parts) - 1:
                if field.message_type is None or field.is_repeated:
                    raise ValidationFailed.one(name, f"{part} has no fields to set")
                target = getattr(target, field.name)
                continue
            if field.message_type is not None:
                raise ValidationFailed.one(name, "names a message, not a field of one")
            converted = _parameter(field, name, value)
            if field.is_repeated:
                if name not in seen:
                    del getattr(target, field.name)[:]
                getattr(target, field.name).append(converted)
            elif name not in seen:
                setattr(target, field.name, converted)
            seen.add(name)


def request_message(
    request_class: type[Message],
    rule: HttpRule,
    *,
    body: bytes,
    query: Iterable[tuple[str, str]],
    path: Mapping[str, str],
) -> Message:
    """The request message an HTTP request stands for under ``rule``."""
    message = request_class()
    if rule.body:
        data = parse_json_body(body)
        target = message if rule.body == "*" else getattr(message, rule.body)
        read_message(target, data)
    if rule.body != "*":
        set_parameters(message, [(k, v) for k, v in query if k not in path])
    for name, value in path.items():
        set_parameters(message, [(name, value)])
    return message


def message_json(message: Message) -> Any:
    """A response message as Armada's gateway writes it (``wire.gojson``)."""
    return go_json(message)
