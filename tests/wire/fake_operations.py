"""Test-only operations for the wire tests: served in place of the registered ones by the
gRPC server and the REST gateway tests, so that what reaches an operation (and what its
answer or error becomes) can be seen exactly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from armada.wire.registry import Call, Operation, method_descriptor


def operation(name: str, func: Callable, *, anonymous: bool = False) -> Operation:
    """Armada's method ``name`` (``"api.Submit/GetQueue"``) served by ``func``."""
    method = method_descriptor(name)
    return Operation(name, func, method.server_streaming, method, anonymous)


def raiser(exc: BaseException) -> Callable:
    """An operation that raises ``exc``."""

    def op(call: Call, request: Any) -> Any:
        raise exc

    return op
