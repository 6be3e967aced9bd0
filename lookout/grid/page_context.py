"""The template context of the jobs grid page and its parts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl

from django.http import HttpRequest, QueryDict
from django.urls import reverse
from django.utils import timezone

from lookout.grid.columns import ANNOTATION_PREFIX, COLUMNS, DEFAULT_COLUMNS, column
from lookout.grid.filters import FilterError, JobFilters
from lookout.grid.header import (
    FILTER_PARAMS,
    annotation_chips,
    filters_set,
    header_cells,
    kept_filters,
)
from lookout.grid.options import filter_options
from lookout.grid.pages import grid_page
from lookout.grid.params import PAGE_SIZES, GridParams
from lookout.grid.prefs import request_columns
from lookout.queue_scope import watches_no_queue_later

# What an htmx request for the rows also replaces (the filter row stays: it is being typed in).
GRID_OOB = "#grid-head,#grid-cols,#grid-pager,#grid-error,#grid-chips,#grid-form-fields"
# What a link that sets the filters itself (a ready view, clearing them) replaces: the
# filter row too, so that its fields show the new filters.
GRID_OOB_WITH_FILTERS = GRID_OOB + ",#grid-filter-row"


def _groups_html(request: HttpRequest, params: GridParams) -> str | None:
    """The top-level group rows (``lookout.grid.groups``), or None while it is missing."""
    try:
        from lookout.grid.groups import render_groups
    except ImportError:
        return None
    return render_groups(request, params)


def grid_context(
    request: HttpRequest, params: GridParams | None, *, error: FilterError | None = None
) -> dict[str, Any]:
    """Everything the grid's templates show. With ``error`` (a refused URL) the grid is
    empty, shows the message, and the filter fields keep what was sent."""
    raw = {k: v for k, v in request.GET.lists()}
    saved, widths = request_columns(request)
    if params is None:
        params = _fallback_params(raw, saved, widths)
    filters = params.filters if error is None else None
    options = filter_options(request.user, filters or params.filters, params.columns)
    context: dict[str, Any] = {
        "params": params,
        "error": error,
        "now": timezone.now(),
        "header": header_cells(params, raw, options),
        "kept": kept_filters(params, raw),
        "annotations": annotation_chips(raw),
        "page_sizes": PAGE_SIZES,
        "chooser": _chooser(params),
        "group_choices": _group_choices(params),
        "group_levels": _group_levels(params),
        "colspan": len(params.columns) + 1,
        "rows": [],
        "no_queue": watches_no_queue_later(request.user),
        "groups_html": None,
        "view_fields": _view_fields(params),
        "form_fields": parse_qsl(params.url(filters=JobFilters()).lstrip("?")),
        "grid_oob": GRID_OOB,
        "grid_oob_with_filters": GRID_OOB_WITH_FILTERS,
        "filters_set": filters_set(raw),
        "clear_url": _clear_url(params, raw, error),
        **_retried_view(params),
        # After a change in the chooser the grid follows the saved choice, not the URL's.
        "chooser_next": reverse("lookout:jobs") + replace(params, columns_in_url=False).url(),
        "grid_state": {
            "columns": list(params.columns),
            "columnsInUrl": params.columns_in_url,
            "saved": {"visible": list(saved) if saved else None, "widths": widths},
            "defaults": list(DEFAULT_COLUMNS),
            "labels": {k: c.label for k, c in COLUMNS.items()},
        },
    }
    if error is not None:
        return context
    if params.group:
        context["groups_html"] = _groups_html(request, params)
    if context["groups_html"] is None:
        page = grid_page(request.user, params)
        context["page"] = page
        context["rows"] = page.rows
        context["next_url"] = (
            params.url(after=page.next_cursor, before=None) if page.next_cursor else ""
        )
        context["prev_url"] = (
            params.url(before=page.prev_cursor, after=None) if page.prev_cursor else ""
        )
        context["first_url"] = params.url() if (params.after or params.before) else ""
    return context


def _clear_url(params: GridParams, raw: dict[str, list[str]], error: FilterError | None) -> str:
    """The view without any filter, keeping the rest of it (sort, columns, grouping, page
    size); after a refused filter, the rest of the URL as it was sent, if it is valid."""
    if error is None:
        return params.url(filters=JobFilters())
    rest = QueryDict(mutable=True)
    for name, values in raw.items():
        if name not in FILTER_PARAMS and not name.startswith("ann"):
            rest.setlist(name, values)
    try:
        return GridParams.from_query(rest).url(after=None, before=None)
    except FilterError:
        return params.url(filters=JobFilters())


def _retried_view(params: GridParams) -> dict[str, Any]:
    """The ready view "Retried jobs" (retries at least 1) on top of the other filters, and
    whether it is the view shown."""
    retried = replace(params.filters, retries=None, retries_min=1, retries_max=None)
    return {"retried_url": params.url(filters=retried), "retried_shown": params.filters == retried}


def _fallback_params(raw: dict[str, list[str]], saved, widths) -> GridParams:
    """The view's columns when its URL was refused: the URL's if they are valid, else the
    saved ones, else the default."""
    try:
        return GridParams.from_query(
            {"columns": ",".join(raw.get("columns", []))}, saved=saved, widths=widths
        )
    except FilterError:
        return GridParams.from_query({}, saved=saved, widths=widths)


def _view_fields(params: GridParams) -> list[tuple[str, str]]:
    """Hidden fields of the filter forms: what a filter change keeps (not the cursor; the
    page size and grouping have fields of their own)."""
    query = params.url(filters=JobFilters(), per_page=None, group=None)
    return parse_qsl(query.lstrip("?"))


def _chooser(params: GridParams) -> list[dict[str, Any]]:
    """Every column for the chooser: the shown ones in their order, then the others."""
    items = [
        {
            "key": k,
            "label": column(k).label,
            "visible": True,
            "annotation": k.startswith(ANNOTATION_PREFIX),
        }
        for k in params.columns
    ]
    items += [
        {"key": k, "label": c.label, "visible": False, "annotation": False}
        for k, c in COLUMNS.items()
        if k not in params.columns
    ]
    return items


def _group_choices(params: GridParams) -> list[tuple[str, str]]:
    choices = [(k, c.label) for k, c in COLUMNS.items() if c.groupable]
    extra = [k for k in (*params.columns, *params.group) if k.startswith(ANNOTATION_PREFIX)]
    extra += [ANNOTATION_PREFIX + a.key for a in params.filters.annotations]
    for key in dict.fromkeys(extra):
        choices.append((key, f"Annotation {key.removeprefix(ANNOTATION_PREFIX)}"))
    return choices


def _group_levels(params: GridParams) -> list[dict[str, Any]]:
    labels = ("Group by", "then by", "then by")
    return [
        {"index": i, "label": labels[i], "value": params.group[i] if i < len(params.group) else ""}
        for i in range(3)
    ]
