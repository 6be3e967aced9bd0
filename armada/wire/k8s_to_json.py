"""Kubernetes messages -> Kubernetes' JSON: the writing direction of ``wire.podspec`` (whose
docstring has the mapping). Only set fields are written."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from armada.core.errors import ValidationFailed
from armada.wire.go_duration import format_go_duration
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


def message_to_json(msg: Message, where: str) -> Any:
    """Any Kubernetes message in its Kubernetes JSON form (see ``wire.podspec``). Raises
    ValidationFailed naming the field (under ``where``) for a value JSON cannot spell."""
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
        path = field_path(where, field.json_name)
        if is_inline(field):
            out.update(message_to_json(value, where))
        elif is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            out[field.json_name] = {
                k: _value_to_json(value_field, v, field_path(path, k)) for k, v in value.items()
            }
        elif is_repeated(field):
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
    when = EPOCH + timedelta(seconds=msg.seconds)
    return when.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def _micro_time_to_json(msg: Message) -> str:
    if not 0 <= msg.nanos < 1_000_000_000:
        raise ValueError("nanos out of range")
    when = EPOCH + timedelta(seconds=msg.seconds, microseconds=msg.nanos // 1000)
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
