"""Reading an open NDJSON event stream of ours (Django's ``AsyncClient`` response) in a task."""

from __future__ import annotations

import asyncio
import json
import time


class StreamReader:
    """Consumes a streamed NDJSON response in a task: each event with its arrival time
    (``take``), every event so far (``events``), and ``drained``, set at the first blank
    line (the server's word that the client holds every event committed so far)."""

    def __init__(self, response) -> None:
        self.lines: asyncio.Queue[tuple[float, dict]] = asyncio.Queue()
        self.events: list[dict] = []
        self.drained = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run(response))

    async def _run(self, response) -> None:
        buffer = ""
        async for chunk in response.streaming_content:
            buffer += chunk.decode() if isinstance(chunk, bytes) else chunk
            while "\n" in buffer:
                line, buffer = buffer.split("\n", 1)
                if not line.strip():
                    self.drained.set()
                    continue
                event = json.loads(line)
                self.events.append(event)
                await self.lines.put((time.monotonic(), event))

    async def take(self, count: int, timeout: float = 10.0) -> list[tuple[float, dict]]:
        return [await asyncio.wait_for(self.lines.get(), timeout) for _ in range(count)]

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
