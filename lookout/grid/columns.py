"""The columns the jobs grid can show: their keys (as the URL and the saved choice name
them), labels, what sorts them, which filter their header holds, whether jobs can be grouped
by them, and whether and how wide they show by default.

Besides the fixed columns, ``annotation:<key>`` shows a job's annotation ``<key>``.

The default columns and widths fit a 1280 px window (the page has about 1240 px for the
grid) with state, failure category, retries, decision and retryable in view.
"""

from __future__ import annotations

from dataclasses import dataclass

from armada.web.storable import text_problem

ANNOTATION_PREFIX = "annotation:"
MAX_ANNOTATION_KEY = 317
MIN_WIDTH, MAX_WIDTH = 40, 800
MAX_COLUMNS = 40  # visible columns, annotations included


@dataclass(frozen=True)
class Column:
    """One column of the grid.

    ``sort``: the job field a click on the header sorts by (None: not sortable).
    ``filter``: the header's filter: "prefix" (text box, matches the start), "multi"
    (checkbox list), "range" (min/max numbers), "time" (from/to), or None.
    ``field``: the job field the value lives in, for grouping (what the job's latest run
    says is copied onto the job: ``latest_*``). ``num``: numbers, right-aligned.
    """

    key: str
    label: str
    sort: str | None = None
    filter: str | None = None
    groupable: bool = False
    default: bool = False
    width: int = 100
    field: str | None = None
    num: bool = False

    @property
    def annotation_key(self) -> str | None:
        if self.key.startswith(ANNOTATION_PREFIX):
            return self.key.removeprefix(ANNOTATION_PREFIX)
        return None


def _c(key: str, label: str, **kwargs) -> Column:
    return Column(key, label, **kwargs)


# Registry order is the default order. Widths are in pixels, multiples of 10 (the grid's
# stylesheet has a class per width); the default ones add up to about 1,100 px.
COLUMNS: dict[str, Column] = {
    c.key: c
    for c in (
        _c("id", "Job id", sort="id", filter="prefix", default=True, width=210, field="id"),
        _c("queue", "Queue", sort="queue_id", filter="multi", groupable=True, default=True,
           width=90, field="queue_id"),
        _c("job_set", "Job set", sort="job_set", filter="prefix", groupable=True, default=True,
           width=120, field="job_set"),
        _c("state", "State", sort="state", filter="multi", groupable=True, default=True,
           width=100, field="state"),
        _c("priority", "Priority", sort="priority", filter="range", width=80, field="priority",
           num=True),
        _c("priority_class", "Priority class", sort="priority_class", filter="multi",
           groupable=True, width=130, field="priority_class"),
        _c("owner", "Owner", sort="owner", filter="prefix", groupable=True, width=100,
           field="owner"),
        _c("resources", "Resources", width=150),
        _c("submitted", "Submitted", sort="submitted_at", filter="time", width=110,
           field="submitted_at", num=True),
        _c("in_state", "Time in state", sort="last_transition_at", filter="time", default=True,
           width=120, field="last_transition_at", num=True),
        _c("node", "Node", filter="prefix", groupable=True, width=110, field="latest_node"),
        _c("cluster", "Cluster", filter="prefix", groupable=True, width=100,
           field="latest_executor"),
        _c("pool", "Pool", filter="prefix", groupable=True, width=90, field="latest_pool"),
        _c("exit_code", "Exit code", filter="range", groupable=True, width=80,
           field="latest_exit_code", num=True),
        _c("runtime", "Runtime", width=90, num=True),
        _c("category", "Failure category", sort="failure_category", filter="multi",
           groupable=True, default=True, width=140, field="failure_category"),
        _c("subcategory", "Subcategory", sort="failure_subcategory", filter="multi",
           groupable=True, width=120, field="failure_subcategory"),
        _c("runs", "Runs", sort="run_count", filter="range", groupable=True, width=60,
           field="run_count", num=True),
        _c("retries", "Retries", sort="retry_count", filter="range", groupable=True,
           default=True, width=80, field="retry_count", num=True),
        _c("decision", "Decision", filter="multi", groupable=True, default=True, width=140,
           field="latest_decision"),
        _c("retryable", "Retryable", filter="multi", groupable=True, default=True, width=90,
           field="latest_retryable"),
    )
}  # fmt: skip
DEFAULT_COLUMNS: tuple[str, ...] = tuple(k for k, c in COLUMNS.items() if c.default)
SORTS: dict[str, str] = {k: c.sort for k, c in COLUMNS.items() if c.sort}
INT_SORTS = frozenset({"priority", "runs", "retries"})
DATETIME_SORTS = frozenset({"submitted", "in_state"})


class ColumnError(ValueError):
    """A column key that is not one of the grid's."""


def annotation_key_problem(key: str) -> str | None:
    if not key.strip() or key != key.strip():
        return "an annotation key must not be empty or start or end with a space"
    if len(key) > MAX_ANNOTATION_KEY:
        return f"an annotation key is at most {MAX_ANNOTATION_KEY} characters"
    if "," in key:
        return "an annotation key cannot hold a comma"
    return text_problem(key)


def column(key: str) -> Column:
    """The column ``key`` names (``annotation:<key>`` included), or ``ColumnError``."""
    found = COLUMNS.get(key)
    if found is not None:
        return found
    if key.startswith(ANNOTATION_PREFIX):
        name = key.removeprefix(ANNOTATION_PREFIX)
        problem = annotation_key_problem(name)
        if problem is None:
            return Column(key, name, groupable=True, width=120)
        raise ColumnError(f"{key[:60]!r}: {problem}")
    raise ColumnError(f"{key[:60]!r} is not a column")


def groupable(key: str) -> bool:
    try:
        return column(key).groupable
    except ColumnError:
        return False
