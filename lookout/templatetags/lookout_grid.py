"""Template tags of the jobs grid (``lookout.grid``)."""

from __future__ import annotations

from datetime import datetime
from html import escape
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from lookout.grid.cells import row_cells, row_html
from lookout.grid.pages import JobRow
from lookout.grid.params import GridParams

register = template.Library()


@register.simple_tag
def grid_cells(row: JobRow, params: GridParams, now: datetime) -> SafeString:
    """The cells of a job row in the columns ``params`` shows."""
    return row_cells(row, params.columns, now)


@register.simple_tag
def grid_row(row: JobRow, params: GridParams, now: datetime) -> SafeString:
    """A job row (``<tr class="job-row">``) in the columns ``params`` shows."""
    return row_html(row, params.columns, now)


@register.simple_tag
def filter_options(param: str, options: list[dict[str, Any]]) -> SafeString:
    """The checkboxes of a multi-valued header filter (a hundred queues is a hundred of
    them: written here rather than by a template loop, which costs ten times as much)."""
    if not options:
        return mark_safe('<p class="muted">No values yet.</p>')
    name = escape(param)
    return mark_safe(
        "".join(
            f'<label class="check"><input type="checkbox" name="{name}"'
            f' value="{escape(str(o["value"]))}" form="grid-filters"'
            f"{' checked' if o['checked'] else ''}> {escape(str(o['label']))}</label>"
            for o in options
        )
    )
