"""The table of wire operations: one function per Armada RPC, shared by gRPC and the gateway.

An operation is registered under every ``"package.Service/Method"`` name that serves it (Armada
offers the same queue calls on ``api.Submit`` and ``api.QueueService``):

    @unary("api.Submit/CreateQueue", "api.QueueService/CreateQueue")
    def create_queue(call: Call, request: submit_pb2.Queue) -> empty_pb2.Empty: ...

- A **unary** operation is a plain (synchronous) function. The transport runs it on a worker
  thread and closes that thread's database connection afterwards, so an operation never holds
  a connection between calls. It raises the services' errors (``services.errors``); the
  transport maps them to gRPC status codes or HTTP statuses (``wire.errors``).
- ``anonymous=True`` serves callers who send no credentials (as ``AnonymousUser``) even
  when ``auth.anonymousAuth`` is off: for Health, which load balancers probe. Credentials
  that are sent are checked all the same.
- A **streaming** operation is an async generator of response messages. It must hold no
  database connection while it waits: it does each read with
  ``sync_to_async(read, thread_sensitive=False)`` in a function that closes its connection before
  returning (as ``api.streams`` does), and waits on ``api.wakeups``.

The request and response types come from the method descriptors of the generated modules, so a
registration names no types itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# Importing the generated modules registers their descriptors in the default pool.
from armada_client.armada import event_pb2, health_pb2, job_pb2, submit_pb2  # noqa: F401
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

SERVICES = ("api.Submit", "api.QueueService", "api.RetryPolicyService", "api.Event", "api.Jobs")


@dataclass(frozen=True)
class Call:
    """Who is calling and when: what every operation gets besides its request.

    ``actor`` is a Django user (``AnonymousUser`` only when anonymous access is configured,
    or for an operation registered with ``anonymous=True``);
    ``now`` is the time the call arrived, timezone-aware; ``peer`` names the client's address.
    """

    actor: Any
    now: datetime
    peer: str = ""


UnaryFunc = Callable[[Call, Message], Message]
StreamFunc = Callable[[Call, Message], AsyncIterator[Message]]


@dataclass(frozen=True)
class Operation:
    name: str  # "api.Submit/SubmitJobs"
    func: Callable[..., Any]
    streaming: bool
    method: MethodDescriptor
    anonymous: bool = False

    @property
    def request_class(self) -> type[Message]:
        return GetMessageClass(self.method.input_type)

    @property
    def response_class(self) -> type[Message]:
        return GetMessageClass(self.method.output_type)


OPERATIONS: dict[str, Operation] = {}


def method_descriptor(name: str) -> MethodDescriptor:
    service, _, method = name.partition("/")
    found = descriptor_pool.Default().FindServiceByName(service).methods_by_name.get(method)
    if found is None:
        raise LookupError(f"{name}: no such method in Armada's protos")
    return found


def _register(
    names: tuple[str, ...], streaming: bool, anonymous: bool = False
) -> Callable[[Callable], Callable]:
    def register(func: Callable) -> Callable:
        for name in names:
            method = method_descriptor(name)
            if method.server_streaming != streaming:
                kind = "streaming" if method.server_streaming else "unary"
                raise TypeError(f"{name} is a {kind} method")
            if name in OPERATIONS:
                raise ValueError(f"{name} is registered twice")
            OPERATIONS[name] = Operation(name, func, streaming, method, anonymous)
        return func

    return register


def unary(*names: str, anonymous: bool = False) -> Callable[[UnaryFunc], UnaryFunc]:
    """Register a synchronous request -> response operation under each of ``names``."""
    return _register(names, streaming=False, anonymous=anonymous)


def stream(*names: str, anonymous: bool = False) -> Callable[[StreamFunc], StreamFunc]:
    """Register an async generator of responses under each of ``names``."""
    return _register(names, streaming=True, anonymous=anonymous)


def load_operations() -> dict[str, Operation]:
    """Import every module that registers operations and return the table."""
    import importlib

    for module in OPERATION_MODULES:
        importlib.import_module(module)
    return OPERATIONS


# The modules that hold the operations, one per concept.
OPERATION_MODULES = [
    "armada.wire.health_ops",
    "armada.wire.event_ops",
    "armada.wire.queue_ops",
    "armada.wire.policy_ops",
    "armada.wire.job_ops",
    "armada.wire.job_query_ops",
]
