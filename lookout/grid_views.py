"""The jobs grid's views: the page (and its parts for htmx), rows by id for live updates,
and saving a user's column choice.

Views are thin: the URL is read by ``lookout.grid.params`` (a bad value raises
``FilterError``, answered 400 with the message naming the parameter, on the page and on
every fragment), rows come from ``lookout.grid.pages`` (only queues the viewer may watch),
the choice is kept by ``lookout.grid.prefs``.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from lookout.access import JOBS, page_view
from lookout.grid.columns import COLUMNS, DEFAULT_COLUMNS, ColumnError, column
from lookout.grid.filters import FilterError
from lookout.grid.page_context import grid_context
from lookout.grid.pages import MAX_ROW_IDS, rows_for
from lookout.grid.params import GridParams
from lookout.grid.prefs import request_columns, reset_columns, save_columns

MAX_BODY = 64 * 1024


def _wants_grid_part(request: HttpRequest) -> bool:
    """An htmx request for the grid's rows, pager and header (filters, sort, pages)."""
    return (
        request.headers.get("HX-Request") == "true"
        and not request.headers.get("HX-History-Restore-Request")
        and request.headers.get("HX-Target") == "job-rows"
    )


@page_view(JOBS)
@require_GET
def jobs(request: HttpRequest) -> HttpResponse:
    """The jobs grid. ``?fragment=rows`` answers only the rows of the page; an htmx request
    targeting the rows answers the grid's changing parts (rows, header, pager)."""
    fragment = request.GET.get("fragment", "")
    part = _wants_grid_part(request)
    try:
        params = GridParams.from_request(request)
        if "ann_key" in request.GET and fragment != "rows":
            # The "add annotation filter" fields: go to the view's own URL.
            return redirect(reverse("lookout:jobs") + params.url())
        context = grid_context(request, params)
    except FilterError as exc:
        context = grid_context(request, None, error=exc)
        template = (
            "lookout/grid/_body.html"
            if fragment == "rows"
            else ("lookout/grid/_part.html" if part else "lookout/jobs.html")
        )
        response = render(request, template, context, status=400)
        response["Vary"] = "HX-Request, HX-Target"
        return response
    if fragment == "rows":
        return render(request, "lookout/grid/_rows.html", context)
    if part:
        response = render(request, "lookout/grid/_part.html", context)
        response["HX-Push-Url"] = reverse("lookout:jobs") + params.url(
            after=params.after or None, before=params.before or None
        )
    else:
        response = render(request, "lookout/jobs.html", context)
    response["Vary"] = "HX-Request, HX-Target"
    return response


@login_required
@require_GET
def rows(request: HttpRequest) -> HttpResponse:
    """``GET /rows?ids=a,b&<the grid's query>``: the rows of those jobs that still match the
    view's filters, in the view's columns (an id not answered no longer matches)."""
    raw = request.GET.get("ids", "")
    ids = [i.strip() for i in raw.split(",") if i.strip()]
    try:
        if not ids:
            raise FilterError("ids", "name at least one job id")
        if len(ids) > MAX_ROW_IDS:
            raise FilterError("ids", f"at most {MAX_ROW_IDS} job ids at once")
        if any(len(i) > 64 for i in ids):
            raise FilterError("ids", "a job id is at most 64 characters")
        params = GridParams.from_request(request)
    except FilterError as exc:
        return _json_error(exc.field, exc.message)
    context = {"rows": rows_for(request.user, params, ids), "params": params, "now": timezone.now()}
    return render(request, "lookout/grid/_rows.html", context)


@login_required
@require_POST
def grid_columns(request: HttpRequest) -> HttpResponse:
    """Save the viewer's column choice. A JSON body ``{"visible": [...], "widths": {...}}``
    (or ``{"reset": true}``) answers JSON; the chooser's plain form (no JavaScript) posts
    ``visible`` checkboxes in order, ``move=up:<key>``/``down:<key>``, ``add`` (an
    annotation key) or ``reset``, and is sent back to ``next``. A bad choice is 400 naming
    the field, and changes nothing."""
    if request.content_type == "application/json":
        return _columns_json(request)
    try:
        choice = _choice_from_form(request)
    except FilterError as exc:
        return render(
            request,
            "lookout/problem.html",
            {"title": "Columns not saved", "message": f"invalid request: {exc}"},
            status=400,
        )
    if choice is None:
        reset_columns(request.user)
    else:
        save_columns(request.user, choice)
    target = request.POST.get("next", "")
    if not target.startswith("/") or not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}
    ):
        target = reverse("lookout:jobs")
    return redirect(target)


def _columns_json(request: HttpRequest) -> HttpResponse:
    if len(request.body) > MAX_BODY:
        return _json_error("body", f"is larger than {MAX_BODY} bytes")
    try:
        data: Any = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        return _json_error("body", "is not JSON")
    if isinstance(data, dict) and data.get("reset") is True and len(data) == 1:
        reset_columns(request.user)
        return JsonResponse({"visible": list(DEFAULT_COLUMNS), "widths": {}, "saved": False})
    try:
        saved = save_columns(request.user, data)
    except FilterError as exc:
        return _json_error(exc.field, exc.message)
    return JsonResponse({**saved, "saved": True})


def _json_error(field: str, message: str) -> JsonResponse:
    return JsonResponse(
        {
            "message": f"invalid request: {field}: {message}",
            "errors": [{"field": field, "message": message}],
        },
        status=400,
    )


def _choice_from_form(request: HttpRequest) -> dict[str, Any] | None:
    """The choice the chooser's plain form asks for (None: back to the default)."""
    if request.POST.get("reset"):
        return None
    order = [k for k in request.POST.getlist("order") if k]
    visible = [k for k in request.POST.getlist("visible") if k]
    for key in [*order, *visible]:
        try:
            column(key)
        except ColumnError as exc:
            raise FilterError("visible", str(exc)) from None
    shown = [k for k in order if k in visible] + [k for k in visible if k not in order]
    move = request.POST.get("move", "")
    if move:
        direction, _, key = move.partition(":")
        if direction not in ("up", "down") or key not in shown:
            raise FilterError("move", "must be up:<column> or down:<column> of a shown column")
        i = shown.index(key)
        j = i - 1 if direction == "up" else i + 1
        if 0 <= j < len(shown):
            shown[i], shown[j] = shown[j], shown[i]
    added = request.POST.get("add", "").strip()
    if added:
        key = added if added.startswith("annotation:") else f"annotation:{added}"
        try:
            column(key)
        except ColumnError as exc:
            raise FilterError("add", str(exc)) from None
        shown = [*shown, key] if key not in shown else shown
    _, widths = request_columns(request)
    return {
        "visible": shown,
        "widths": {k: w for k, w in widths.items() if k in COLUMNS or k in shown},
    }
