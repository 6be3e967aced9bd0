"""The gRPC server: every operation of ``wire.registry`` under its Armada service and method
name, on ``grpc.aio``.

The handlers are built from the table, one generic handler per service, so an operation
registered anywhere is served without code here. For each call:

1. The caller is authenticated from the call's metadata (``wire.grpc_auth``).
2. The request bytes are parsed as the method's request type and checked
   (``wire.inputs``): a garbled message or a NUL in a string is INVALID_ARGUMENT naming the
   field, never INTERNAL.
3. A **unary** operation runs, with steps 1 and 2, in one hop to a worker thread: the
   thread closes its database connection before it returns (no connection is held between
   calls), and it serializes the response too, so the event loop only moves bytes.
   A **streaming** operation is an async generator iterated on the loop (its reads take
   worker threads of their own and give their connections back, see ``wire.registry``).
4. A service error becomes the status ``wire.errors`` gives it; the database's own errors
   become UNAVAILABLE; anything else is a bug: logged with its traceback and answered
   INTERNAL with a message that tells the caller nothing about the inside. A client that
   cancels a stream (even while a message is being written to it) is no bug: a DEBUG line.

Threads: every worker-thread hop (unary calls, authentication, a stream's reads) runs on
the loop's default executor, which :func:`serve` bounds to ``grpc.workerThreads``. Calls
beyond that wait in its queue; event streams waiting for events hold no thread at all.

Stopping (:meth:`WireServer.stop`): new calls are refused at once; calls in flight get the
grace period; event streams, which would never end by themselves, end at once with
UNAVAILABLE, and their clients reconnect from the last message id they saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone

from armada.services.dbfaults import DATABASE_ERRORS, connection_lost, connection_reset
from armada.services.errors import Unavailable
from armada.tls import ServerTls
from armada.wire import grpc_auth
from armada.wire.errors import WireError, wire_error
from armada.wire.inputs import check_message, decode
from armada.wire.registry import Call, Operation, load_operations

log = logging.getLogger(__name__)

#: Big enough for a submit of 1,000 jobs with large pod specs, and its response.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
INTERNAL_MESSAGE = "internal error: the server could not complete the call; its log says why"
SHUTTING_DOWN = "the server is shutting down; connect again (from the last message id you saw)"
DATABASE_LOST = (
    "the database connection was lost and the call was not confirmed: any change was rolled "
    "back unless the connection broke while committing; sending it again is safe (a cancel, "
    "reprioritize or update repeats harmlessly, a create answers ALREADY_EXISTS if it was "
    "stored)"
)
DATABASE_DOWN = "the database is unavailable; nothing was written; try again shortly"

SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    # A port another process holds must fail start-up, not be shared with it.
    ("grpc.so_reuseport", 0),
]


class CannotListen(Exception):
    """The server's address cannot be bound (taken, or not this machine's)."""


def listen(
    server: grpc.aio.Server, address: str, credentials: grpc.ServerCredentials | None = None
) -> int:
    """Have ``server`` listen on ``address`` (port 0 picks one), with TLS when
    ``credentials`` are given; the port bound. CannotListen when it cannot be bound."""
    try:
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
    except RuntimeError as exc:
        raise CannotListen(f"cannot listen on {address}: {exc}") from None
    if not port:
        raise CannotListen(f"cannot listen on {address}")
    return port


def status_of(exc: BaseException) -> WireError:
    """The status a failed call answers with; a bug is logged by the caller."""
    found = wire_error(exc)
    if found is not None:
        return found
    if isinstance(exc, DATABASE_ERRORS):
        return WireError(grpc.StatusCode.UNAVAILABLE, 503, DATABASE_DOWN)
    return WireError(grpc.StatusCode.INTERNAL, 500, INTERNAL_MESSAGE)


def database_unavailable(exc: BaseException) -> Unavailable:
    """What a database error in a call means for its caller (said from the thread whose
    connection failed, which is the only one that can tell a lost connection)."""
    lost = connection_lost(exc)
    connection_reset()
    return Unavailable(DATABASE_LOST if lost else DATABASE_DOWN)


def run_unary(op: Operation, metadata: Any, peer: str, raw: bytes, now: Any) -> bytes:
    """One unary call, start to finish, on a worker thread: authenticate, parse, check, run,
    serialize; the thread's database connection is closed before it returns."""
    try:
        actor = grpc_auth.authenticate(metadata, peer, anonymous=op.anonymous)
        request = decode(op.request_class, raw)
        check_message(request, raw)
        response = op.func(Call(actor=actor, now=now, peer=peer), request)
        return response.SerializeToString()
    except DATABASE_ERRORS as exc:
        raise database_unavailable(exc) from exc
    finally:
        connection.close()


class WireServer:
    """A ``grpc.aio`` server for ``operations`` (default: every registered operation)."""

    def __init__(self, operations: Mapping[str, Operation] | None = None) -> None:
        self.operations = dict(load_operations() if operations is None else operations)
        self.server = grpc.aio.server(options=SERVER_OPTIONS)
        self.server.add_generic_rpc_handlers(tuple(self._handlers()))
        self._stopping: asyncio.Future[None] | None = None
        self._caller = sync_to_async(grpc_auth.caller, thread_sensitive=False)
        self._run_unary = sync_to_async(run_unary, thread_sensitive=False)

    # --- building ----------------------------------------------------------------------

    def _handlers(self) -> list[grpc.GenericRpcHandler]:
        by_service: dict[str, dict[str, grpc.RpcMethodHandler]] = defaultdict(dict)
        for op in self.operations.values():
            service, _, method = op.name.partition("/")
            # Requests arrive as bytes (parsed by ``wire.inputs``, so a bad one is
            # INVALID_ARGUMENT); unary responses leave as bytes serialized on the thread.
            if op.streaming:
                handler = grpc.unary_stream_rpc_method_handler(
                    self._stream_behaviour(op),
                    response_serializer=op.response_class.SerializeToString,
                )
            else:
                handler = grpc.unary_unary_rpc_method_handler(self._unary_behaviour(op))
            by_service[service][method] = handler
        return [grpc.method_handlers_generic_handler(s, m) for s, m in by_service.items()]

    def _unary_behaviour(self, op: Operation):
        async def behaviour(raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
            now = timezone.now()
            try:
                return await self._run_unary(
                    op, context.invocation_metadata(), context.peer(), raw, now
                )
            except Exception as exc:  # noqa: BLE001 - every failure gets a status
                await self._abort(context, op, exc)  # raises
                raise

        return behaviour

    def _stream_behaviour(self, op: Operation):
        async def behaviour(raw: bytes, context: grpc.aio.ServicerContext) -> None:
            now, peer = timezone.now(), context.peer()
            try:
                actor, credential = await self._caller(
                    context.invocation_metadata(), peer, anonymous=op.anonymous
                )
                request = decode(op.request_class, raw)
                check_message(request, raw)
            except Exception as exc:  # noqa: BLE001
                await self._abort(context, op, exc)
                return
            call = Call(actor=actor, now=now, peer=peer, credential=credential)
            pump = asyncio.ensure_future(self._pump(op, call, request, context))
            try:
                await asyncio.wait({pump, self.stopping}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not pump.done():  # shutting down, or the client went away
                    pump.cancel()
                    await asyncio.gather(pump, return_exceptions=True)
                elif not pump.cancelled():
                    pump.exception()  # looked at here, whatever happens to this call
            if context.cancelled():
                # The client went away, maybe while a message was being written to it: the
                # write's error is no bug, and there is no one left to answer.
                log.debug("%s: the client cancelled the stream", op.name)
                return
            if pump.cancelled():
                await context.abort(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
            failure = pump.exception()
            if failure is not None:
                await self._abort(context, op, failure)

        return behaviour

    @staticmethod
    async def _pump(op: Operation, call: Call, request: Any, context: Any) -> None:
        messages = op.func(call, request)
        try:
            async for message in messages:
                await context.write(message)
        finally:
            await messages.aclose()

    @staticmethod
    async def _abort(context: grpc.aio.ServicerContext, op: Operation, exc: BaseException):
        status = status_of(exc)
        if status.code == grpc.StatusCode.INTERNAL:
            log.error("%s failed", op.name, exc_info=exc)
        await context.abort(status.code, status.message)

    # --- running -----------------------------------------------------------------------

    @property
    def stopping(self) -> asyncio.Future[None]:
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_future()
        return self._stopping

    def add_port(self, address: str, tls: ServerTls | None = None) -> int:
        """Listen on ``address`` (``host:port``; port 0 picks a free one), with TLS when
        ``tls`` is given; the port bound. Raises CannotListen when it cannot be bound,
        TlsFileError when the certificate or key cannot be used."""
        return listen(self.server, address, tls.credentials() if tls else None)

    async def start(self) -> None:
        await self.server.start()

    async def stop(self, grace: float) -> None:
        """Refuse new calls, end event streams now, give unary calls ``grace`` seconds."""
        if not self.stopping.done():
            self.stopping.set_result(None)
        await self.server.stop(grace)


async def serve(
    address: str,
    *,
    worker_threads: int,
    grace_period: float,
    tls: ServerTls | None = None,
    announce=print,
) -> None:
    """Serve every registered operation on ``address`` (with TLS when ``tls`` is given)
    until SIGTERM or SIGINT, then stop gracefully (``WireServer.stop``)."""
    await serve_until_signalled(
        WireServer,
        lambda server: server.add_port(address, tls),
        name="grpc",
        what=lambda server, port: (
            f"{len(server.operations)} operations of Armada's API on "
            f"{address.rpartition(':')[0]}:{port} "
            f"({'TLS' if tls else 'plaintext'}, {worker_threads} worker threads)"
        ),
        worker_threads=worker_threads,
        grace_period=grace_period,
        announce=announce,
    )


async def serve_until_signalled(
    make: Callable[[], Any],
    listen: Callable[[Any], int],
    *,
    name: str,
    what: Callable[[Any, int], str],
    worker_threads: int,
    grace_period: float,
    announce: Callable[[str], None],
) -> None:
    """Run a server process's life: bound worker threads for its calls, ``make()`` a server
    (``start``/``stop(grace)``), ``listen(server)`` for its port, serve until SIGTERM or
    SIGINT, then give calls in flight ``grace_period``. ``name`` starts each line it says."""
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=worker_threads, thread_name_prefix=f"{name}-call")
    loop.set_default_executor(executor)
    server = make()
    port = listen(server)
    await server.start()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    announce(f"{name}: serving {what(server, port)}")
    await stop.wait()
    announce(f"{name}: stopping (a call still in flight gets up to {grace_period:g} s to finish)")
    await server.stop(grace_period)
    with contextlib.suppress(Exception):
        executor.shutdown(wait=False, cancel_futures=True)
    announce(f"{name}: stopped")
