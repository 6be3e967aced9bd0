"""The web server's protocol turns Nagle off on accepted sockets, including the case that
cost 40 ms a request: a listening socket bound by uvicorn itself (``--workers N``, socket
``proto`` 0) served by the asyncio loop, which then leaves Nagle on."""

from __future__ import annotations

import asyncio
import socket

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from armada.webserver import H11Protocol, HTTPProtocol


async def tiny_app(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def serve_once(protocol_class: type[asyncio.Protocol]) -> tuple[int, bytes]:
    """Serve one request over a listening socket made as uvicorn's multi-worker path makes
    it; return the accepted socket's TCP_NODELAY and the response."""
    config = Config(tiny_app, lifespan="off", log_level="warning")
    config.load()
    state = ServerState()
    nodelay: list[int] = []

    def factory() -> asyncio.Protocol:
        protocol = protocol_class(config=config, server_state=state, app_state={})
        made = protocol.connection_made

        def spy(transport: asyncio.BaseTransport) -> None:
            made(transport)
            sock = transport.get_extra_info("socket")
            nodelay.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        protocol.connection_made = spy  # type: ignore[method-assign]
        return protocol

    listener = socket.socket(family=socket.AF_INET)  # as uvicorn's Config.bind_socket
    listener.bind(("127.0.0.1", 0))
    server = await asyncio.get_running_loop().create_server(factory, sock=listener)
    try:
        port = listener.getsockname()[1]
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
        writer.write(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        response = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        return nodelay[0], response
    finally:
        server.close()
        await server.wait_closed()


def test_the_asyncio_loop_alone_leaves_nagle_on_for_a_socket_bound_by_uvicorn():
    """The cause, kept as a test: if asyncio or uvicorn ever fix it, this says so."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    nodelay, response = asyncio.run(serve_once(AutoHTTPProtocol))
    assert response.startswith(b"HTTP/1.1 200") and b"\r\nok\r\n" in response
    assert nodelay == 0


@pytest.mark.parametrize("protocol", [HTTPProtocol, H11Protocol], ids=lambda p: p.__name__)
def test_our_protocols_turn_nagle_off_on_the_accepted_socket(protocol):
    nodelay, response = asyncio.run(serve_once(protocol))
    assert response.startswith(b"HTTP/1.1 200") and b"\r\nok\r\n" in response
    assert nodelay != 0
