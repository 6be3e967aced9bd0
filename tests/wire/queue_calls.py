"""Calling Armada's queue calls as the transports call them: the registered function with
a ``Call`` and a message."""

from __future__ import annotations

from armada_client.armada import submit_pb2

from armada.services.errors import ValidationFailed
from armada.wire.registry import Call, load_operations
from tests.conftest import T0

Q = submit_pb2.Queue


def call(name: str, user, message):
    """The operation ``name`` (``api.QueueService/...`` unless a service is named)."""
    full = name if "/" in name else f"api.QueueService/{name}"
    return load_operations()[full].func(Call(actor=user, now=T0), message)


def fields_of(error: ValidationFailed) -> set[str]:
    return {e.field for e in error.errors}
