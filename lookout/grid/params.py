"""Everything in the jobs grid's URL: filters, sort, cursor, page size, grouping, the
columns when the URL chooses them, and the side panel's ``job`` and the live updates'
``live=0``, which the grid keeps in every URL it builds.

Without ``?columns=`` the columns are the viewer's saved choice (``lookout.grid.prefs``), or
the default ones. ``?annotations=a,b`` (older URLs) adds the annotation columns ``a`` and
``b``; ``?refresh=`` (the former polling) is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest

from lookout.grid.columns import (
    ANNOTATION_PREFIX,
    DEFAULT_COLUMNS,
    MAX_COLUMNS,
    SORTS,
    ColumnError,
    column,
)
from lookout.grid.cursors import checked_cursor
from lookout.grid.filters import FilterError, JobFilters, text_ok

PAGE_SIZES = (25, 50, 100, 200)
PAGE_SIZE = 50
MAX_GROUP_LEVELS = 3
_CURSOR_CHANGES = {"after", "before"}
# Changing these keeps the cursor (they do not change which rows the page holds).
_KEEPS_CURSOR = {"columns", "job", "live"}


def parse_columns(raw: str, name: str = "columns") -> tuple[str, ...]:
    """Column keys from a comma-separated list; ``FilterError`` naming ``name`` on a key that
    is not a column, or too many."""
    keys = tuple(dict.fromkeys(k.strip() for k in raw.split(",") if k.strip()))
    if len(keys) > MAX_COLUMNS:
        raise FilterError(name, f"has more than {MAX_COLUMNS} columns")
    for key in keys:
        try:
            column(key)
        except ColumnError as exc:
            raise FilterError(name, str(exc)) from None
    return keys


@dataclass(frozen=True)
class GridParams:
    """The grid's view, as its URL says."""

    filters: JobFilters = field(default_factory=JobFilters)
    sort: str = "id"
    descending: bool = True
    after: str = ""
    before: str = ""
    per_page: int = PAGE_SIZE
    group: tuple[str, ...] = ()
    columns: tuple[str, ...] = DEFAULT_COLUMNS
    columns_in_url: bool = False
    widths: Mapping[str, int] = field(default_factory=dict)
    job: str = ""
    live: str = ""

    @classmethod
    def from_request(cls, request: HttpRequest) -> GridParams:
        """From the query string and the viewer's saved column choice."""
        from lookout.grid.prefs import request_columns

        visible, widths = request_columns(request)
        return cls.from_query(request.GET, saved=visible, widths=widths)

    @classmethod
    def from_query(
        cls,
        query: Mapping[str, Any],
        *,
        saved: tuple[str, ...] | None = None,
        widths: Mapping[str, int] | None = None,
    ) -> GridParams:
        """From a query string (a QueryDict); ``saved``: the viewer's columns, if any.
        Raises ``FilterError`` naming the parameter on a bad value."""
        filters = JobFilters.from_query(query)
        sort = _one(query, "sort") or "id"
        if sort not in SORTS:
            raise FilterError("sort", f"{sort[:60]!r} is not a column the grid sorts by")
        direction = _one(query, "dir") or "desc"
        if direction not in ("asc", "desc"):
            raise FilterError("dir", "must be asc or desc")
        after, before = _one(query, "after"), _one(query, "before")
        if after and before:
            raise FilterError("before", "a page is either after or before a row, not both")
        checked_cursor("after", after, sort)
        checked_cursor("before", before, sort)
        per_page = _one(query, "per_page") or str(PAGE_SIZE)
        if per_page not in {str(n) for n in PAGE_SIZES}:
            raise FilterError("per_page", f"must be one of {', '.join(map(str, PAGE_SIZES))}")
        group = parse_columns(",".join(_all(query, "group")), "group")
        if len(group) > MAX_GROUP_LEVELS:
            raise FilterError("group", f"groups at most {MAX_GROUP_LEVELS} levels deep")
        for key in group:
            if not column(key).groupable:
                raise FilterError("group", f"jobs cannot be grouped by {key!r}")
        raw_columns = _one(query, "columns")
        in_url = bool(raw_columns)
        columns = parse_columns(raw_columns) if in_url else (saved or DEFAULT_COLUMNS)
        old = [k.strip() for k in _one(query, "annotations").split(",") if k.strip()]
        if old:
            extra = ",".join(
                k if k.startswith(ANNOTATION_PREFIX) else ANNOTATION_PREFIX + k for k in old
            )
            columns = tuple(dict.fromkeys((*columns, *parse_columns(extra, "annotations"))))
            if len(columns) > MAX_COLUMNS:
                raise FilterError("annotations", f"more than {MAX_COLUMNS} columns in all")
            in_url = True
        if not columns:
            raise FilterError("columns", "must name at least one column")
        return cls(
            filters=filters,
            sort=sort,
            descending=direction == "desc",
            after=after,
            before=before,
            per_page=int(per_page),
            group=group,
            columns=columns,
            columns_in_url=in_url,
            widths=dict(widths or {}),
            job=text_ok("job", _one(query, "job"), 64),
            live="0" if _one(query, "live") == "0" else "",
        )

    # --- URLs ------------------------------------------------------------------------------

    def url(self, **changes: Any) -> str:
        """This view's query string with ``changes`` applied (a parameter name and its
        value; None removes it; ``filters`` takes a ``JobFilters``; ``group`` and
        ``columns`` a tuple or a comma-separated string). Changing what the rows are starts
        again from the first page."""
        filters = changes.pop("filters", self.filters)
        current: dict[str, Any] = {
            "sort": self.sort if self.sort != "id" else None,
            "dir": None if self.descending else "asc",
            "per_page": self.per_page if self.per_page != PAGE_SIZE else None,
            "group": ",".join(self.group) or None,
            "columns": ",".join(self.columns) if self.columns_in_url else None,
            "after": self.after or None,
            "before": self.before or None,
            "job": self.job or None,
            "live": self.live or None,
        }
        resets = filters is not self.filters or bool(set(changes) - _CURSOR_CHANGES - _KEEPS_CURSOR)
        if resets and not _CURSOR_CHANGES & set(changes):
            current["after"] = current["before"] = None
        for key in ("group", "columns"):
            if isinstance(changes.get(key), tuple | list):
                changes[key] = ",".join(changes[key]) or None
        current.update(changes)
        params = filters.as_params()
        params += [(k, str(v)) for k, v in current.items() if v not in (None, "")]
        return "?" + urlencode(params) if params else "?"

    def sort_url(self, key: str) -> str:
        """Sort by ``key``: descending first; the current sort column flips direction."""
        if key == self.sort:
            return self.url(dir=None if not self.descending else "asc")
        return self.url(sort=key if key != "id" else None, dir=None)

    def aria_sort(self, key: str) -> str:
        if key != self.sort:
            return "none"
        return "descending" if self.descending else "ascending"

    def with_filters(self, filters: JobFilters) -> GridParams:
        return replace(self, filters=filters, after="", before="")

    def width(self, key: str) -> int:
        return int(self.widths.get(key) or column(key).width)


def _all(query: Mapping[str, Any], name: str) -> list[str]:
    """Every non-empty value of ``name`` (the group-by form sends one per level)."""
    if hasattr(query, "getlist"):
        return [v for v in query.getlist(name) if v.strip()]
    value = query.get(name)
    return [value] if value else []


def _one(query: Mapping[str, Any], name: str) -> str:
    if hasattr(query, "getlist"):
        values = [v for v in query.getlist(name) if v.strip()]
    else:
        value = query.get(name)
        values = [value] if value else []
    if len(values) > 1:
        raise FilterError(name, "is given more than once")
    return str(values[0]).strip() if values else ""
