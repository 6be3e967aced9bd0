"""The executor API's gRPC server (``executorapi.ExecutorApi``), on a port of its own.

It listens apart from Armada's public API so that it can be opened to clusters elsewhere,
with TLS of its own, while the user API stays where it is. Each call, unary or the round's
stream, is done whole on a worker thread (``handle``: authenticate, parse, check, run,
serialize) and that thread's database connection is closed before the answer leaves
(``run_call``), so no connection is held between calls and the event loop only moves bytes.
Errors become statuses as on the public API (``wire.server.status_of``): a service's refusal
its code, a database failure UNAVAILABLE (the executor keeps its reports and sends them
again), a bug INTERNAL with a message that says nothing of the inside.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import grpc
from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone

from armada.services.dbfaults import DATABASE_ERRORS
from armada.tls import ServerTls  # shared with the grpc and web ports
from armada.wire.executor_ops import OPERATIONS, SERVICE, ExecutorCall, authenticate_executor
from armada.wire.inputs import check_message, decode
from armada.wire.server import (
    SERVER_OPTIONS,
    database_unavailable,
    listen,
    serve_until_signalled,
    status_of,
)

log = logging.getLogger(__name__)


def handle(name: str, metadata: Any, peer: str, raw: bytes, now: Any) -> list[bytes]:
    """One call, in the calling thread: the serialized responses (one for a unary call)."""
    op = OPERATIONS[name]
    identity = authenticate_executor(metadata, now)
    request = decode(op.request_class, raw)
    check_message(request, raw)
    call = ExecutorCall(identity=identity, now=now, peer=peer)
    return [m.SerializeToString() for m in op.responses(call, request)]


def run_call(name: str, metadata: Any, peer: str, raw: bytes, now: Any) -> list[bytes]:
    """``handle`` on a worker thread, its database connection closed before it returns."""
    try:
        return handle(name, metadata, peer, raw, now)
    except DATABASE_ERRORS as exc:
        raise database_unavailable(exc) from exc
    finally:
        connection.close()


class ExecutorApiServer:
    def __init__(self) -> None:
        self.server = grpc.aio.server(options=SERVER_OPTIONS)
        self._run = sync_to_async(run_call, thread_sensitive=False)
        handlers = {}
        for name, op in OPERATIONS.items():
            if op.streaming:
                handlers[name] = grpc.unary_stream_rpc_method_handler(self._stream(name))
            else:
                handlers[name] = grpc.unary_unary_rpc_method_handler(self._unary(name))
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),)
        )

    async def _answer(self, name: str, raw: bytes, context: grpc.aio.ServicerContext):
        try:
            return await self._run(
                name, context.invocation_metadata(), context.peer(), raw, timezone.now()
            )
        except Exception as exc:  # noqa: BLE001 - every failure gets a status
            status = status_of(exc)
            if status.code == grpc.StatusCode.INTERNAL:
                log.error("executor API %s failed", name, exc_info=exc)
            await context.abort(status.code, status.message)
            raise

    def _unary(self, name: str) -> Callable:
        async def behaviour(raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return (await self._answer(name, raw, context))[0]

        return behaviour

    def _stream(self, name: str) -> Callable:
        async def behaviour(raw: bytes, context: grpc.aio.ServicerContext):
            for message in await self._answer(name, raw, context):
                yield message

        return behaviour

    def add_port(self, address: str, tls: ServerTls | None = None) -> int:
        """Listen on ``address`` (port 0 picks one), with TLS when ``tls`` is given; the port."""
        return listen(self.server, address, tls.credentials() if tls else None)

    async def start(self) -> None:
        await self.server.start()

    async def stop(self, grace: float) -> None:
        await self.server.stop(grace)


async def serve(
    address: str,
    *,
    worker_threads: int,
    grace_period: float,
    tls: ServerTls | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the executor API on ``address`` until SIGTERM or SIGINT, then stop gracefully."""
    if tls is not None and not tls.setting:
        tls = replace(tls, setting="executorApi.tls")  # named in messages about its files
    await serve_until_signalled(
        ExecutorApiServer,
        lambda server: server.add_port(address, tls),
        name="executor-api",
        what=lambda _, port: (
            f"the executor API on {address.rpartition(':')[0]}:{port} "
            f"({'TLS' if tls else 'plaintext'}, {worker_threads} worker threads)"
        ),
        worker_threads=worker_threads,
        grace_period=grace_period,
        announce=announce,
    )
