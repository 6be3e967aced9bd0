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

Graceful shutdown (SIGTERM, or Ctrl-C): uvicorn stops accepting connections, closes idle
ones and lets requests in flight finish; ``--timeout-graceful-shutdown`` (``WEB_COMMAND``
gives ``SHUTDOWN_SECONDS``) bounds the wait, after which uvicorn cancels what is left. An
event stream that follows new events never finishes by itself, so the protocol ends every
response still open ``STREAM_MARGIN`` before that bound (and at ``SHUTDOWN_SECONDS`` when
no bound was given): the application is told that the client has gone (Django closes the
stream's generator, which releases what it holds) and the connection is closed without the
response's end, so that a client sees a dropped stream, not a finished one, and reconnects
from its cursor to another web process (``armadactl watch`` and browsers do).

HTTPS (``web.tls`` of the configuration, ``tls_options``): uvicorn wraps each connection in
asyncio's TLS transport and hands that to the protocol. The transport answers
``get_extra_info("socket")`` with the TCP socket beneath it, so Nagle is turned off there
just the same, and closing it at shutdown ends the TLS session (close_notify) before the
connection, which a client still sees as a stream dropped before its end.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

from uvicorn.protocols.http import h11_impl as uvicorn_h11
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from armada.tls import ServerTls

log = logging.getLogger(__name__)

#: Seconds a web process gives requests and streams in flight after SIGTERM.
SHUTDOWN_SECONDS = 10
#: Open responses are ended this long before that bound, ahead of uvicorn's cancelling.
STREAM_MARGIN = 1.0

#: The production command line of one web process (add ``--host``/``--port``/``--workers``).
WEB_COMMAND = [
    "uvicorn",
    "armada.asgi:application",
    "--http",
    "armada.webserver:HTTPProtocol",
    "--timeout-graceful-shutdown",
    str(SHUTDOWN_SECONDS),
]


def tls_options(tls: ServerTls | None) -> list[str]:
    """The options that give ``WEB_COMMAND`` HTTPS with ``tls`` (none for plain HTTP). The
    files are checked first (``armada.tls.TlsFileError`` names the one at fault), so that a
    bad one stops start-up with one line rather than a traceback from each worker."""
    if tls is None:
        return []
    tls.check()
    return tls.uvicorn_options()


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


def stream_deadline(bound: float | None) -> float:
    """Seconds after the start of shutdown at which responses still open are ended."""
    return max(0.0, (SHUTDOWN_SECONDS if bound is None else bound) - STREAM_MARGIN)


def graceful(protocol_class: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """``protocol_class`` ending, at shutdown, the response it still serves after
    ``stream_deadline`` (see the module docstring); uvicorn's h11 and httptools protocols
    share the attributes used here (``cycle``, ``loop``, ``config``, ``transport``)."""

    class Graceful(protocol_class):  # type: ignore[misc, valid-type]
        def shutdown(self) -> None:
            super().shutdown()
            cycle: Any = self.cycle
            if cycle is not None and not cycle.response_complete:
                delay = stream_deadline(self.config.timeout_graceful_shutdown)
                self.loop.call_later(delay, self._end_open_response, cycle)

        def _end_open_response(self, cycle: Any) -> None:
            if cycle.response_complete or cycle.disconnected:
                return
            scope = cycle.scope
            log.info(
                "shutting down: ending the response to %s %s, still open",
                scope.get("method"),
                scope.get("path"),
            )
            # As if the client had gone: the application's receive() answers
            # http.disconnect and its further sends are dropped.
            cycle.disconnected = True
            cycle.message_event.set()
            self.transport.close()

    Graceful.__name__ = Graceful.__qualname__ = f"Graceful{protocol_class.__name__}"
    return Graceful


#: httptools when it is installed (``uvicorn[standard]``), else h11, as uvicorn's ``auto``
#: chooses; either way with Nagle off and the shutdown above. This is the one to use.
HTTPProtocol = graceful(nodelay(AutoHTTPProtocol))
#: h11 with Nagle off, for comparison (``bench/web_latency.py``) or where httptools is missing.
H11Protocol = graceful(nodelay(uvicorn_h11.H11Protocol))
