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

The module holds the ``PodSpec`` entry points; the walk itself is in ``wire.k8s_to_json``
(message -> JSON, ``message_to_json``) and ``wire.k8s_from_json`` (JSON -> message,
``json_to_message``), over what both share in ``wire.k8s_types`` (the special types, the
inlined fields, field paths) and ``wire.go_duration`` (Go's duration text). Those names are
importable from here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1

from armada.core.errors import FieldError, ValidationFailed
from armada.wire.go_duration import format_go_duration, parse_go_duration
from armada.wire.k8s_from_json import json_to_message
from armada.wire.k8s_to_json import message_to_json

__all__ = [
    "format_go_duration",
    "json_to_message",
    "message_to_json",
    "parse_go_duration",
    "pod_spec_from_message",
    "pod_spec_message",
]


def pod_spec_from_message(msg: core_v1.PodSpec, *, where: str = "podSpec") -> dict[str, Any]:
    """The pod spec dict (Kubernetes' JSON shape) of a ``PodSpec`` message. Raises
    ValidationFailed naming the field (under ``where``) for a value JSON cannot spell, such as
    a time outside the years 1 to 9999."""
    return message_to_json(msg, where)


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
    json_to_message(msg, data, "podSpec", problems)  # not a mapping: one problem, "podSpec"
    if problems and strict:
        raise ValidationFailed(problems)
    if dropped is not None:
        dropped.extend(p.field for p in problems)
    return msg
