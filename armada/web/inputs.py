"""One guard for the text of every request, before any view reads it.

Every path parameter, query parameter and page form field of the site (the admin, Lookout,
the API) is held to the store's rule (``armada.web.storable``: no NUL character, no lone
surrogate) here, once, instead of in each view; the API's bodies are checked by
``armada.api.bodies``, which applies the same rule to parsed data.

- A query string whose percent-escapes are not UTF-8 is refused with 400 naming the
  parameter (Django would quietly put U+FFFD in place of the bytes).
- A query parameter or form field (of a page; not an API body) that cannot be stored is
  refused with 400 naming it; so is a query parameter longer than ``MAX_QUERY_TEXT``.
- A path parameter that no name or id can be (one that cannot be stored, or longer than
  ``MAX_PATH_TEXT``) is answered like a name that does not exist: 404 saying why. Under
  ``/api/`` it is 400 naming the parameter, as the API's own check has always answered.

An answer under ``/api/`` is the API's JSON error (``{"message", "errors": [{field,
message}]}``); elsewhere it is a page (``lookout/problem.html``). A view that checks a form
field itself (the policy editor runs the API's document checks and points at the line of
each problem) names it with :func:`checks_own_text`. Nothing is changed by a refused request:
the guard runs before the view.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote_to_bytes

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from armada.core.errors import FieldError
from armada.web.storable import text_problem

API_PREFIX = "/api/"
# Armada's REST gateway (armada.wire.gateway): answers like the API, in grpc-gateway's shape.
GATEWAY_PREFIX = "/v1/"
# Longer than any name or id the system keeps (job sets, the longest, stop at 1,024).
MAX_PATH_TEXT = 2048
# A query parameter's value, at most: the web server takes no request line longer than
# 16 KiB anyway (uvicorn's limit), and SQLite refuses search patterns of 50,000 bytes.
MAX_QUERY_TEXT = 16 * 1024
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
_OWN_TEXT = "armada_checks_own_text"


def checks_own_text(*fields: str) -> Callable:
    """Mark a view as checking these form fields itself (the guard leaves them alone)."""

    def mark(view: Callable) -> Callable:
        setattr(view, _OWN_TEXT, frozenset(fields))
        return view

    return mark


def whole_number(raw: str, *, max_digits: int = 18) -> int | None:
    """``raw`` as a non-negative whole number of ASCII digits, or None. ``str.isdigit``
    also takes "²" and other scripts' digits, which ``int`` refuses, and ``int`` refuses
    more than 4,300 digits; neither can slip through here."""
    text = raw.strip()
    if not text or len(text) > max_digits or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def _query_string_problems(raw: str) -> Iterable[FieldError]:
    """Parameters whose percent-escapes do not decode as UTF-8. Raw non-ASCII bytes are the
    server's to decode; only escapes are checked here."""
    if "%" not in raw:
        return
    for pair in raw.split("&"):
        if "%" not in pair or not pair.isascii():
            continue
        name, _, value = pair.partition("=")
        for part in (name, value):
            try:
                unquote_to_bytes(part.replace("+", " ")).decode("utf-8")
            except UnicodeDecodeError:
                shown = unquote_to_bytes(name).decode("utf-8", "replace")
                yield FieldError(shown, "is not valid UTF-8 text")
                break


def _text_problems(values: Iterable[tuple[str, list[Any]]], skip: frozenset[str]):
    for name, items in values:
        problem = text_problem(name)
        if problem is not None:
            yield FieldError(name.replace("\x00", "\\u0000"), f"(the name) {problem}")
            continue
        if name in skip:
            continue
        for item in items:
            if isinstance(item, str) and (problem := text_problem(item)) is not None:
                yield FieldError(name, problem)
                break


def _query_length_problems(values: Iterable[tuple[str, list[Any]]]) -> Iterable[FieldError]:
    for name, items in values:
        if any(isinstance(item, str) and len(item) > MAX_QUERY_TEXT for item in items):
            yield FieldError(name, f"is too long (at most {MAX_QUERY_TEXT} characters)")


def _path_problems(kwargs: dict[str, Any]) -> Iterable[FieldError]:
    for name, value in kwargs.items():
        if not isinstance(value, str):
            continue
        problem = text_problem(value)
        if problem is None and len(value) > MAX_PATH_TEXT:
            problem = f"is longer than any name or id (at most {MAX_PATH_TEXT} characters)"
        if problem is not None:
            yield FieldError(name, problem)


def request_problems(
    request: HttpRequest, view: Callable, kwargs: dict[str, Any]
) -> tuple[int, list[FieldError]] | None:
    """What the guard refuses in ``request`` (status and problems), or None."""
    path = list(_path_problems(kwargs))
    if path:
        return (400 if request.path_info.startswith((API_PREFIX, GATEWAY_PREFIX)) else 404), path
    problems = list(_query_string_problems(request.META.get("QUERY_STRING", "")))
    if not problems:
        problems = list(_text_problems(request.GET.lists(), frozenset()))
    if not problems:
        problems = list(_query_length_problems(request.GET.lists()))
    if (
        not problems
        and request.method == "POST"
        and not request.path_info.startswith((API_PREFIX, GATEWAY_PREFIX))
        and request.content_type in FORM_TYPES
    ):
        skip = getattr(view, _OWN_TEXT, frozenset())
        problems = list(_text_problems(request.POST.lists(), skip))
    return (400, problems) if problems else None


def refusal(request: HttpRequest, status: int, problems: list[FieldError]) -> HttpResponse:
    """The answer to a refused request: the API's JSON error, or a page."""
    first = problems[0]
    if status == 404:
        summary = f"not found: the {first.field} in this address {first.message}"
    else:
        summary = f"invalid request: {first}"
    if len(problems) > 1:
        summary += f" (and {len(problems) - 1} more problems)"
    if request.path_info.startswith(GATEWAY_PREFIX):  # 3: gRPC's INVALID_ARGUMENT
        from armada.wire.errors import gateway_error_json

        return JsonResponse(gateway_error_json(3, summary), status=status)
    if request.path_info.startswith(API_PREFIX):
        errors = [{"field": p.field, "message": p.message} for p in problems]
        return JsonResponse({"message": summary, "errors": errors}, status=status)
    title = "Not found" if status == 404 else "Invalid request"
    context = {"title": title, "message": summary[0].upper() + summary[1:] + "."}
    return render(request, "lookout/problem.html", context, status=status)


class InputGuardMiddleware:
    """Runs :func:`request_problems` once the URL is resolved (``process_view``), before
    the view; answers :func:`refusal` when there is a problem. Sync and async alike: where
    the middleware below it is async too, the check adds no thread hop under ASGI."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)
            # Django runs a sync ``process_view`` in a thread under ASGI; the check needs
            # none (no database), only the refusal's page does.
            self.process_view = self._process_view_async  # type: ignore[method-assign]

    def __call__(self, request: HttpRequest):
        if iscoroutinefunction(self):
            return self.__acall__(request)
        return self.get_response(request)

    async def __acall__(self, request: HttpRequest):
        return await self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs) -> HttpResponse | None:
        found = request_problems(request, view_func, view_kwargs)
        return None if found is None else refusal(request, *found)

    async def _process_view_async(
        self, request, view_func, view_args, view_kwargs
    ) -> HttpResponse | None:
        found = request_problems(request, view_func, view_kwargs)
        return None if found is None else await sync_to_async(refusal)(request, *found)
