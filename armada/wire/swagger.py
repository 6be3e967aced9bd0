"""``GET /swagger.json``: a Swagger 2.0 description of the REST gateway this server serves, in
the shape of Armada's ``api.swagger.json``.

Built at first request (then kept) from what the server runs, never from a copy of Armada's
file: the paths are ``wire.http_rules``' rules of the methods ``wire.registry`` has an
operation for (a rule for a method we do not serve is left out), and the schemas come from
the methods' protobuf descriptors. Names follow Armada's generator:

- a path variable takes its field's JSON name (``{queue_name}`` -> ``{queueName}``);
- an operation is tagged with its service's short name (``Submit``, ``Binoculars``) and its
  ``operationId`` is the method's name (``SubmitJobs``);
- a message or enum is defined under the last two parts of its full name (``api.Queue`` ->
  ``apiQueue``, ``k8s.io.api.core.v1.PodSpec`` -> ``v1PodSpec``, ``api.Queue.Permissions`` ->
  ``QueuePermissions``);
- a body rule (``body: "*"``) takes the request as a ``body`` parameter; a rule without a body
  takes every field not in the path as a query parameter, nested fields dotted
  (``mostRecentForQueue.queueName``);
- fields by their JSON (camelCase) names; 64-bit integers as strings with ``format: int64``
  (``uint64``), as protobuf's JSON writes them (in Kubernetes types: numbers, as Kubernetes'
  JSON writes them); enums as their names;
- a streamed answer is ``{"result": ..., "error": ...}`` per line;
- errors (``default``) are ``runtimeError``, a stream's ``runtimeStreamError``, as Armada's.

As in Armada's file, names are written in camelCase; the gateway's JSON on the wire is Go's
``encoding/json`` over Armada's structs, as Armada's gateway writes it (``docs/armada-api.md``).

Kubernetes types are described as Kubernetes' JSON spells them (what the gateway reads and
writes, see ``wire.k8sjson``): quantities are strings (``resourceQuantity``), times RFC 3339
strings (``v1Time``), resource maps ``v1ResourceList``, and the fields of an embedded struct
(a volume's source) are the outer object's.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from armada.wire.http_rules import _PARAM, HttpRule, http_rules
from armada.wire.k8s_types import (
    DURATION,
    FIELDS_V1,
    INT_OR_STRING,
    MICRO_TIME,
    QUANTITY,
    TIME,
    is_inline,
    is_map,
)
from armada.wire.registry import load_operations

REF = "#/definitions/"
F = FieldDescriptor
_SCALARS: dict[int, dict[str, str]] = {
    F.TYPE_DOUBLE: {"type": "number", "format": "double"},
    F.TYPE_FLOAT: {"type": "number", "format": "float"},
    F.TYPE_INT64: {"type": "string", "format": "int64"},
    F.TYPE_SINT64: {"type": "string", "format": "int64"},
    F.TYPE_SFIXED64: {"type": "string", "format": "int64"},
    F.TYPE_UINT64: {"type": "string", "format": "uint64"},
    F.TYPE_FIXED64: {"type": "string", "format": "uint64"},
    F.TYPE_INT32: {"type": "integer", "format": "int32"},
    F.TYPE_SINT32: {"type": "integer", "format": "int32"},
    F.TYPE_SFIXED32: {"type": "integer", "format": "int32"},
    F.TYPE_UINT32: {"type": "integer", "format": "int64"},
    F.TYPE_FIXED32: {"type": "integer", "format": "int64"},
    F.TYPE_BOOL: {"type": "boolean"},
    F.TYPE_STRING: {"type": "string"},
    F.TYPE_BYTES: {"type": "string", "format": "byte"},
}
# Well-known and Kubernetes types whose JSON is not their message's shape: written inline.
_INLINE_TYPES: dict[str, dict[str, Any]] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {"type": "string"},
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array", "items": {}},
    "google.protobuf.StringValue": {"type": "string"},
    "google.protobuf.BoolValue": {"type": "boolean"},
    "google.protobuf.BytesValue": {"type": "string", "format": "byte"},
    "google.protobuf.Int32Value": {"type": "integer", "format": "int32"},
    "google.protobuf.UInt32Value": {"type": "integer", "format": "int64"},
    "google.protobuf.Int64Value": {"type": "string", "format": "int64"},
    "google.protobuf.UInt64Value": {"type": "string", "format": "uint64"},
    "google.protobuf.FloatValue": {"type": "number", "format": "float"},
    "google.protobuf.DoubleValue": {"type": "number", "format": "double"},
}
# Kubernetes types defined by name, with the shape of their Kubernetes JSON.
_K8S_DEFINITIONS: dict[str, tuple[str, dict[str, Any]]] = {
    QUANTITY: ("resourceQuantity", {"type": "string"}),
    TIME: ("v1Time", {"type": "string", "format": "date-time"}),
    MICRO_TIME: ("v1MicroTime", {"type": "string", "format": "date-time"}),
    DURATION: ("v1Duration", {"type": "string"}),
    FIELDS_V1: ("v1FieldsV1", {"type": "object"}),
    INT_OR_STRING: ("intstrIntOrString", {"type": "string", "format": "int-or-string"}),
}
RESOURCE_LIST = "v1ResourceList"
K8S = "k8s.io."
_WIDE = ("int64", "uint64")
EMPTY = "google.protobuf.Empty"
ANY = "google.protobuf.Any"


class _Definitions:
    """The definitions a document needs, filled as schemas refer to them."""

    def __init__(self) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}
        self._names: dict[str, str] = {}  # full name -> definition name

    def name_of(self, full_name: str) -> str:
        """``api.Queue`` -> ``apiQueue``; more parts when two types would share a name."""
        if full_name in self._names:
            return self._names[full_name]
        parts = full_name.split(".")
        taken = set(self._names.values())
        for count in range(2, len(parts) + 1):
            name = "".join(parts[-count:])
            if name not in taken:
                break
        self._names[full_name] = name
        return name

    def ref(self, name: str) -> dict[str, str]:
        return {"$ref": REF + name}

    def message(self, descriptor: Descriptor) -> dict[str, Any]:
        full = descriptor.full_name
        if full in _INLINE_TYPES:
            return dict(_INLINE_TYPES[full])
        if full in _K8S_DEFINITIONS:
            name, schema = _K8S_DEFINITIONS[full]
            self.schemas.setdefault(name, dict(schema))
            return self.ref(name)
        name = self.name_of(full)
        if name not in self.schemas:
            self.schemas[name] = {}  # placeholder: a message may refer to itself
            self.schemas[name] = {"type": "object", "properties": self._properties(descriptor)}
        return self.ref(name)

    def enum(self, descriptor: EnumDescriptor) -> dict[str, Any]:
        name = self.name_of(descriptor.full_name)
        values = [v.name for v in descriptor.values]
        self.schemas.setdefault(name, {"type": "string", "enum": values, "default": values[0]})
        return self.ref(name)

    def _properties(self, descriptor: Descriptor) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        for field in descriptor.fields:
            if is_inline(field):
                properties.update(self._properties(field.message_type))
            else:
                properties[field.json_name] = self.field(field)
        return dict(sorted(properties.items()))

    def value(self, field: FieldDescriptor) -> dict[str, Any]:
        """The schema of one value of ``field`` (an element, for a repeated field)."""
        if field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
            return self.message(field.message_type)
        if field.type == F.TYPE_ENUM:
            return self.enum(field.enum_type)
        schema = dict(_SCALARS[field.type])
        if schema.get("format") in _WIDE and field.containing_type.full_name.startswith(K8S):
            schema["type"] = "integer"  # Kubernetes' JSON writes 64-bit integers as numbers
        return schema

    def field(self, field: FieldDescriptor) -> dict[str, Any]:
        if is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            if value_field.message_type and value_field.message_type.full_name == QUANTITY:
                self.schemas.setdefault(
                    RESOURCE_LIST,
                    {
                        "type": "object",
                        "additionalProperties": self.message(value_field.message_type),
                    },
                )
                return self.ref(RESOURCE_LIST)
            return {"type": "object", "additionalProperties": self.value(value_field)}
        if field.is_repeated:
            return {"type": "array", "items": self.value(field)}
        return self.value(field)


def _json_path(descriptor: Descriptor, dotted: str) -> tuple[str, FieldDescriptor]:
    """``queue.name`` -> (``queue.name`` in JSON names, the last field)."""
    names, current, field = [], descriptor, None
    for part in dotted.split("."):
        field = current.fields_by_name[part]
        names.append(field.json_name)
        current = field.message_type
    assert field is not None
    return ".".join(names), field


def swagger_path(rule: HttpRule, request: Descriptor) -> str:
    """The rule's template with JSON names and no ``=pattern`` (``{queueName}``)."""
    return _PARAM.sub(lambda m: "{" + _json_path(request, m.group(1))[0] + "}", rule.template)


def _simple(field: FieldDescriptor) -> dict[str, Any]:
    """A path or query parameter's type: a scalar, a well-known type written as one, or an
    enum's names."""
    if field.type == F.TYPE_ENUM:
        values = [v.name for v in field.enum_type.values]
        return {"type": "string", "enum": values, "default": values[0]}
    if field.message_type is not None:
        schema = _INLINE_TYPES.get(field.message_type.full_name, {})
    else:
        schema = _SCALARS[field.type]
    return {k: v for k, v in schema.items() if k in ("type", "format")} or {"type": "string"}


def _query_parameters(
    descriptor: Descriptor, skip: set[str], prefix: str = "", seen: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """Every field not in ``skip`` (the path's) as a query parameter; a message's fields
    dotted under its name; maps, repeated messages and a message inside itself left out."""
    found: list[dict[str, Any]] = []
    for field in descriptor.fields:
        name = prefix + field.json_name
        if name in skip or is_map(field):
            continue
        kind = field.message_type
        if kind is not None and kind.full_name not in _INLINE_TYPES:
            if field.is_repeated or kind.full_name in seen:
                continue
            found += _query_parameters(kind, skip, f"{name}.", (*seen, kind.full_name))
            continue
        schema = _simple(field)
        if field.is_repeated:
            found.append(
                {"name": name, "in": "query", "type": "array", "items": schema,
                 "collectionFormat": "multi"}
            )  # fmt: skip
        else:
            found.append({**schema, "name": name, "in": "query"})
    return found


def _operation(rule: HttpRule, op: Any, defs: _Definitions, operation_id: str) -> dict[str, Any]:
    request: Descriptor = op.method.input_type
    parameters: list[dict[str, Any]] = []
    in_path: set[str] = set()
    for dotted in rule.path_fields:
        name, field = _json_path(request, dotted)
        in_path.add(name)
        schema = _simple(field)
        parameters.append({**schema, "name": name, "in": "path", "required": True})
    if rule.body == "*":
        body = defs.message(request)
        parameters.append({"name": "body", "in": "body", "required": True, "schema": body})
    elif rule.body:
        field = request.fields_by_name[rule.body]
        schema = defs.field(field)
        parameters.append({"name": "body", "in": "body", "required": True, "schema": schema})
    else:
        parameters += _query_parameters(request, in_path)
    response = op.method.output_type
    answer = {} if response.full_name == EMPTY else defs.message(response)
    if rule.streaming:
        ok = {
            "description": "A successful response.(streaming responses)",
            "schema": {
                "type": "object",
                "title": f"Stream result of {answer['$ref'][len(REF) :]}",
                "properties": {"error": defs.ref("runtimeStreamError"), "result": answer},
            },
        }
    else:
        ok = {"description": "A successful response.", "schema": answer}
    operation: dict[str, Any] = {
        "tags": [op.name.partition("/")[0].rpartition(".")[2]],
        "operationId": operation_id,
    }
    if parameters:
        operation["parameters"] = parameters
    return operation | {
        "responses": {
            "200": ok,
            "default": {
                "description": "An unexpected error response.",
                "schema": defs.ref("runtimeError"),
            },
        },
    }


def _error_definitions(defs: _Definitions) -> None:
    """The gateway's error bodies, grpc-gateway v1's (see ``wire.gateway``): ``runtimeError``
    for a failed call, ``runtimeStreamError`` for a stream that fails after it started."""
    any_type = descriptor_pool.Default().FindMessageTypeByName(ANY)
    details = {"type": "array", "items": defs.message(any_type)}
    int32, text = {"type": "integer", "format": "int32"}, {"type": "string"}
    defs.schemas["runtimeError"] = {
        "type": "object",
        "properties": {"code": int32, "details": details, "error": text, "message": text},
    }
    defs.schemas["runtimeStreamError"] = {
        "type": "object",
        "properties": {
            "details": details,
            "grpcCode": int32,
            "httpCode": int32,
            "httpStatus": text,
            "message": text,
        },
    }


def _package_version() -> str:
    try:
        return version("armada-py")
    except PackageNotFoundError:
        return "unknown"


def build_document() -> dict[str, Any]:
    """The document (see the module docstring)."""
    from google.protobuf import any_pb2  # noqa: F401 - google.protobuf.Any in the pool

    operations = load_operations()
    defs = _Definitions()
    _error_definitions(defs)
    paths: dict[str, dict[str, Any]] = {}
    used_ids: set[str] = set()
    for rule in http_rules():
        op = operations.get(rule.method)
        if op is None:
            continue
        path = swagger_path(rule, op.method.input_type)
        verb = rule.verb.lower()
        if verb in paths.get(path, {}):
            continue  # the first rule for a path and verb is the one served
        service, _, method = rule.method.partition("/")
        operation_id = method
        if operation_id in used_ids:
            operation_id = f"{service.rpartition('.')[2]}_{method}"
        used_ids.add(operation_id)
        paths.setdefault(path, {})[verb] = _operation(rule, op, defs, operation_id)
    return {
        "swagger": "2.0",
        "info": {"title": "Armada API", "version": _package_version()},
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(defs.schemas.items())),
    }


@cache
def document_bytes() -> bytes:
    """The document as served, built once per process."""
    return json.dumps(build_document(), indent=2).encode()


@csrf_exempt
def swagger_json(request: HttpRequest) -> HttpResponse:
    """``/swagger.json``: public, as Armada's (the gateway's calls need credentials, their
    description does not)."""
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse(status=405)
        response["Allow"] = "GET, HEAD"
        return response
    response = HttpResponse(document_bytes(), content_type="application/json")
    response["Cache-Control"] = "public, max-age=300"
    return response
