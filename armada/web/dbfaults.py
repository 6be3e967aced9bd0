"""What a request does when its database connection breaks under it.

- A read (``GET``, ``HEAD``) runs once more, on a fresh connection: reads change nothing, so
  running one twice is harmless, and the caller never sees the blip.
- Any other request is not run again by the server. Services that can tell whether their
  write was stored do so (a submit looks its jobs up: it answers as if nothing had happened
  when they were stored, and 503 saying that none was stored otherwise). Other writes answer
  503 saying the change was not confirmed: it was rolled back unless the connection broke
  during the commit itself, and every other write is safe to send again.
- A database that cannot be reached at all (the pool found no connection in time) is a 503
  too, never a 500.

Async views (the event stream) handle their own reads (``armada.api.streams``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from armada.services.dbfaults import (
    DATABASE_ERRORS,
    connection_lost,
    connection_reset,
    read_again_if_lost,
)

log = logging.getLogger(__name__)

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def unavailable(request: HttpRequest, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"message": message, "errors": []}, status=503)
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = "1"
    return response


class DatabaseFaultMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable, args: Any, kwargs: dict[str, Any]
    ) -> HttpResponse | None:
        if asyncio.iscoroutinefunction(view):
            return None
        what = f"{request.method} {request.path}"
        try:
            if request.method in SAFE_METHODS:
                return read_again_if_lost(lambda: view(request, *args, **kwargs), what)
            return view(request, *args, **kwargs)
        except DATABASE_ERRORS as exc:
            lost = connection_lost(exc)
            connection_reset()
            if request.method in SAFE_METHODS:
                log.warning("database unavailable for %s", what, exc_info=True)
                return unavailable(request, "the database is unavailable; try again shortly")
            log.warning("database error during %s", what, exc_info=True)
            if lost:
                return unavailable(
                    request,
                    "the database connection was lost and the change was not confirmed: it was "
                    "rolled back unless the connection broke while committing; sending it again "
                    "is safe (a cancel, reprioritize or update repeats harmlessly, a create "
                    "answers 409 if it was stored)",
                )
            return unavailable(
                request, "the database is unavailable; nothing was written; try again shortly"
            )
