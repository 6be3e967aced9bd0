"""A gRPC server for tests: a ``WireServer`` in this process on its own event loop, and calls
to it with real gRPC clients and Armada's credentials."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest
from armada_client.armada import submit_pb2, submit_pb2_grpc

from armada.wire.registry import Operation
from armada.wire.server import MAX_MESSAGE_BYTES, WireServer

TIMEOUT = 30  # seconds a call may take on a busy machine


class InProcessServer:
    """A WireServer on its own event loop in a thread, on a free port of 127.0.0.1."""

    def __init__(self, operations: dict[str, Operation] | None = None) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(ThreadPoolExecutor(4, thread_name_prefix="test-grpc"))
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server, self.port = self.run(self._start(operations))
        self.target = f"127.0.0.1:{self.port}"
        self.channel = grpc.insecure_channel(
            self.target,
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ],
        )

    @staticmethod
    async def _start(operations) -> tuple[WireServer, int]:
        server = WireServer(operations)
        port = server.add_port("127.0.0.1:0")
        await server.start()
        return server, port

    def run(self, coroutine, timeout: float = TIMEOUT) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop_later(self, grace: float):
        """Start a graceful stop; returns its future."""
        return asyncio.run_coroutine_threadsafe(self.server.stop(grace), self.loop)

    def close(self) -> None:
        from armada.api.wakeups import hub_close

        self.channel.close()
        self.run(self.server.stop(0))
        self.run(hub_close())  # the loop goes: its Redis subscription goes with it
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()


def basic(username: str, password: str) -> tuple[tuple[str, str]]:
    raw = base64.b64encode(f"{username}:{password}".encode()).decode()
    return (("authorization", f"Basic {raw}"),)


def bearer(key: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {key}"),)


def get_queue(server: InProcessServer, metadata=(), name: str = "q") -> submit_pb2.Queue:
    stub = submit_pb2_grpc.SubmitStub(server.channel)
    return stub.GetQueue(submit_pb2.QueueGetRequest(name=name), metadata=metadata, timeout=TIMEOUT)


def failure(call: Callable[[], Any]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value
