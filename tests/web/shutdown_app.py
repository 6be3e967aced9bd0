"""A small ASGI application for the web server's shutdown tests, served by uvicorn with our
protocol (``armada.webserver.HTTPProtocol``), as the web process serves Django's.

- ``GET /slow?seconds=S``: marks ``slow started`` (see below), answers ``done`` after S seconds;
- ``GET /stream``: a line every 0.1 s, forever; like Django's streaming responses it listens
  for ``http.disconnect`` and then stops, appending ``disconnect`` to the file named by
  ``SHUTDOWN_APP_MARKS``;
- anything else: ``ok`` at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from urllib.parse import parse_qs


def _mark(text: str) -> None:
    path = os.environ.get("SHUTDOWN_APP_MARKS")
    if path:
        with open(path, "a") as f:
            f.write(text + "\n")


async def _start(send, content_type: bytes = b"text/plain") -> None:
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", content_type)]}
    )


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["path"] == "/slow":
        seconds = float(parse_qs(scope["query_string"].decode()).get("seconds", ["1"])[0])
        _mark("slow started")
        await asyncio.sleep(seconds)
        await _start(send)
        await send({"type": "http.response.body", "body": b"done"})
        return
    if scope["path"] == "/stream":
        await _start(send, b"application/x-ndjson")
        gone = asyncio.Event()

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        listener = asyncio.create_task(listen())
        line = 0
        while not gone.is_set():
            line += 1
            await send(
                {"type": "http.response.body", "body": b'{"line": %d}\n' % line, "more_body": True}
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(gone.wait(), 0.1)
        await listener
        _mark("disconnect")
        return
    await _start(send)
    await send({"type": "http.response.body", "body": b"ok"})
