"""The jobs grid's live updates: ``GET /live?after=<event id>``, a Server-Sent Events stream.

The stream follows the whole event log (``armada.models.Event``) after a cursor and tells
the page which jobs changed, keeping only the events of the queues the viewer may watch
(``services.authz.watchable_queues``, read when the stream opens and again every
``RECHECK_SECONDS``; a viewer who has logged out meanwhile gets the stream ended). Each
read's events are coalesced into messages of at most ``MAX_JOBS`` job ids::

    id: 1234
    event: jobs
    data: {"cursor": 1234, "jobs": {"<job id>": "<type of its last event>", ...}}

The ``id`` is the cursor after the message, so an ``EventSource`` that reconnects sends it
back as ``Last-Event-ID`` and misses nothing nor gets anything twice (ids become visible in
order, see ``services.events``). The stream opens with ``event: ready`` carrying the cursor
it starts from: ``after``, else the last event's id when the stream opens (a page catches up
on what happened before by fetching its rows once). A read that finds only other queues'
events sends no message; the cursor it reached goes out with the next keep-alive (a comment
plus an ``id:`` line, which moves ``Last-Event-ID`` without firing an event), sent every
``HEARTBEAT_SECONDS`` of silence.

Like the job-set streams (``api.event_follow``) it holds no database connection while it
waits: each read runs on the loop's shared executor and closes its connection, then the
stream waits for a Redis wake-up (``api.wakeups.register_any``: any commit anywhere) or the
safety poll. Reads are at least ``MIN_READ_INTERVAL`` apart, so a busy log is read in
batches rather than once per commit. The stream ends after ``STREAM_SECONDS`` or when the
process is stopping (``api.wakeups.stopping``), both with ``event: end``, after which the
browser reconnects from its cursor by itself; and without one when the database cannot be
read, when the viewer has logged out, or when the client goes away.

Served by uvicorn (ASGI) the stream holds no thread while it waits. Under WSGI (runserver,
the tests' live server) a response leaves only once it is complete, so there the answer is
``ready``, one read's messages and ``end``: the browser comes back after ``RETRY_MS``, and
the stream is a poll.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user
from django.contrib.auth.views import redirect_to_login
from django.core.handlers.asgi import ASGIRequest
from django.db import connection
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    JsonResponse,
    StreamingHttpResponse,
)

from armada.api import wakeups
from armada.models import Event
from armada.services.authz import watchable_queues
from armada.services.dbfaults import DATABASE_ERRORS, read_again_if_lost
from armada.web.inputs import whole_number

log = logging.getLogger(__name__)

#: Job ids in one message at most (the rows endpoint takes as many); the rest follow.
MAX_JOBS = 200
#: Events read at once at most.
READ_LIMIT = 2000
#: Longest wait between reads while Redis wake-ups are live (a safety net only) and without.
POLL_SECONDS = 2.0
POLL_SECONDS_WITHOUT_WAKEUPS = 0.5
#: Shortest time between two reads: commits arriving meanwhile are read together.
MIN_READ_INTERVAL = 0.1
HEARTBEAT_SECONDS = 15.0
#: A stream ends after this long; the browser reconnects from its cursor.
STREAM_SECONDS = 300.0
#: How often the viewer's session and watchable queues are read again.
RECHECK_SECONDS = 60.0
#: The reconnection delay the browser is told to use, in milliseconds.
RETRY_MS = 1000

T = TypeVar("T")
Row = tuple[int, str, str, str]  # an event as read: id, queue, job id, type


@dataclass(frozen=True)
class Viewer:
    """Who follows the stream: the queues they may watch, None for every queue."""

    queues: frozenset[str] | None

    def sees(self, queue: str) -> bool:
        return self.queues is None or queue in self.queues


@dataclass(frozen=True)
class Message:
    cursor: int
    jobs: dict[str, str]

    def as_sse(self) -> str:
        body = json.dumps({"cursor": self.cursor, "jobs": self.jobs}, separators=(",", ":"))
        return f"id: {self.cursor}\nevent: jobs\ndata: {body}\n\n"


def coalesce(
    rows: Sequence[Row], cursor: int, viewer: Viewer, limit: int | None = None
) -> list[Message]:
    """The messages for one read: ``rows`` (in id order) of the queues ``viewer`` sees, one
    entry per job (the type of its last event), at most ``limit`` jobs a message. Each
    message's cursor is the id of the last event it accounts for; the last one's is
    ``cursor``, the end of the read (events after its last visible one were skipped)."""
    limit = MAX_JOBS if limit is None else limit
    messages: list[Message] = []
    jobs: dict[str, str] = {}
    last_id = None
    for event_id, queue, job_id, kind in rows:
        if not viewer.sees(queue):
            continue
        if job_id not in jobs and len(jobs) >= limit and last_id is not None:
            messages.append(Message(last_id, jobs))
            jobs = {}
        jobs[job_id] = kind
        last_id = event_id
    if jobs:
        messages.append(Message(cursor, jobs))
    return messages


# --- reads (each on the shared executor, each closing its connection) ----------------------


def read_events(after: int, limit: int = READ_LIMIT) -> tuple[list[Row], int, bool]:
    """Events after ``after``: the rows, the cursor after them and whether the read came back
    full (more are waiting)."""

    def read() -> list[Row]:
        return list(
            Event.objects.filter(id__gt=after)
            .order_by("id")
            .values_list("id", "queue", "job_id", "type")[:limit]
        )

    try:
        rows = read_again_if_lost(read, "the live grid's read")
    finally:
        connection.close()
    return rows, (rows[-1][0] if rows else after), len(rows) >= limit


def last_event_id() -> int:
    try:
        return read_again_if_lost(
            lambda: Event.objects.order_by("-id").values_list("id", flat=True).first() or 0,
            "the live grid's first cursor",
        )
    finally:
        connection.close()


def viewer_of(request: HttpRequest, *, fresh: bool = False) -> Viewer | None:
    """The viewer behind ``request``'s session, or None when not logged in (any more).
    ``fresh`` reads the session again from its store (it may have ended since the stream
    opened: logged out, password changed, user deactivated)."""
    try:
        if fresh:
            engine = import_module(settings.SESSION_ENGINE)
            store = engine.SessionStore(request.session.session_key)
            user = get_user(SimpleNamespace(session=store))
        else:
            user = request.user
        if not user.is_authenticated:
            return None
        queues = watchable_queues(user)
        return Viewer(None if queues is None else frozenset(queues))
    finally:
        connection.close()


def _read(function: Callable[..., T], *args: Any, **kwargs: Any) -> Awaitable[T]:
    """``function`` run on the loop's shared executor, not on a thread kept per stream."""
    return sync_to_async(function, thread_sensitive=False)(*args, **kwargs)


# --- the view ------------------------------------------------------------------------------


def _cursor(request: HttpRequest) -> tuple[int | None, str | None]:
    """The cursor asked for (``Last-Event-ID``, sent by a reconnecting browser, wins over
    ``after``), or None for "from now"; and the name of a field that is not an event id."""
    for field, raw in (
        ("Last-Event-ID", request.headers.get("Last-Event-ID")),
        ("after", request.GET.get("after")),
    ):
        if raw is None or raw == "":
            continue
        cursor = whole_number(raw)  # ASCII digits only: no sign, "1e3", "²" or 10**40
        if cursor is None or raw != raw.strip():
            return None, field
        return cursor, None
    return None, None


async def grid_live(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    try:
        viewer = await _read(viewer_of, request)
    except DATABASE_ERRORS:
        log.warning("live grid stream refused: the database is unavailable", exc_info=True)
        return HttpResponse("the database is unavailable; try again shortly", status=503)
    if viewer is None:
        if "text/event-stream" in request.headers.get("Accept", ""):
            return HttpResponse(
                "log in to follow live updates", status=401, content_type="text/plain"
            )
        return redirect_to_login(request.get_full_path())
    after, bad = _cursor(request)
    if bad is not None:
        message = "must be a non-negative event id"
        return JsonResponse(
            {"message": f"{bad}: {message}", "errors": [{"field": bad, "message": message}]},
            status=400,
        )
    try:
        latest = await _read(last_event_id)
    except DATABASE_ERRORS:
        return HttpResponse("the database is unavailable; try again shortly", status=503)
    # No id beyond the last one can have been seen (the log was emptied, say): start there.
    cursor = latest if after is None or after > latest else after
    if isinstance(request, ASGIRequest):
        response: HttpResponse = StreamingHttpResponse(live_stream(request, viewer, cursor))
    else:
        # Under WSGI (runserver, the test live server) nothing reaches the browser before the
        # response is complete: answer what there is now and end. The browser comes back
        # after RETRY_MS from the cursor it got, so the stream becomes a poll.
        try:
            response = HttpResponse("".join([text async for text in one_read(viewer, cursor)]))
        except DATABASE_ERRORS:
            return HttpResponse("the database is unavailable; try again shortly", status=503)
    response["Content-Type"] = "text/event-stream; charset=utf-8"
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _ready(cursor: int) -> str:
    return (
        f"retry: {RETRY_MS}\nid: {cursor}\nevent: ready\ndata: {json.dumps({'cursor': cursor})}\n\n"
    )


def _end(cursor: int) -> str:
    """The last message of a stream that ends as planned: the page knows that the browser's
    reconnection that follows is no trouble."""
    return f"id: {cursor}\nevent: end\ndata: {json.dumps({'cursor': cursor})}\n\n"


async def one_read(viewer: Viewer, cursor: int) -> AsyncIterator[str]:
    """The short answer: ready, one read's messages, end."""
    yield _ready(cursor)
    rows, cursor, _ = await _read(read_events, cursor)
    for message in coalesce(rows, cursor, viewer):
        yield message.as_sse()
    yield _end(cursor)


async def live_stream(request: HttpRequest, viewer: Viewer, cursor: int) -> AsyncIterator[str]:
    """The stream's text (see the module docstring)."""
    loop = asyncio.get_running_loop()
    stop = wakeups.stopping()
    waiter = await wakeups.register_any()
    opened = last_line = last_check = loop.time()
    sent = cursor
    planned_end = False
    yield _ready(cursor)
    try:
        while True:
            if stop.is_set():
                planned_end = True
                break
            waiter.clear()  # a wake-up during the read is kept for the wait
            read_at = loop.time()
            if read_at - last_check >= RECHECK_SECONDS:
                last_check = read_at
                viewer = await _read(viewer_of, request, fresh=True)
                if viewer is None:  # logged out: the reconnection is refused
                    break
            rows, cursor, full = await _read(read_events, cursor)
            for message in coalesce(rows, cursor, viewer):
                yield message.as_sse()
                sent, last_line = message.cursor, loop.time()
            if full:
                continue
            now = loop.time()
            if now - opened >= STREAM_SECONDS:
                planned_end = True
                break
            if now - last_line >= HEARTBEAT_SECONDS:
                yield ": keep-alive\n" + (f"id: {cursor}\n" if cursor != sent else "") + "\n"
                sent, last_line = cursor, now
            poll = POLL_SECONDS if waiter.live else POLL_SECONDS_WITHOUT_WAKEUPS
            due = min(poll, HEARTBEAT_SECONDS - (now - last_line), STREAM_SECONDS - (now - opened))
            await waiter.wait(max(due, 0.0))
            pause = MIN_READ_INTERVAL - (loop.time() - read_at)
            if pause > 0 and not stop.is_set():
                await asyncio.sleep(pause)
    except DATABASE_ERRORS:  # the browser reconnects from its cursor after RETRY_MS
        log.warning("live grid stream ended: the database is unavailable", exc_info=True)
    finally:
        waiter.close()
    if planned_end:
        yield _end(cursor)
    elif cursor != sent:  # where the next stream of this browser starts
        yield f"id: {cursor}\n\n"
