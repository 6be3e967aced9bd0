"""Reading Armada's event streams in tests: GetJobSetEvents and Watch called as the
transports call them (the registered stream with a ``Call`` and a message), and the events
stored for a job set."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from armada_client.armada import event_pb2

from armada.models import Event
from armada.wire.registry import Call, load_operations
from tests.conftest import T0

GET = "api.Event/GetJobSetEvents"
WATCH = "api.Event/Watch"


def events_of(user, request, name: str = GET) -> AsyncIterator[event_pb2.EventStreamMessage]:
    return load_operations()[name].func(Call(actor=user, now=T0), request)


def request(**fields) -> event_pb2.JobSetRequest:
    return event_pb2.JobSetRequest(**{"queue": "demo", "id": "set-1", **fields})


async def collect(stream: AsyncIterator, count: int | None = None, timeout: float = 10.0) -> list:
    """The first ``count`` messages (every message when None, the stream must end)."""
    out = []
    while count is None or len(out) < count:
        try:
            out.append(await asyncio.wait_for(anext(stream), timeout))
        except StopAsyncIteration:
            break
    await stream.aclose()
    return out


def read_all(user, req, name: str = GET) -> list[event_pb2.EventStreamMessage]:
    return asyncio.run(collect(events_of(user, req, name)))


def failure(user, req, name: str = GET) -> Exception:
    with pytest.raises(Exception) as raised:
        read_all(user, req, name)
    return raised.value


def stored_ids(job_set: str = "set-1") -> list[str]:
    rows = Event.objects.filter(queue="demo", job_set=job_set).order_by("id")
    return [str(i) for i in rows.values_list("id", flat=True)]
