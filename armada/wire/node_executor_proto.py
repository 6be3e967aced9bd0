"""Armada's ``api.Node`` and ``api.Executor`` services, described in protobuf's own terms.

``armada_client`` ships no generated modules for ``pkg/api/node.proto`` and
``pkg/api/executor.proto``, so this module builds both files' descriptors (messages, field
names and numbers, the services, their ``google.api.http`` rules) and adds them to the default
descriptor pool at import, as ``wire.scheduler_reporting_proto`` does for its file. From there
the wire layer treats them like generated modules: ``wire.registry`` finds the methods,
``wire.http_rules`` their REST paths, ``wire.swagger`` their shapes; the message classes come
from :func:`message_class`.

The contract is Armada's: a client generated from its protos (``armadactl``'s Go client among
them) talks to these services unchanged. Armada's own field names are camelCase in the proto
(``priorityClasses``, ``cordonReason``), so their JSON names are the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from armada_client.google.api import annotations_pb2
from google.protobuf import descriptor_pb2, descriptor_pool, empty_pb2
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

PACKAGE = "api"
NODE_SERVICE = "api.Node"
EXECUTOR_SERVICE = "api.Executor"

_FD = descriptor_pb2.FieldDescriptorProto
_STRING, _BOOL = _FD.TYPE_STRING, _FD.TYPE_BOOL
_ONE, _MANY = _FD.LABEL_OPTIONAL, _FD.LABEL_REPEATED
_EMPTY = ".google.protobuf.Empty"


@dataclass(frozen=True)
class _File:
    name: str
    service: str  # the short name: "Node"
    # (message, [(field, number, type, label)])
    messages: list[tuple[str, list[tuple[str, int, int, int]]]]
    # (method, request message, HTTP verb, path); every answer is Empty, every body "*"
    methods: list[tuple[str, str, str, str]]


def _stop_fields(*, node: bool) -> list[tuple[str, int, int, int]]:
    """The fields of a request to stop the jobs on a node (with ``executor``) or an executor
    (with ``pools``), numbered as Armada numbers them."""
    if node:
        return [
            ("name", 1, _STRING, _ONE),
            ("executor", 2, _STRING, _ONE),
            ("queues", 3, _STRING, _MANY),
            ("priorityClasses", 4, _STRING, _MANY),
        ]
    return [
        ("name", 1, _STRING, _ONE),
        ("queues", 2, _STRING, _MANY),
        ("priorityClasses", 3, _STRING, _MANY),
        ("pools", 4, _STRING, _MANY),
    ]


NODE_FILE = _File(
    name="pkg/api/node.proto",
    service="Node",
    messages=[
        ("NodePreemptRequest", _stop_fields(node=True)),
        ("NodeCancelRequest", _stop_fields(node=True)),
    ],
    methods=[
        ("PreemptOnNode", "NodePreemptRequest", "post", "/v1/node/preempt/{name}"),
        ("CancelOnNode", "NodeCancelRequest", "post", "/v1/node/cancel/{name}"),
    ],
)

EXECUTOR_FILE = _File(
    name="pkg/api/executor.proto",
    service="Executor",
    messages=[
        (
            "ExecutorSettingsUpsertRequest",
            [
                ("name", 1, _STRING, _ONE),
                ("cordoned", 2, _BOOL, _ONE),
                ("cordonReason", 3, _STRING, _ONE),
            ],
        ),
        ("ExecutorSettingsDeleteRequest", [("name", 1, _STRING, _ONE)]),
        ("ExecutorDeleteRequest", [("name", 1, _STRING, _ONE)]),
        ("ExecutorPreemptRequest", _stop_fields(node=False)),
        ("ExecutorCancelRequest", _stop_fields(node=False)),
    ],
    methods=[
        (
            "UpsertExecutorSettings",
            "ExecutorSettingsUpsertRequest",
            "put",
            "/v1/executor_settings/{name}",
        ),
        (
            "DeleteExecutorSettings",
            "ExecutorSettingsDeleteRequest",
            "delete",
            "/v1/executor_settings/{name}",
        ),
        ("PreemptOnExecutor", "ExecutorPreemptRequest", "post", "/v1/executor/preempt/{name}"),
        ("CancelOnExecutor", "ExecutorCancelRequest", "post", "/v1/executor/cancel/{name}"),
        ("DeleteExecutor", "ExecutorDeleteRequest", "delete", "/v1/executors/{name}"),
    ],
)

FILES = (NODE_FILE, EXECUTOR_FILE)


def file_descriptor_proto(file: _File) -> descriptor_pb2.FileDescriptorProto:
    """The ``FileDescriptorProto`` of one of Armada's two files."""
    proto = descriptor_pb2.FileDescriptorProto(
        name=file.name,
        package=PACKAGE,
        syntax="proto3",
        dependency=[annotations_pb2.DESCRIPTOR.name, empty_pb2.DESCRIPTOR.name],
    )
    proto.options.go_package = "github.com/armadaproject/armada/pkg/api"
    for name, fields in file.messages:
        message = proto.message_type.add(name=name)
        for field_name, number, kind, label in fields:
            message.field.add(
                name=field_name, number=number, type=kind, label=label, json_name=field_name
            )
    service = proto.service.add(name=file.service)
    for name, request, verb, path in file.methods:
        method = service.method.add(
            name=name, input_type=f".{PACKAGE}.{request}", output_type=_EMPTY
        )
        rule = method.options.Extensions[annotations_pb2.http]
        setattr(rule, verb, path)
        rule.body = "*"
    return proto


def _install() -> None:
    pool = descriptor_pool.Default()
    for file in FILES:
        try:
            pool.FindFileByName(file.name)
        except KeyError:
            pool.Add(file_descriptor_proto(file))


def message_class(name: str) -> type[Message]:
    """The message class of ``api.<name>`` (``NodeCancelRequest``)."""
    return GetMessageClass(descriptor_pool.Default().FindMessageTypeByName(f"{PACKAGE}.{name}"))


_install()
