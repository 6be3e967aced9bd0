"""Each user's column choice for the jobs grid, kept on the server so that the grid renders
with it at once on the next visit and in any browser.

The choice is ``{"visible": [column keys in order], "widths": {column key: pixels}}``.
Saving writes it in one ``INSERT ... ON CONFLICT (user) DO UPDATE``, so that two saves at
once for the same user never collide on the unique user (the last one wins) and a user's
save never touches another user's row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from lookout.grid.columns import COLUMNS, MAX_COLUMNS, MAX_WIDTH, MIN_WIDTH, ColumnError, column
from lookout.grid.filters import FilterError
from lookout.models import GridPreference

MAX_WIDTH_ENTRIES = MAX_COLUMNS + len(COLUMNS)


def saved_columns(user: Any) -> tuple[tuple[str, ...] | None, dict[str, int]]:
    """The visible columns (None: not chosen) and widths ``user`` saved. A saved key that is
    no longer a column (the grid changed since) is left out."""
    if not getattr(user, "is_authenticated", False):
        return None, {}
    pref = GridPreference.objects.filter(user=user).only("columns").first()
    if pref is None or not isinstance(pref.columns, dict):
        return None, {}
    visible = tuple(k for k in pref.columns.get("visible") or () if _known(k))
    widths = {
        k: int(w)
        for k, w in (pref.columns.get("widths") or {}).items()
        if _known(k) and isinstance(w, int) and MIN_WIDTH <= w <= MAX_WIDTH
    }
    return visible or None, widths


def request_columns(request: Any) -> tuple[tuple[str, ...] | None, dict[str, int]]:
    """``saved_columns`` of the request's user, read once per request (a grid page needs it
    both to parse its view and to render the chooser)."""
    read = getattr(request, "_lookout_grid_columns", None)
    if read is None:
        read = saved_columns(request.user)
        request._lookout_grid_columns = read
    return read


def _known(key: Any) -> bool:
    try:
        column(str(key))
    except ColumnError:
        return False
    return isinstance(key, str)


def checked_choice(data: Mapping[str, Any]) -> dict[str, Any]:
    """A posted choice, checked: ``FilterError`` naming the field (``visible``,
    ``widths``, ``widths.<key>``) on anything that is not a valid choice."""
    if not isinstance(data, Mapping):
        raise FilterError("columns", "must be an object with visible and widths")
    unknown = set(data) - {"visible", "widths"}
    if unknown:
        raise FilterError(sorted(unknown)[0][:60], "is not a field of the column choice")
    visible = data.get("visible")
    if not isinstance(visible, list) or not all(isinstance(k, str) for k in visible):
        raise FilterError("visible", "must be a list of column keys")
    if not visible:
        raise FilterError("visible", "must name at least one column")
    if len(visible) > MAX_COLUMNS:
        raise FilterError("visible", f"has more than {MAX_COLUMNS} columns")
    if len(set(visible)) != len(visible):
        raise FilterError("visible", "names a column twice")
    for key in visible:
        try:
            column(key)
        except ColumnError as exc:
            raise FilterError("visible", str(exc)) from None
    widths = data.get("widths", {})
    if not isinstance(widths, Mapping):
        raise FilterError("widths", "must be an object of column key: pixels")
    if len(widths) > MAX_WIDTH_ENTRIES:
        raise FilterError("widths", f"has more than {MAX_WIDTH_ENTRIES} entries")
    checked: dict[str, int] = {}
    for key, width in widths.items():
        name = f"widths.{str(key)[:60]}"
        try:
            column(str(key))
        except ColumnError as exc:
            raise FilterError(name, str(exc)) from None
        if isinstance(width, bool) or not isinstance(width, int):
            raise FilterError(name, "must be a whole number of pixels")
        if not MIN_WIDTH <= width <= MAX_WIDTH:
            raise FilterError(name, f"must be from {MIN_WIDTH} to {MAX_WIDTH} pixels")
        checked[key] = width
    return {"visible": list(visible), "widths": checked}


def save_columns(user: Any, choice: Mapping[str, Any]) -> dict[str, Any]:
    """Keep ``choice`` (checked here) as ``user``'s; the last save wins."""
    checked = checked_choice(choice)
    GridPreference.objects.bulk_create(
        [GridPreference(user=user, columns=checked, updated_at=timezone.now())],
        update_conflicts=True,
        unique_fields=["user"],
        update_fields=["columns", "updated_at"],
    )
    return checked


def reset_columns(user: Any) -> None:
    """Forget ``user``'s choice: the grid shows the default columns."""
    GridPreference.objects.filter(user=user).delete()
