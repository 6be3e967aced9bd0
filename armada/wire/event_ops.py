"""Armada's Event service: ``GetJobSetEvents`` and ``Watch``, the events of one job set as
``api.EventStreamMessage`` (``wire.event_messages``).

As Armada's event server does:
- the queue must exist (NOT_FOUND) and the caller must have ``watch`` on it, or the global
  ``watch_all_events`` (PERMISSION_DENIED), checked in that order;
- ``errorIfMissing``: NOT_FOUND when the job set has no event at all (a job set exists once
  something was submitted to it); checked after the permission, so that it tells nothing to
  a caller who may not watch the queue. ``Watch`` always sets it;
- ``from_message_id`` is exclusive: the events after that id follow, so a client that
  reconnects with the last id it saw gets neither a gap nor a duplicate; empty means from
  the start. Our ids are whole numbers; anything else is INVALID_ARGUMENT;
- without ``watch`` the stream ends once it has sent every event that exists; with it, it
  follows new events until the client goes away.

The stream holds no database connection while it waits, and is woken by the same Redis
wake-ups as our REST stream (``api.event_follow``). While it is open, its caller's
credential and ``watch`` are checked again every few seconds (``api.stream_guard``): the
stream ends with UNAUTHENTICATED once the credential lets no one in (a token revoked or
expired, a user deactivated or deleted, a password changed, a session ended), with
PERMISSION_DENIED once ``watch`` is gone, and with NOT_FOUND once the queue is deleted;
the message says which. The gateway's form of the stream ends with grpc-gateway's stream
error (401, 403 or 404) instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from armada_client.armada import event_pb2
from asgiref.sync import sync_to_async
from django.db import connection

from armada.api.event_follow import follow
from armada.api.stream_guard import AccessGuard
from armada.api.stream_metrics import subscription
from armada.models import Queue
from armada.services.authz import require_queue_verb
from armada.services.errors import NotFound, ValidationFailed
from armada.services.events import queue_events
from armada.services.stream_access import credential_of
from armada.wire.event_messages import event_messages
from armada.wire.registry import Call, stream

#: How often a waiting stream's follower comes back empty-handed (no read): gRPC sends
#: nothing then (HTTP/2 keeps the connection), so only the stream's own bookkeeping runs.
TICK_SECONDS = 60.0


@stream("api.Event/GetJobSetEvents")
async def get_job_set_events(
    call: Call, request: event_pb2.JobSetRequest
) -> AsyncIterator[event_pb2.EventStreamMessage]:
    messages = _job_set_events(
        call,
        queue=request.queue,
        job_set=request.id,
        after=_cursor(request.from_message_id, "fromMessageId"),
        watch=request.watch,
        error_if_missing=request.errorIfMissing,
        job_set_field="id",
    )
    async with contextlib.aclosing(messages):  # closed with this stream, not when collected
        async for message in messages:
            yield message


@stream("api.Event/Watch")
async def watch(
    call: Call, request: event_pb2.WatchRequest
) -> AsyncIterator[event_pb2.EventStreamMessage]:
    """Armada's older form of a watching ``GetJobSetEvents`` (with ``errorIfMissing``)."""
    messages = _job_set_events(
        call,
        queue=request.queue,
        job_set=request.job_set_id,
        after=_cursor(request.from_id, "fromId"),
        watch=True,
        error_if_missing=True,
        job_set_field="jobSetId",
    )
    async with contextlib.aclosing(messages):  # closed with this stream, not when collected
        async for message in messages:
            yield message


def _cursor(raw: str, field: str) -> int:
    """The event id to start after: empty for the start, else a whole number."""
    text = raw.strip()
    if not text:
        return 0
    if not text.isascii() or not text.isdigit():
        raise ValidationFailed.one(
            field, "must be the id of an event of this stream (a whole number), or empty"
        )
    return int(text)


async def _job_set_events(
    call: Call,
    *,
    queue: str,
    job_set: str,
    after: int,
    watch: bool,
    error_if_missing: bool,
    job_set_field: str,
) -> AsyncIterator[event_pb2.EventStreamMessage]:
    if not queue:
        raise ValidationFailed.one("queue", "must name a queue")
    if not job_set:
        raise ValidationFailed.one(job_set_field, "must name a job set")
    await sync_to_async(_check_and_release, thread_sensitive=False)(
        call.actor, queue, job_set, error_if_missing
    )
    batches = follow(
        queue,
        job_set,
        after=after,
        watch=watch,
        convert=event_messages,
        tick=TICK_SECONDS,
        guard=AccessGuard(call.credential or credential_of(call.actor), queue),
    )
    async with subscription(call.actor, watch=watch), contextlib.aclosing(batches):
        async for batch in batches:
            for message in batch.items:
                yield message


def _check_and_release(actor: Any, queue: str, job_set: str, error_if_missing: bool) -> None:
    try:
        _check(actor, queue, job_set, error_if_missing)
    finally:
        connection.close()


def _check(actor: Any, queue: str, job_set: str, error_if_missing: bool) -> None:
    """The queue exists, the caller may watch it, and (when asked) the job set has events."""
    row = Queue.objects.filter(name=queue).first()
    if row is None:
        raise NotFound(f"queue {queue!r} does not exist")
    require_queue_verb(actor, row, "watch")
    if error_if_missing and not queue_events(queue).filter(job_set=job_set).exists():
        raise NotFound(f"job set {job_set!r} of queue {queue!r} does not exist (it has no events)")
