"""The web server's HTTP protocol: uvicorn's own, with Nagle's algorithm turned off on every
connection it accepts.

Start the web process with it (``WEB_COMMAND`` spells the line out)::

    uvicorn armada.asgi:application --workers 2 --http armada.webserver:HTTPProtocol

Why: uvicorn writes a response's head and its body in two sends. With Nagle on, the kernel
holds the body back until the client acknowledges the head, and a client that delays its ACK
(Linux does, for up to 40 ms) makes every kept-alive request 40 ms slower. asyncio turns
Nagle off only for sockets it made itself (``proto == IPPROTO_TCP``); with ``--workers N``
uvicorn binds the listening socket itself with ``proto`` 0, so the accepted sockets keep
Nagle on (measured: 48 ms against 5 ms for the same read; see ``bench/RESULTS.md``). uvloop
sets ``TCP_NODELAY`` on its own, but the asyncio loop (no uvloop, or ``--loop asyncio``) does
not, so the protocol sets it on whatever socket it is given.
"""

from __future__ import annotations

import asyncio
import socket

from uvicorn.protocols.http import h11_impl as uvicorn_h11
from uvicorn.protocols.http.auto import AutoHTTPProtocol

#: The production command line of one web process (add ``--host``/``--port``/``--workers``).
WEB_COMMAND = ["uvicorn", "armada.asgi:application", "--http", "armada.webserver:HTTPProtocol"]


def set_nodelay(transport: asyncio.BaseTransport) -> None:
    """Turn Nagle off on a TCP transport's socket; other transports are left alone."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def nodelay(protocol_class: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """``protocol_class`` with ``TCP_NODELAY`` set on each connection it is given."""

    class NoDelay(protocol_class):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
            set_nodelay(transport)
            super().connection_made(transport)

    NoDelay.__name__ = NoDelay.__qualname__ = f"NoDelay{protocol_class.__name__}"
    return NoDelay


#: httptools when it is installed (``uvicorn[standard]``), else h11, as uvicorn's ``auto``
#: chooses; either way with Nagle off. This is the one to use.
HTTPProtocol = nodelay(AutoHTTPProtocol)
#: h11 with Nagle off, for comparison (``bench/web_latency.py``) or where httptools is missing.
H11Protocol = nodelay(uvicorn_h11.H11Protocol)
