"""Template tags of the jobs grid (``lookout.grid``)."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils.safestring import SafeString

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
