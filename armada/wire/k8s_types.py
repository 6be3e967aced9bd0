"""What both directions of the pod spec mapping (``wire.podspec``) know about Kubernetes'
messages: the types whose JSON is not their message shape, the embedded structs that JSON
inlines, the shapes of a field (repeated, map, inlined) and how a field's path is spelled in
an error."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.Time"
MICRO_TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime"
DURATION = "k8s.io.apimachinery.pkg.apis.meta.v1.Duration"
FIELDS_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1"

# Fields that hold an embedded Go struct (``json:",inline"`` in Kubernetes' Go types), as
# (field name, message type): their fields are spelled in the outer object in JSON.
INLINE = {
    ("volumeSource", "k8s.io.api.core.v1.VolumeSource"),
    ("handler", "k8s.io.api.core.v1.ProbeHandler"),
    ("ephemeralContainerCommon", "k8s.io.api.core.v1.EphemeralContainerCommon"),
    ("localObjectReference", "k8s.io.api.core.v1.LocalObjectReference"),
}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_repeated(field: FieldDescriptor) -> bool:
    return field.is_repeated


def is_map(field: FieldDescriptor) -> bool:
    return (
        is_repeated(field)
        and field.type == FieldDescriptor.TYPE_MESSAGE
        and field.message_type.GetOptions().map_entry
    )


def is_inline(field: FieldDescriptor) -> bool:
    """Whether the field holds an embedded struct whose fields JSON spells in the outer
    object (``INLINE``)."""
    return (
        field.type == FieldDescriptor.TYPE_MESSAGE
        and (field.name, field.message_type.full_name) in INLINE
    )


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def field_path(where: str, key: Any) -> str:
    """``where.key``, or ``where[key]`` for keys such as ``nvidia.com/gpu`` (as the core names
    annotations)."""
    text = str(key)
    return f"{where}.{text}" if _PLAIN_KEY.fullmatch(text) else f"{where}[{text}]"
