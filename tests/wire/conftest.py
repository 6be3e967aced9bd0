"""Fixtures of the wire tests: a registry with one method served by a test-only operation,
a logged-in test client of the REST gateway, in-process gRPC servers, and closing what
event streams leave open in their worker threads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client

from armada.wire.registry import OPERATIONS, Call, Operation, load_operations, method_descriptor
from tests.wire.fake_operations import operation
from tests.wire.grpc_server import InProcessServer


@pytest.fixture
def swap(monkeypatch) -> Callable[[str, Callable], list]:
    """``swap(method, func)`` serves ``method`` with ``func``; returns the list of requests
    the function was given."""
    load_operations()

    def install(name: str, func: Callable) -> list:
        seen: list = []

        def recording(call: Call, request: Any) -> Any:
            seen.append((call, request))
            return func(call, request)

        if method_descriptor(name).server_streaming:

            async def recording_stream(call: Call, request: Any):  # noqa: RUF029
                seen.append((call, request))
                async for item in func(call, request):
                    yield item

            monkeypatch.setitem(OPERATIONS, name, operation(name, recording_stream))
        else:
            monkeypatch.setitem(OPERATIONS, name, operation(name, recording))
        return seen

    return install


@pytest.fixture
def client(admin_user) -> Client:
    client = Client(HTTP_HOST="localhost")
    client.force_login(admin_user)
    return client


@pytest.fixture
def serve() -> Iterator[Callable[..., InProcessServer]]:
    started: list[InProcessServer] = []

    def start(operations: dict[str, Operation] | None = None) -> InProcessServer:
        started.append(InProcessServer(operations))
        return started[-1]

    yield start
    for server in started:
        server.close()
