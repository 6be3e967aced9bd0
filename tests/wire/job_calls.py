"""Calling Armada's job calls as the transports call them: the registered function of
``api.Submit`` with a ``Call`` and a message."""

from __future__ import annotations

from armada.services.errors import ValidationFailed
from armada.wire.registry import Call, load_operations
from tests.conftest import T0


def call(method: str, user, message):
    return load_operations()[f"api.Submit/{method}"].func(Call(actor=user, now=T0), message)


def fields_of(error: ValidationFailed) -> list[str]:
    return [e.field for e in error.errors]
