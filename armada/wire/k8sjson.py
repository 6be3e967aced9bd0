"""Kubernetes values inside Armada's JSON messages.

Armada's REST gateway speaks protobuf's JSON mapping for its own messages (``api.*``) but
Kubernetes' JSON for the Kubernetes types they hold (a pod spec, a job's ingress):
``"cpu": "500m"``, a port as ``8080`` or ``"http"``, ``livenessProbe.httpGet`` with the
probe's handler inlined. Those types are proto2 messages whose shape differs from their
JSON, and ``wire.podspec`` maps any of them both ways (``k8s_from_json.json_to_message``,
``k8s_to_json.message_to_json``). This module finds them in an ``api.*`` message or its JSON,
by type:

- :func:`split_kubernetes` takes each Kubernetes-typed value out of a request's JSON (so
  that protobuf's parser sees only ``api.*`` fields) and :func:`fill_kubernetes` puts it
  into the parsed message through ``json_to_message``, each problem named by its path
  (``jobRequestItems[0].podSpec.containers[0].resources``);
- :func:`kubernetes_json` rewrites ``MessageToDict``'s output of a response so that its
  Kubernetes parts are in Kubernetes' JSON.
Branches whose type cannot hold a Kubernetes type are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from armada.core.errors import FieldError, ValidationFailed
from armada.wire.k8s_from_json import json_to_message
from armada.wire.k8s_to_json import message_to_json

KUBERNETES = "k8s.io."
Step = tuple[str, Any]  # a field name, and the index or map key within it (None: singular)


def is_kubernetes(descriptor: Descriptor) -> bool:
    return descriptor.full_name.startswith(KUBERNETES)


@cache
def holds_kubernetes(descriptor: Descriptor) -> bool:
    """Whether a message of this type can contain a Kubernetes-typed field."""
    seen: set[str] = set()
    stack = [descriptor]
    while stack:
        current = stack.pop()
        if current.full_name in seen:
            continue
        seen.add(current.full_name)
        for field in current.fields:
            if field.message_type is None:
                continue
            if is_kubernetes(field.message_type):
                return True
            stack.append(field.message_type)
    return False


@cache
def _message_fields(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    found: dict[str, FieldDescriptor] = {}
    for field in descriptor.fields:
        if field.message_type is not None:
            found[field.name] = found[field.json_name] = field
    return found


def _map_value_type(field: FieldDescriptor) -> Descriptor | None:
    if not field.message_type.GetOptions().map_entry:
        return None
    return field.message_type.fields_by_name["value"].message_type


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


@dataclass(frozen=True)
class KubernetesPart:
    """A Kubernetes-typed value taken out of a request's JSON, and where it goes."""

    steps: tuple[Step, ...]  # from the request message to the message holding the field
    field: FieldDescriptor
    value: Any
    where: str


def split_kubernetes(descriptor: Descriptor, data: Any) -> list[KubernetesPart]:
    """Take every Kubernetes-typed value out of ``data`` (in place), in document order."""
    parts: list[KubernetesPart] = []
    stack: list[tuple[Descriptor, Any, tuple[Step, ...], str]] = [(descriptor, data, (), "")]
    while stack:
        current, obj, steps, where = stack.pop(0)
        if not isinstance(obj, dict) or not holds_kubernetes(current):
            continue
        fields = _message_fields(current)
        for key in list(obj):
            field = fields.get(key)
            if field is None or obj[key] is None:
                continue
            path = _join(where, field.json_name)
            value_type = _map_value_type(field) if _is_map(field) else field.message_type
            if value_type is None:
                continue
            if is_kubernetes(value_type):
                parts.append(KubernetesPart(steps, field, obj.pop(key), path))
            elif _is_map(field) and isinstance(obj[key], dict):
                stack += [
                    (value_type, v, (*steps, (field.name, k)), f"{path}[{k}]")
                    for k, v in obj[key].items()
                ]
            elif field.is_repeated and not _is_map(field) and isinstance(obj[key], list):
                stack += [
                    (value_type, v, (*steps, (field.name, i)), f"{path}[{i}]")
                    for i, v in enumerate(obj[key])
                ]
            elif not field.is_repeated:
                stack.append((value_type, obj[key], (*steps, (field.name, None)), path))
    return parts


def fill_kubernetes(message: Message, parts: list[KubernetesPart]) -> None:
    """Put ``parts`` into ``message`` (parsed from what ``split_kubernetes`` left); raise
    ValidationFailed naming every field that does not fit its Kubernetes type."""
    problems: list[FieldError] = []
    for part in parts:
        holder = message
        for name, selector in part.steps:
            holder = getattr(holder, name) if selector is None else getattr(holder, name)[selector]
        field, value, where = part.field, part.value, part.where
        target = getattr(holder, field.name)
        if _is_map(field):
            if not isinstance(value, dict):
                problems.append(FieldError(where, "must be a mapping"))
                continue
            for key, item in value.items():
                if item is not None:
                    json_to_message(target[key], item, f"{where}[{key}]", problems)
        elif field.is_repeated:
            if not isinstance(value, list):
                problems.append(FieldError(where, "must be a list"))
                continue
            for i, item in enumerate(value):
                if item is None:
                    problems.append(FieldError(f"{where}[{i}]", "must not be null"))
                else:
                    json_to_message(target.add(), item, f"{where}[{i}]", problems)
        else:
            target.SetInParent()
            json_to_message(target, value, where, problems)
    if problems:
        raise ValidationFailed(problems[:20])


def kubernetes_json(message: Message, data: dict[str, Any]) -> dict[str, Any]:
    """``MessageToDict(message)`` with its Kubernetes parts rewritten in Kubernetes' JSON
    (in place)."""
    if not holds_kubernetes(message.DESCRIPTOR):
        return data
    for field, value in message.ListFields():
        if field.message_type is None or field.json_name not in data:
            continue
        key = field.json_name
        value_type = _map_value_type(field) if _is_map(field) else field.message_type
        if value_type is None:
            continue
        convert = is_kubernetes(value_type)
        if _is_map(field):
            for k, item in value.items():
                out = data[key]
                out[str(k)] = (
                    message_to_json(item, key) if convert else kubernetes_json(item, out[str(k)])
                )
        elif field.is_repeated:
            data[key] = [
                message_to_json(item, key) if convert else kubernetes_json(item, out)
                for item, out in zip(value, data[key], strict=True)
            ]
        else:
            data[key] = (
                message_to_json(value, key) if convert else kubernetes_json(value, data[key])
            )
    return data
