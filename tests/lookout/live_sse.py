"""Reading the live grid's Server-Sent Events stream in tests, and writing events for it.

``open_stream`` asks ``GET /live`` as a browser's EventSource does and checks the answer's
head and its first (``ready``) message; ``append`` commits events as the services do.

``SSE`` consumes a streamed response (Django's ``AsyncClient`` answer) in a task and parses
it as a browser does: fields ``id``, ``event``, ``data``, comments, and a blank line that
dispatches. Every dispatched block is kept, including those without data (a keep-alive
that only moves the cursor), with the time it arrived.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

from django.db import transaction
from django.test import AsyncClient

from armada.core.states import EventType
from armada.models import Event
from armada.services.events import NewEvent, events_append
from lookout import live_views
from tests.conftest import T0

ACCEPT = {"Accept": "text/event-stream"}


@dataclass
class Block:
    """One dispatched block of the stream."""

    id: str | None = None
    event: str | None = None
    data: str = ""
    comments: list[str] = field(default_factory=list)
    retry: str | None = None
    arrived: float = 0.0

    @property
    def json(self) -> dict:
        return json.loads(self.data)


def parse(text: str) -> tuple[list[Block], str]:
    """The complete blocks in ``text`` and what is left of it (an unfinished block)."""
    blocks: list[Block] = []
    while "\n\n" in text:
        raw, text = text.split("\n\n", 1)
        block, data = Block(arrived=time.monotonic()), []
        for line in raw.split("\n"):
            if line.startswith(":"):
                block.comments.append(line[1:].strip())
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name in ("id", "event", "retry"):
                setattr(block, name, value)
        block.data = "\n".join(data)
        blocks.append(block)
    return blocks, text


class SSE:
    """A streamed response read in a task; ``take`` the next blocks as they come."""

    def __init__(self, response) -> None:
        self.response = response
        self.blocks: asyncio.Queue[Block] = asyncio.Queue()
        self.ended = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        buffer = ""
        try:
            async for chunk in self.response.streaming_content:
                buffer += chunk.decode() if isinstance(chunk, bytes) else chunk
                blocks, buffer = parse(buffer)
                for block in blocks:
                    await self.blocks.put(block)
        finally:
            self.ended.set()

    async def next(self, timeout: float = 10.0) -> Block:
        return await asyncio.wait_for(self.blocks.get(), timeout)

    async def next_event(self, kind: str = "jobs", timeout: float = 10.0) -> Block:
        """The next block of type ``kind``, skipping keep-alives and other kinds."""
        deadline = time.monotonic() + timeout
        while True:
            block = await self.next(max(deadline - time.monotonic(), 0.001))
            if block.event == kind:
                return block

    async def jobs_until(self, count: int, timeout: float = 20.0) -> list[tuple[int, str, str]]:
        """``(cursor, job id, type)`` of every job in the ``jobs`` messages until ``count``
        jobs have come (in the order the messages named them)."""
        seen: list[tuple[int, str, str]] = []
        deadline = time.monotonic() + timeout
        while len(seen) < count:
            block = await self.next_event(timeout=max(deadline - time.monotonic(), 0.001))
            body = block.json
            assert block.id == str(body["cursor"])
            seen.extend((body["cursor"], job, kind) for job, kind in body["jobs"].items())
        return seen

    async def stop(self) -> None:
        """The client goes away."""
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def append(*events: tuple[str, str, str] | tuple[str, str, str, str]) -> None:
    """Commit events ``(queue, job id, type[, job set])`` in one transaction, in order."""
    with transaction.atomic():
        events_append(
            events=[
                NewEvent(
                    EventType(e[2]),
                    queue=e[0],
                    job_set=e[3] if len(e) > 3 else "set-1",
                    job_id=e[1],
                    created=T0,
                )
                for e in events
            ]
        )


async def client_of(user) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(user)
    return client


async def open_stream(client: AsyncClient, path: str = "/live", **headers) -> tuple[SSE, int]:
    """The stream and the cursor its ``ready`` message starts from."""
    response = await client.get(path, headers={**ACCEPT, **headers})
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/event-stream")
    assert response["Cache-Control"] == "no-cache"
    stream = SSE(response)
    ready = await stream.next()
    assert ready.event == "ready" and ready.retry == str(live_views.RETRY_MS)
    assert ready.id == str(ready.json["cursor"])
    return stream, ready.json["cursor"]


def last_id() -> int:
    return Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
