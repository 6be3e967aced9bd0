"""Armada's ``schedulerobjects.SchedulerReporting`` service, described in protobuf's own terms.

``armada_client`` ships no generated module for ``scheduler_reporting.proto``, so this module
builds the file's descriptor (messages, field numbers, the service, its ``google.api.http``
rules) and adds it to the default descriptor pool at import. From there the rest of the wire
layer treats it like any generated module: ``wire.registry`` finds the methods,
``wire.http_rules`` their REST paths, ``wire.swagger`` their shapes, and the message classes
come from :func:`message_class`.

The wire contract (names, numbers, types, paths) is Armada's; a client generated from
Armada's proto talks to it unchanged.
"""

from __future__ import annotations

from armada_client.google.api import annotations_pb2
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

FILE_NAME = "pkg/api/schedulerobjects/scheduler_reporting.proto"
PACKAGE = "schedulerobjects"
SERVICE = "schedulerobjects.SchedulerReporting"

_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_INT32 = descriptor_pb2.FieldDescriptorProto.TYPE_INT32
_MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE

# (message, [(field, number, type, message type or "", oneof index or None)])
_MESSAGES: list[tuple[str, list[tuple[str, int, int, str, int | None]]]] = [
    ("MostRecentForQueue", [("queue_name", 1, _STRING, "", None)]),
    ("MostRecentForJob", [("job_id", 1, _STRING, "", None)]),
    (
        "SchedulingReportRequest",
        [
            ("most_recent_for_queue", 1, _MESSAGE, "MostRecentForQueue", 0),
            ("most_recent_for_job", 2, _MESSAGE, "MostRecentForJob", 0),
            ("verbosity", 3, _INT32, "", None),
        ],
    ),
    ("SchedulingReport", [("report", 1, _STRING, "", None)]),
    (
        "QueueReportRequest",
        [("queue_name", 1, _STRING, "", None), ("verbosity", 2, _INT32, "", None)],
    ),
    ("QueueReport", [("report", 1, _STRING, "", None)]),
    ("JobReportRequest", [("job_id", 1, _STRING, "", None)]),
    ("JobReport", [("report", 1, _STRING, "", None)]),
]

# (method, request, response, GET path)
_METHODS = [
    ("GetSchedulingReport", "SchedulingReportRequest", "SchedulingReport", "/v1/scheduling-report"),
    (
        "GetQueueReport",
        "QueueReportRequest",
        "QueueReport",
        "/v1/queue/{queue_name}/scheduler-report",
    ),
    ("GetJobReport", "JobReportRequest", "JobReport", "/v1/job/{job_id}/scheduler-report"),
]


def file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """The ``FileDescriptorProto`` of Armada's ``scheduler_reporting.proto``."""
    proto = descriptor_pb2.FileDescriptorProto(
        name=FILE_NAME,
        package=PACKAGE,
        syntax="proto3",
        dependency=[annotations_pb2.DESCRIPTOR.name],
    )
    proto.options.go_package = "github.com/armadaproject/armada/pkg/api/schedulerobjects"
    for name, fields in _MESSAGES:
        message = proto.message_type.add(name=name)
        if any(oneof is not None for *_, oneof in fields):
            message.oneof_decl.add(name="filter")
        for field_name, number, kind, type_name, oneof in fields:
            field = message.field.add(
                name=field_name,
                number=number,
                type=kind,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                json_name=_camel(field_name),
            )
            if type_name:
                field.type_name = f".{PACKAGE}.{type_name}"
            if oneof is not None:
                field.oneof_index = oneof
    service = proto.service.add(name=SERVICE.rpartition(".")[2])
    for name, request, response, get in _METHODS:
        method = service.method.add(
            name=name, input_type=f".{PACKAGE}.{request}", output_type=f".{PACKAGE}.{response}"
        )
        method.options.Extensions[annotations_pb2.http].get = get
    return proto


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _install() -> None:
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(FILE_NAME)
    except KeyError:
        pool.Add(file_descriptor_proto())


def message_class(name: str) -> type[Message]:
    """The message class of ``schedulerobjects.<name>`` (``QueueReport``)."""
    return GetMessageClass(descriptor_pool.Default().FindMessageTypeByName(f"{PACKAGE}.{name}"))


_install()
