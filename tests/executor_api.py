"""Executor agents for tests, talking to the executor API through the real client.

``api_agent`` gives an ``ExecutorAgent`` whose ``ExecutorApiClient`` sends every call over a
loopback channel: each request is serialized by the client, handled by the server's own
``wire.executor_server.handle`` (credential, message checks, session, services) in the
calling thread, and the answer's bytes are parsed by the client, so a test in a database
transaction sees every write. Only HTTP/2 is left out; ``tests/wire/test_executor_server.py``
and the end-to-end tests run the same calls over real sockets.

The server's clock is the time of the agent's tick, so tests keep passing time in.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import grpc

from armada.core.config import Executor as ExecutorConfig
from armada.executor.agent import ExecutorAgent, TickReport
from armada.executor.api.client import ExecutorApiClient
from armada.executor.backends.base import Backend
from armada.executor.backends.fake import FakeBackend
from armada.wire.executor_server import handle
from armada.wire.server import status_of

CREDENTIAL_ADMIN = "executor-credential-admin"


class LoopbackError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class LoopbackChannel:
    """The two kinds of call the client makes, answered by the server's handler in this
    thread; ``now`` is the server's clock."""

    def __init__(self) -> None:
        self.now: datetime | None = None
        self.calls: list[str] = []
        self.down = False  # a test may take the server away

    def _call(self, path: str, serialize, parse, request: Any, metadata: Any) -> Iterator:
        name = path.rsplit("/", 1)[1]
        self.calls.append(name)
        if self.down:
            raise LoopbackError(grpc.StatusCode.UNAVAILABLE, "connection refused (loopback down)")
        try:
            answers = handle(name, metadata, "loopback", serialize(request), self.now)
        except Exception as exc:  # noqa: BLE001 - as the server answers it
            status = status_of(exc)
            if status.code == grpc.StatusCode.INTERNAL:
                raise
            raise LoopbackError(status.code, status.message) from None
        return (parse(raw) for raw in answers)

    def unary_unary(self, path: str, request_serializer, response_deserializer):
        def call(request, metadata=None, timeout=None):
            return next(
                self._call(path, request_serializer, response_deserializer, request, metadata)
            )

        return call

    def unary_stream(self, path: str, request_serializer, response_deserializer):
        def call(request, metadata=None, timeout=None):
            return list(
                self._call(path, request_serializer, response_deserializer, request, metadata)
            )

        return call

    def close(self) -> None:
        pass


def credential_for(cluster_id: str, now: datetime) -> str:
    """A new credential key for ``cluster_id`` (made by a superuser kept for it)."""
    from django.contrib.auth import get_user_model

    from armada.services.executor_credentials import executor_credential_create

    admin, _ = get_user_model().objects.get_or_create(
        username=CREDENTIAL_ADMIN, defaults={"is_superuser": True, "is_staff": True}
    )
    existing = admin.executor_credentials.filter(cluster_id=cluster_id).count()
    return executor_credential_create(
        actor=admin, cluster_id=cluster_id, name=f"test-{existing}", now=now
    ).key


class ApiAgent(ExecutorAgent):
    """An agent on the loopback channel whose server clock is the time of its tick."""

    def __init__(self, *args: Any, channel: LoopbackChannel, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.channel = channel

    def tick(self, now: datetime) -> TickReport:
        self.channel.now = now
        return super().tick(now)


def api_agent(
    config: ExecutorConfig,
    backend: Backend | None = None,
    *,
    key: str | None = None,
    instance: str = "test",
) -> ApiAgent:
    """An agent for ``config`` on ``backend`` (a fake cluster by default), with a new
    credential for its cluster id unless ``key`` is given."""
    from tests.conftest import T0

    channel = LoopbackChannel()
    channel.now = T0
    if key is None:
        key = credential_for(config.id, T0)
    client = ExecutorApiClient(channel, lambda: key)
    if backend is None:
        backend = FakeBackend(namespaces=config.namespaces)
    return ApiAgent(config, backend, client, instance=instance, channel=channel)


def register_executor(config: ExecutorConfig, now: datetime) -> ApiAgent:
    """Register ``config``'s executor and its nodes at ``now`` as its process would (a
    session and one round through the executor API); returns its agent."""
    agent = api_agent(config)
    agent.tick(now)
    return agent
