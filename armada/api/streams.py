"""The event stream of a job set: newline-delimited JSON, or Server-Sent Events for browsers.

``GET /api/v1/job-sets/{queue}/{jobSet}/events?from=<id>&watch=true``

- ``from`` is exclusive: events with a greater id follow (SSE clients may send
  ``Last-Event-ID`` instead), so a client that reconnects with the last id it saw gets
  neither a gap nor a duplicate (see ``services.events`` for why ids appear in order).
- ``watch=true`` keeps the response open and follows new events; otherwise the response
  ends after the events that exist. A watcher reads again only when its job set has new
  events: a Redis notification says so at once, the process's sweep of the log within
  ``wakeups.POLL_SECONDS_WITH_WAKEUPS`` when one was lost, or within ``wakeups.POLL_SECONDS``
  without ``REDIS_URL`` (``armada.api.wakeups``). A blank line (an SSE comment) is sent
  every ``KEEPALIVE_SECONDS`` so that proxies keep the connection; it costs no query.
This is an async view: under ASGI a watcher holds no worker thread while it waits, and it
holds no database connection either: the reading, waiting and waking are
``api.event_follow``'s, shared with Armada's ``GetJobSetEvents``.

After its first read, and after each read that sent events and found no more, a watch sends
a blank line (an SSE comment): the server's word that the client now holds every event committed so far.
``armadactl watch --exit-if-inactive`` decides that a job set is finished only at such a
line, never merely because its read buffer ran dry.

A stream whose credential or permission goes while it is open (``api.stream_guard``: all the
process's streams checked together every ``CHECK_SECONDS``) ends with one last record in
the API's error shape, with the status the same request would now get:
``{"status": 401|403|404, "message": ..., "errors": []}`` as a line, or as an SSE
``event: error`` block.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Sequence

from asgiref.sync import sync_to_async
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.settings import api_settings

from armada.api.bodies import check_path_values
from armada.api.event_follow import follow
from armada.api.stream_guard import AccessGuard
from armada.api.stream_metrics import subscription
from armada.core.errors import ValidationFailed
from armada.models import Event, Queue
from armada.services.authz import can_on_queue
from armada.services.dbfaults import DATABASE_ERRORS
from armada.services.errors import CredentialGone, NotFound, PermissionDenied
from armada.services.events import event_as_dict
from armada.services.stream_access import Credential, credential_of

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 15.0
#: The status of the last record of a stream that its caller may no longer follow.
ENDING_STATUS: dict[type[Exception], int] = {
    CredentialGone: 401,
    PermissionDenied: 403,
    NotFound: 404,
}


def _as_json(events: Sequence[Event]) -> list[tuple[int, str, str]]:
    """Events as ``(id, type, JSON)``, converted while the read still has its connection."""
    return [(e.id, e.type, json.dumps(event_as_dict(e), separators=(",", ":"))) for e in events]


def _authorize_and_release(request: HttpRequest, queue_name: str) -> JsonResponse | Credential:
    try:
        return _authorize(request, queue_name)
    finally:
        connection.close()


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"message": message, "errors": []}, status=status)


def _ending(status: int, message: str, sse: bool) -> str:
    """The last record of a stream that must end (see the module docstring)."""
    body = json.dumps({"status": status, "message": message, "errors": []}, separators=(",", ":"))
    return f"event: error\ndata: {body}\n\n" if sse else body + "\n"


def _authorize(request: HttpRequest, queue_name: str) -> JsonResponse | Credential:
    """Authenticate like the rest of the API (session, token, basic) and check ``watch``;
    the caller's credential, to be checked again while the stream is open, or the refusal."""
    drf_request = Request(
        request, authenticators=[a() for a in api_settings.DEFAULT_AUTHENTICATION_CLASSES]
    )
    try:
        user = drf_request.user
    except exceptions.Throttled as exc:  # too many failed logins for this user or address
        response = _error(429, str(exc.detail))
        response["Retry-After"] = str(max(1, int(exc.wait or 1)))
        return response
    except exceptions.APIException as exc:  # bad credentials
        return _error(401, str(exc.detail))
    if not user.is_authenticated:
        return _error(401, "authentication credentials were not provided")
    queue = Queue.objects.filter(name=queue_name).first()
    if queue is None:
        return _error(404, f"queue {queue_name!r} does not exist")
    if not can_on_queue(user, queue, "watch"):
        return _error(
            403,
            f"user {user.get_username()!r} may not watch queue {queue_name!r}: needs the 'watch' permission on the queue or the global 'watch_all_events' permission",
        )
    session = isinstance(drf_request.successful_authenticator, SessionAuthentication)
    return credential_of(
        user, drf_request.auth, session_key=request.session.session_key if session else None
    )


def _cursor(request: HttpRequest) -> int | None:
    raw = request.GET.get("from") or request.headers.get("Last-Event-ID") or "0"
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 0 else None


async def job_set_events(request: HttpRequest, queue: str, job_set: str) -> HttpResponse:
    if request.method != "GET":
        return _error(405, f"method {request.method} not allowed")
    try:
        check_path_values({"queue": queue, "jobSetId": job_set})
    except ValidationFailed as exc:  # the database cannot even look such a name up
        errors = [{"field": e.field, "message": e.message} for e in exc.errors]
        return JsonResponse({"message": f"invalid request: {exc}", "errors": errors}, status=400)
    # Not thread-sensitive: this read runs on the loop's shared executor instead of a thread
    # kept for each open stream, and gives its connection back, as the stream's reads do.
    try:
        allowed = await sync_to_async(_authorize_and_release, thread_sensitive=False)(
            request, queue
        )
    except DATABASE_ERRORS:
        log.warning("event stream refused: the database is unavailable", exc_info=True)
        return _error(503, "the database is unavailable; try again shortly")
    if isinstance(allowed, JsonResponse):
        return allowed
    after = _cursor(request)
    if after is None:
        return _error(400, "invalid request: from: must be a non-negative event id")
    watch = request.GET.get("watch", "false").lower() in ("1", "true", "yes")
    sse = "text/event-stream" in request.headers.get("Accept", "")
    drained_mark = ":\n\n" if sse else "\n"
    batches = follow(
        queue,
        job_set,
        after=after,
        watch=watch,
        convert=_as_json,
        tick=KEEPALIVE_SECONDS,
        guard=AccessGuard(allowed, queue),
    )

    async def stream() -> AsyncIterator[str]:
        first = True
        last_line = time.monotonic()
        # request.user: the caller _authorize let in
        async with subscription(request.user, watch=watch), contextlib.aclosing(batches):
            try:
                async for batch in batches:
                    for event_id, kind, body in batch.items:
                        yield (
                            f"id: {event_id}\nevent: {kind}\ndata: {body}\n\n"
                            if sse
                            else body + "\n"
                        )
                    if not (watch and batch.caught_up):
                        continue
                    if batch.items or first:
                        yield drained_mark
                        last_line = time.monotonic()
                    elif time.monotonic() - last_line >= KEEPALIVE_SECONDS:
                        yield ":\n\n" if sse else "\n"
                        last_line = time.monotonic()
                    first = False
            except tuple(ENDING_STATUS) as exc:  # the caller may no longer follow it
                status = next(v for k, v in ENDING_STATUS.items() if isinstance(exc, k))
                yield _ending(status, str(exc), sse)

    response = StreamingHttpResponse(
        stream(), content_type="text/event-stream" if sse else "application/x-ndjson"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
