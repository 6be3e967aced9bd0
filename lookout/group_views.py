"""The grouped jobs grid's rows: group rows with their counts per state, expanded in place.

The jobs view puts the top level (``lookout.grid.groups.render_groups``) into the grid's
body. ``GET /groups?<the view's query>&path=<JSON path>`` answers what expanding the group
``path`` inserts below its row: the next level's group rows, or at the last level a keyset
page of job rows in the view's columns and sort, ended by a "more" row that loads the next
page (the same URL with ``after=<cursor>``). ``expanded=<JSON path>`` (repeatable) in the
page's URL names the groups shown open, so a shared URL reopens them.

Every row this renders carries ``data-level``: a group row its depth (1 at the top), a
level's note its groups' depth, a "more" row one more than the deepest group. Collapsing a
group of depth N removes the rows after it up to the next row of level N or less (job rows
have no level: they always go with the group above them). The grid is a table, not a tree
grid, so a row cannot carry ``aria-level`` or ``aria-expanded``: the group's toggle button
says whether it is open (``aria-expanded``) and which rows it shows (``aria-controls``), and
its name says which groups it is in.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from html import escape
from urllib.parse import quote

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET

from lookout.grid.columns import ANNOTATION_PREFIX
from lookout.grid.filters import FilterError
from lookout.grid.groups import (
    Path,
    label,
    level_counts,
    narrowed,
    no_value_label,
    parse_path,
    path_json,
)
from lookout.grid.pages import grid_page
from lookout.grid.params import GridParams
from lookout.queue_scope import watches_no_queue_later

MAX_EXPANDED = 20  # groups a URL may name open


@dataclass
class GroupItem:
    """A group row as the template shows it."""

    dom_id: str
    path: str  # JSON
    level: int
    column: str  # the column's label
    value: str  # as shown ("(none)" for no value)
    total: int
    states: tuple[tuple[str, str], ...]  # (state, jobs as shown)
    expanded: bool
    children_url: str
    list_url: str
    controls: str  # the ids aria-controls names
    within: str  # the groups it is in, for screen readers ("" at the top)
    children: SafeString

    @property
    def total_text(self) -> str:
        return f"{self.total:,} job{'' if self.total == 1 else 's'}"

    def html(self, colspan: int) -> str:
        """The group row (``<tr class="group-row">``), written here rather than by a template:
        a level can have hundreds of groups, and a template costs ten times as much. Every
        value is escaped."""
        e = escape
        expanded = "true" if self.expanded else "false"
        within = f'<span class="visually-hidden"> in {e(self.within)}</span>' if self.within else ""
        states = "".join(
            f' <span class="state state-{e(state)}" data-state="{e(state)}">{e(state)} {e(n)}</span>'
            for state, n in self.states
        )
        return (
            f'<tr class="group-row" id="{e(self.dom_id)}" data-group-path="{e(self.path)}"'
            f' data-level="{self.level}" data-total="{self.total}" data-expanded="{expanded}">\n'
            f'  <td colspan="{colspan}" class="group-cell"><div class="group-line">\n'
            f'    <button type="button" class="group-toggle" aria-expanded="{expanded}"'
            f' aria-controls="{e(self.controls)}" data-children-url="{e(self.children_url)}">'
            '<span class="group-caret" aria-hidden="true"></span>'
            f'<span class="group-column">{e(self.column)}</span>'
            f' <span class="group-value">{e(self.value)}</span>'
            f' <span class="group-total">{e(self.total_text)}</span>{within}</button>\n'
            '    <span class="group-states"><span class="visually-hidden">By state:</span>'
            f"{states}</span>\n"
            f'    <a class="group-list" href="{e(self.list_url)}">list<span class="visually-hidden">'
            f" the jobs of {e(self.column.lower())} {e(self.value)}</span></a>\n"
            "  </div></td>\n</tr>\n"
        )


def dom_id(path: Path) -> str:
    """A group row's id: the same for the same path on every render."""
    return "grp-" + hashlib.sha256(path_json(path).encode()).hexdigest()[:16]


def describe(path: Path) -> str:
    """A path as words: "queue demo, job set s1"."""
    words = []
    for key, value in path:
        name = label(key) if key.startswith(ANNOTATION_PREFIX) else label(key).lower()
        words.append(f"{name} {value or no_value_label(key)}")
    return ", ".join(words)


def expanded_paths(request: HttpRequest, group: tuple[str, ...]) -> set[Path]:
    """The groups the URL's ``expanded`` names open (``FilterError`` naming it when bad)."""
    raws = [raw for raw in request.GET.getlist("expanded") if raw.strip()]
    if len(raws) > MAX_EXPANDED:
        raise FilterError("expanded", f"names more than {MAX_EXPANDED} groups")
    paths = {parse_path(raw, group, "expanded") for raw in raws}
    if () in paths:
        raise FilterError("expanded", "a group's path names at least its top level")
    return paths


def _with_path(url: str, path: Path) -> str:
    query = url if len(url) > 1 else "?"
    separator = "&" if len(query) > 1 else ""
    return f"{reverse('lookout:grid-groups')}{query}{separator}path={quote(path_json(path))}"


def render_level(request: HttpRequest, params: GridParams, path: Path) -> str:
    """What goes below the group ``path`` (the top level for ``()``): the next level's group
    rows, or the job rows of the last level (from ``params.after`` when set)."""
    if not params.group:
        raise FilterError("group", "name the columns the view groups by (?group=queue)")
    expanded = expanded_paths(request, params.group)
    return _render(request, params, path, expanded, cursor=True)[0]


def _render(
    request: HttpRequest, params: GridParams, path: Path, expanded: set[Path], *, cursor: bool
) -> tuple[SafeString, list[str]]:
    """The rows below ``path`` and the ids of its group rows (none for job rows: the page's
    script names those when it shows them)."""
    if not cursor:
        params = replace(params, after="", before="")
    colspan = 1 + len(params.columns)
    if len(path) == len(params.group):
        return _job_rows(request, params, path, colspan), []
    level = level_counts(request.user, params.filters, params.group, path)
    depth = len(path) + 1
    view = replace(params, after="", before="")
    view_url, jobs_url = view.url(), reverse("lookout:jobs")
    items = []
    for group in level.groups:
        child = (*path, (level.column, group.value))
        is_open = child in expanded
        children, child_ids = (
            _render(request, params, child, expanded, cursor=False) if is_open else ("", [])
        )
        items.append(
            GroupItem(
                dom_id=dom_id(child),
                path=path_json(child),
                level=depth,
                column=label(level.column),
                value=group.value or no_value_label(level.column),
                total=group.total,
                states=tuple((state, f"{n:,}") for state, n in group.states),
                expanded=is_open,
                children_url=_with_path(view_url, child),
                list_url=jobs_url + view.url(filters=narrowed(params.filters, child), group=None),
                controls=" ".join(child_ids) or f"{dom_id(child)}-children",
                within=describe(path),
                children=mark_safe(children),  # noqa: S308 - rendered by our templates
            )
        )
    context = {
        "items": [mark_safe(item.html(colspan) + item.children) for item in items],  # noqa: S308
        "level": depth,
        "colspan": colspan,
        "hidden": level.hidden,
        "as_of": level.as_of,
        "column_label": label(level.column),
        "top": not path,
        "no_queue": watches_no_queue_later(request.user),
    }
    html = render_to_string("lookout/grid/_groups.html", context, request)
    return mark_safe(html), [item.dom_id for item in items]  # noqa: S308 - our templates


def _job_rows(request: HttpRequest, params: GridParams, path: Path, colspan: int) -> SafeString:
    narrowed_params = replace(params, filters=narrowed(params.filters, path))
    page = grid_page(request.user, narrowed_params)
    more_url = ""
    if page.next_cursor:
        view = replace(params, before="")
        more_url = _with_path(view.url(after=page.next_cursor), path)
    context = {
        "rows": page.rows,
        "params": narrowed_params,
        "now": timezone.now(),
        "more_url": more_url,
        "more_level": len(params.group) + 1,
        "colspan": colspan,
        "per_page": params.per_page,
        "group_name": " / ".join(v or no_value_label(k) for k, v in path),
        "first_page": not params.after,
    }
    html = render_to_string("lookout/grid/_group_row_jobs.html", context, request)
    return mark_safe(html)  # noqa: S308 - rendered by our templates


def _bad_request(exc: FilterError) -> HttpResponse:
    """The API's error shape: the grid's script shows its message below the group."""
    return JsonResponse(
        {"message": str(exc), "errors": [{"field": exc.field, "message": exc.message}]},
        status=400,
    )


@login_required
@require_GET
def grid_groups(request: HttpRequest) -> HttpResponse:
    """The rows expanding the group ``path`` inserts (see the module); 400 naming the
    parameter on a bad view, a missing, bad or too deep ``path``, or an unknown column."""
    try:
        params = GridParams.from_request(request)
        if not params.group:
            raise FilterError("group", "name the columns the view groups by (?group=queue)")
        raws = [raw for raw in request.GET.getlist("path") if raw.strip()]
        if len(raws) != 1:
            raise FilterError("path", "name one group: a JSON list of [column, value] pairs")
        path = parse_path(raws[0], params.group)
        html = render_level(request, params, path)
    except FilterError as exc:
        return _bad_request(exc)
    return HttpResponse(html)
