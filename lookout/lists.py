"""Lookout's list pages by name: find by name and keyset pages (never OFFSET).

``?q=`` keeps the rows whose name contains it, whatever the case; ``?after=NAME`` is the
page after that name, ``?before=NAME`` the page before it. A page costs the same wherever
it is in the list: it reads at most ``PAGE_SIZE + 1`` rows from the name's unique index,
plus one count of the matching rows and one look for a row on the other side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

PAGE_SIZE = 50
# Names are RFC 1123 labels of at most 63 characters: a longer text matches no name.
MAX_NAME = 63


@dataclass(frozen=True)
class Find:
    """What the viewer asked for: the text to find and where the page starts or ends."""

    q: str = ""
    after: str = ""
    before: str = ""

    @classmethod
    def from_query(cls, query: QueryDict) -> Find:
        after = query.get("after", "")
        return cls(
            q=query.get("q", "").strip(),
            after=after,
            before="" if after else query.get("before", ""),
        )


@dataclass
class NamePage:
    """One page of rows in name order, with the cursors of its neighbours ("" for none)."""

    items: list[Any]
    find: Find
    total: int
    next_after: str = ""
    previous_before: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def _link(self, **cursor: str) -> str:
        params = {k: v for k, v in {**self.extra, "q": self.find.q}.items() if v}
        return "?" + urlencode({**params, **cursor})

    @property
    def next_url(self) -> str:
        return self._link(after=self.next_after) if self.next_after else ""

    @property
    def previous_url(self) -> str:
        return self._link(before=self.previous_before) if self.previous_before else ""


def name_page(
    rows: QuerySet, find: Find, *, extra: dict[str, str] | None = None, size: int = PAGE_SIZE
) -> NamePage:
    """The page of ``rows`` (a query set of models with a unique ``name``) that ``find``
    asks for. ``extra`` are query parameters the page's links keep (a pool, say)."""
    extra = extra or {}
    if len(find.q) > MAX_NAME:
        return NamePage([], find, 0, extra=extra)
    if find.q:
        rows = rows.filter(name__icontains=find.q)
    total = rows.count()
    if find.before:
        found = list(rows.filter(name__lt=find.before).order_by("-name")[: size + 1])
        more_before = len(found) > size
        items = found[:size][::-1]
        more_after = rows.filter(name__gte=find.before).exists()
    else:
        window = rows.filter(name__gt=find.after) if find.after else rows
        found = list(window.order_by("name")[: size + 1])
        more_after = len(found) > size
        items = found[:size]
        more_before = bool(find.after) and rows.filter(name__lte=find.after).exists()
    return NamePage(
        items,
        find,
        total,
        next_after=items[-1].name if items and more_after else "",
        previous_before=items[0].name if items and more_before else "",
        extra=extra,
    )


def list_response(
    request: HttpRequest, page_template: str, results_template: str, context: dict[str, Any]
) -> HttpResponse:
    """A list page, or only its results (the rows, pager and count) for htmx's find as you
    type; a history restore gets the whole page. Caches are told the answer depends on it."""
    partial = request.headers.get("HX-Request") == "true" and not request.headers.get(
        "HX-History-Restore-Request"
    )
    if partial:
        response = render(request, results_template, {**context, "oob": True})
    else:
        response = render(request, page_template, context)
    patch_vary_headers(response, ["HX-Request"])
    return response
