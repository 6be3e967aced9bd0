"""From an HTTP request to a request message and from a response message to JSON, the way
grpc-gateway maps them for Armada's REST gateway.

- The body (for rules with ``body: "*"``) is JSON in protobuf's JSON mapping: camelCase or
  proto field names, int64 as numbers or strings, enums by name (or number), with the
  Kubernetes types inside (a pod spec) in Kubernetes' own JSON (``wire.k8sjson``). An unknown field, a wrong type or a value out
  of range is a ValidationFailed naming the field (``jobRequestItems[0].priority``).
- Query parameters (rules without a body) set fields by name, dotted for nested fields
  (``?num=5``); a repeated field takes the parameter repeated. An unknown parameter is an
  error too, so that a typo is not silently ignored.
- Path parameters set their fields last, over anything the body said.
- Responses: ``MessageToDict`` (camelCase, int64 as strings, enums as names, unset fields
  left out), with the Kubernetes types inside in Kubernetes' JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from armada.core.errors import FieldError, ValidationFailed
from armada.web.storable import check_storable
from armada.wire.http_rules import HttpRule
from armada.wire.k8sjson import fill_kubernetes, kubernetes_json, split_kubernetes

_FAILED = re.compile(r"Failed to parse (\S+) field: ")
_UNKNOWN = re.compile(r'Message type "[^"]*" has no field named "([^"]*)"')
_TRUE, _FALSE = ("true", "1"), ("false", "0")


def parse_json_body(raw: bytes) -> dict[str, Any]:
    """A body's JSON object ({} for an empty body); ValidationFailed for anything else."""
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
    if not isinstance(data, dict):
        raise ValidationFailed.one("", "the body must be a JSON object")
    check_storable(data)
    return data


def parse_problem(exc: json_format.ParseError) -> FieldError:
    """protobuf's parse error (``Failed to parse podSpec field: ... at
    "JobSubmitRequest.jobRequestItems[0].podSpec"``) as the field it is about and what is
    wrong with it."""
    text = str(exc).split("\n", 1)[0]
    names: list[str] = []
    while match := _FAILED.match(text):
        names.append(match.group(1))
        text = text[match.end() :]
    where = ".".join(names)
    head, at, location = text.rpartition(" at ")
    if at:
        text = head
        location = location.strip().rstrip(".").strip('"')
        cut = min((i for i in (location.find("."), location.find("[")) if i >= 0), default=-1)
        if cut >= 0:  # drop the root message's name
            where = location[cut:].lstrip(".")
    text = text.rstrip(".")
    if unknown := _UNKNOWN.match(text):
        return FieldError(
            f"{where}.{unknown.group(1)}" if where else unknown.group(1), "unknown field"
        )
    if text.startswith("expected string or bytes-like object"):
        text = "must be a string"
    elif text.startswith("repeated field") and "must be in []" in text:
        text = "must be a list"
    elif text.startswith("Map field") and "must be in a dict" in text:
        text = "must be a mapping"
    return FieldError(where, text)


def _parse_into(data: dict[str, Any], message: Message) -> None:
    parts = split_kubernetes(message.DESCRIPTOR, data)
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as exc:
        raise ValidationFailed([parse_problem(exc)]) from None
    except RecursionError:
        raise ValidationFailed.one("", "the request is nested too deeply") from None
    fill_kubernetes(message, parts)


def _field(descriptor: Descriptor, name: str) -> FieldDescriptor | None:
    return descriptor.fields_by_name.get(name) or next(
        (f for f in descriptor.fields if f.json_name == name), None
    )


def _scalar(field: FieldDescriptor, name: str, value: str) -> Any:
    """A text parameter as the JSON value protobuf's parser takes for ``field``."""
    if field.type == FieldDescriptor.TYPE_BOOL:
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise ValidationFailed.one(name, f"must be true or false, not {value[:40]!r}")
    return value  # numbers, enums and strings: the parser converts text itself


def fields_data(descriptor: Descriptor, pairs: Iterable[tuple[str, str]], what: str) -> dict:
    """``[("num", "5"), ("a.b", "x")]`` -> ``{"num": "5", "a": {"b": "x"}}`` by the fields of
    ``descriptor``; an unknown name is a ValidationFailed saying it is an unknown ``what``."""
    data: dict[str, Any] = {}
    for name, value in pairs:
        target, current = data, descriptor
        parts = name.split(".")
        for i, part in enumerate(parts):
            field = _field(current, part) if current is not None else None
            if field is None:
                raise ValidationFailed.one(name, f"unknown {what}")
            last = i == len(parts) - 1
            if last:
                if field.message_type is not None and not field.message_type.full_name.startswith(
                    "google.protobuf."
                ):
                    raise ValidationFailed.one(name, "names a message, not a field of one")
                converted = _scalar(field, name, value)
                if field.is_repeated:
                    target.setdefault(field.json_name, []).append(converted)
                else:
                    target[field.json_name] = converted
            else:
                if field.message_type is None or field.is_repeated:
                    raise ValidationFailed.one(name, f"unknown {what}")
                target = target.setdefault(field.json_name, {})
                current = field.message_type
    return data


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
        _parse_into(data, target)
        query = [(k, v) for k, v in query if rule.body != "*"]
    query_pairs = list(query)
    if query_pairs:
        _parse_into(fields_data(message.DESCRIPTOR, query_pairs, "query parameter"), message)
    if path:
        _parse_into(fields_data(message.DESCRIPTOR, path.items(), "path parameter"), message)
    return message


def message_json(message: Message) -> dict[str, Any]:
    """A response message as grpc-gateway writes it (see the module docstring)."""
    return kubernetes_json(message, json_format.MessageToDict(message))
