"""What the grid's header shows for each visible column: its label, sort link and
``aria-sort``, width, and the filter control of the filter row with the values the URL
holds (raw, as typed: after a refused value the page shows what was sent, to be fixed).

Filters on columns that are not shown, and the exact filters a group link sets, are kept as
hidden fields of the filter form and shown as removable chips above the grid, so that
filtering by a shown column never drops them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lookout.grid.columns import COLUMNS, MAX_WIDTH, MIN_WIDTH, column
from lookout.grid.filters import COUNT_FILTERS, MULTI_FILTERS, NONE, RANGE_FILTERS, TEXT_FILTERS
from lookout.grid.params import GridParams

_ENDS = {"int": ("min", "max"), "time": ("from", "to")}
# Column key -> its filter's URL parameters.
PREFIX_PARAMS = {
    "id": "job_id",
    "job_set": "job_set",
    "owner": "owner",
    "node": "node",
    "cluster": "cluster",
    "pool": "pool",
}
MULTI_PARAMS = {
    "queue": "queue",
    "state": "state",
    "priority_class": "priority_class",
    "category": "category",
    "subcategory": "subcategory",
    "decision": "decision",
    "retryable": "retryable",
}
RANGE_PARAMS = {
    "priority": "priority",
    "exit_code": "exit_code",
    "runs": "runs",
    "retries": "retries",
}
TIME_PARAMS = {"submitted": "submitted", "in_state": "in_state"}
# The filters' URL parameters (``ann`` has chips of its own).
FILTER_PARAMS = frozenset(
    {
        *TEXT_FILTERS,
        *MULTI_FILTERS.values(),
        *(f"{p}_{s}" for _, _, p, kind in RANGE_FILTERS for s in _ENDS[kind]),
        "exit_code",
        *COUNT_FILTERS,
    }
)
# Labels of filter parameters for the chips of filters without a shown control.
PARAM_LABELS = {
    "job_set_exact": "Job set",
    "owner_exact": "Owner",
    "node_exact": "Node",
    "cluster_exact": "Cluster",
    "pool_exact": "Pool",
    "exit_code": "Exit code",
    "retries": "Retries",
    "runs": "Runs",
}


def filters_set(raw: Mapping[str, list[str]]) -> bool:
    """Whether the query sets any filter (annotation filters included), valid or not."""
    return any(v.strip() for name in (*FILTER_PARAMS, "ann") for v in raw.get(name, []))


def controlled_params(key: str) -> tuple[str, ...]:
    """The URL parameters the filter control of column ``key`` holds."""
    if key in PREFIX_PARAMS:
        return (PREFIX_PARAMS[key],)
    if key in MULTI_PARAMS:
        return (MULTI_PARAMS[key],)
    if key in RANGE_PARAMS:
        name = RANGE_PARAMS[key]
        return (f"{name}_min", f"{name}_max")
    if key in TIME_PARAMS:
        name = TIME_PARAMS[key]
        return (f"{name}_from", f"{name}_to")
    return ()


def _param_label(param: str) -> str:
    if param in PARAM_LABELS:
        return PARAM_LABELS[param]
    for key in COLUMNS:
        if param in controlled_params(key):
            suffix = param.rsplit("_", 1)[-1]
            extra = f" {suffix}" if suffix in ("min", "max", "from", "to") else ""
            return COLUMNS[key].label + extra
    return param


@dataclass
class HeaderCell:
    key: str
    label: str
    width: int
    sortable: bool
    sort_url: str = ""
    aria_sort: str = "none"
    num: bool = False
    kind: str | None = None
    param: str = ""
    value: str = ""
    low: str = ""
    high: str = ""
    options: list[dict[str, Any]] = field(default_factory=list)
    summary: str = "any"
    active: bool = False

    @property
    def width_class(self) -> str:
        return f"w-{self.width}"

    @property
    def min_width(self) -> int:
        return MIN_WIDTH

    @property
    def max_width(self) -> int:
        return MAX_WIDTH


def _snap(width: int) -> int:
    return max(MIN_WIDTH, min(MAX_WIDTH, int(round(width / 10.0)) * 10))


def header_cells(
    params: GridParams, raw: Mapping[str, list[str]], options: Mapping[str, list[tuple[str, str]]]
) -> list[HeaderCell]:
    """The header cells of ``params``' columns; ``raw``: the query's values (lists)."""

    def first(name: str) -> str:
        values = [v for v in raw.get(name, []) if v.strip()]
        return values[0] if values else ""

    cells = []
    for key in params.columns:
        col = column(key)
        cell = HeaderCell(
            key=key,
            label=col.label,
            width=_snap(params.width(key)),
            sortable=bool(col.sort),
            num=col.num,
        )
        if col.sort:
            cell.sort_url = params.sort_url(key)
            cell.aria_sort = params.aria_sort(key)
        if key in PREFIX_PARAMS:
            cell.kind, cell.param = "prefix", PREFIX_PARAMS[key]
            cell.value = first(cell.param)
            cell.active = bool(cell.value)
        elif key in MULTI_PARAMS:
            cell.kind, cell.param = "multi", MULTI_PARAMS[key]
            chosen = [v for v in raw.get(cell.param, []) if v.strip()]
            known = list(options.get(key, []))
            known += [(v, v) for v in chosen if v not in {k for k, _ in known}]
            cell.options = [{"value": v, "label": lbl, "checked": v in chosen} for v, lbl in known]
            cell.active = bool(chosen)
            if chosen:
                shown = ", ".join("(none)" if v == NONE else v for v in chosen[:2])
                cell.summary = shown + (f" +{len(chosen) - 2}" if len(chosen) > 2 else "")
        elif key in RANGE_PARAMS or key in TIME_PARAMS:
            cell.kind = "range" if key in RANGE_PARAMS else "time"
            low_name, high_name = controlled_params(key)
            cell.param = RANGE_PARAMS.get(key) or TIME_PARAMS[key]
            cell.low, cell.high = first(low_name), first(high_name)
            cell.active = bool(cell.low or cell.high)
            if cell.active:
                if cell.kind == "range":
                    cell.summary = f"{cell.low or '…'} – {cell.high or '…'}"
                else:
                    cell.summary = f"{cell.low[:16] or '…'} – {cell.high[:16] or '…'}"
        cells.append(cell)
    return cells


@dataclass
class KeptFilter:
    """A filter without a control in the shown columns: a hidden field and a chip."""

    param: str
    value: str
    label: str
    remove_url: str


def kept_filters(params: GridParams, raw: Mapping[str, list[str]]) -> list[KeptFilter]:
    """The query's filter values that no shown column's control holds."""
    shown = {p for key in params.columns for p in controlled_params(key)}
    kept = []
    for name, values in raw.items():
        if name in shown or name not in FILTER_PARAMS:
            continue
        for value in values:
            if not value.strip():
                continue
            remaining = [
                (k, v) for k, vs in raw.items() for v in vs if not (k == name and v == value)
            ]
            kept.append(
                KeptFilter(
                    param=name,
                    value=value,
                    label=f"{_param_label(name)}: {value}",
                    remove_url=_query(remaining),
                )
            )
    return kept


def annotation_chips(raw: Mapping[str, list[str]]) -> list[KeptFilter]:
    """The ``ann`` filters, each with the URL without it."""
    chips = []
    for value in raw.get("ann", []):
        if not value.strip():
            continue
        remaining = [
            (k, v)
            for k, vs in raw.items()
            for v in vs
            if not (k == "ann" and v == value) and k not in ("after", "before", "fragment")
        ]
        key, has_value, rest = value.removeprefix("!").partition("=")
        if value.startswith("!"):
            label = f"no {key}"
        else:
            label = f"{key} = {rest}" if has_value else f"{key} exists"
        chips.append(KeptFilter("ann", value, label, _query(remaining)))
    return chips


def _query(pairs: list[tuple[str, str]]) -> str:
    from urllib.parse import urlencode

    kept = [(k, v) for k, v in pairs if v.strip() and k not in ("after", "before", "fragment")]
    return "?" + urlencode(kept) if kept else "?"
