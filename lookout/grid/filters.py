"""What the jobs grid is narrowed to, read from the URL, and the query that narrows it.

Every filter is a URL parameter (a shared URL reopens the same view). A bad value is never
ignored: ``JobFilters.from_query`` raises ``FilterError`` naming the parameter, and the views
answer 400 with that message.

The frequent filters are on job columns with indexes of their own (queue; queue and state;
failure category; job-set prefix: migrations 0009 and 0010). Filters on what a job's latest
run says (node, cluster, pool, exit code, decision, retryable) read the job's copy of it
(``latest_*``, kept by ``services.latest_run``), each with a partial index of its own
(migration 0017) that holds only the jobs with a value.

The counts a job keeps, its runs and retries, filter exactly (``retries=2``) or by range:
``retries_min=1`` is the jobs that were retried (each count has a partial index of the jobs
past its usual value, migration 0031).

``"(none)"`` as a value of a multi-valued or exact filter means "no value": an empty failure
category, no latest run, no exit code, no such annotation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.lookups import Exact

from armada.core.retry import TRAIL_LABELS
from armada.core.states import JobState
from armada.migration_ops import sorts_by_code_point
from armada.models import Job
from armada.services.authz import watchable_queues
from armada.web.storable import text_problem

NONE = "(none)"
RETRYABLE_CHOICES = ("yes", "no", "unknown")
STATES = tuple(s.value for s in JobState)
DECISIONS = TRAIL_LABELS  # what a run's decision trail can record
MAX_TEXT = 256  # longer than any id, owner, node, cluster or pool; job sets have their own
MAX_JOB_SET = 1024
MAX_VALUES = 50  # values of one multi-valued filter
MAX_ANNOTATION_FILTERS = 10
MAX_ANNOTATION_KEY = 317  # a Kubernetes annotation key: 253 prefix + "/" + 63 name
MAX_ANNOTATION_VALUE = 1024
MAX_INT = 2**63 - 1
MIN_EXIT_CODE, MAX_EXIT_CODE = -(2**31), 2**31 - 1
MAX_COUNT = 2**31 - 1  # runs and retries


class FilterError(ValueError):
    """A URL parameter of the grid that cannot be used; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# Text filters (one value each): URL parameter -> (kind, max length). "prefix" matches the
# start of the value, "exact" all of it.
TEXT_FILTERS: dict[str, tuple[str, int]] = {
    "job_id": ("prefix", MAX_TEXT),
    "job_set": ("prefix", MAX_JOB_SET),
    "job_set_exact": ("exact", MAX_JOB_SET),
    "owner": ("prefix", MAX_TEXT),
    "owner_exact": ("exact", MAX_TEXT),
    "node": ("prefix", MAX_TEXT),
    "node_exact": ("exact", MAX_TEXT),
    "cluster": ("prefix", MAX_TEXT),
    "cluster_exact": ("exact", MAX_TEXT),
    "pool": ("prefix", MAX_TEXT),
    "pool_exact": ("exact", MAX_TEXT),
}
# Multi-valued filters: dataclass field -> URL parameter (repeated).
MULTI_FILTERS: dict[str, str] = {
    "queues": "queue",
    "states": "state",
    "priority_classes": "priority_class",
    "categories": "category",
    "subcategories": "subcategory",
    "decisions": "decision",
    "retryable": "retryable",
}
# Range filters: (min field, max field, URL name of both, kind).
RANGE_FILTERS: tuple[tuple[str, str, str, str], ...] = (
    ("priority_min", "priority_max", "priority", "int"),
    ("exit_code_min", "exit_code_max", "exit_code", "int"),
    ("retries_min", "retries_max", "retries", "int"),
    ("runs_min", "runs_max", "runs", "int"),
    ("submitted_from", "submitted_to", "submitted", "time"),
    ("in_state_from", "in_state_to", "in_state", "time"),
)
# Counts a job keeps, filtered exactly (``retries=2``) or by range (``retries_min=1``: the
# jobs that were retried): URL parameter (and field) -> the job field that holds the count.
COUNT_FILTERS: dict[str, str] = {"retries": "retry_count", "runs": "run_count"}
# Columns ``with_exact`` narrows (a group's value, lookout.grid.groups) -> the field that holds the value.
EXACT_COLUMNS: dict[str, str] = {
    "queue": "queues",
    "job_set": "job_set_exact",
    "state": "states",
    "category": "categories",
    "subcategory": "subcategories",
    "decision": "decisions",
    "retryable": "retryable",
    "priority_class": "priority_classes",
    "owner": "owner_exact",
    "node": "node_exact",
    "cluster": "cluster_exact",
    "pool": "pool_exact",
    "exit_code": "exit_code",
    "retries": "retries",
    "runs": "runs",
}


@dataclass(frozen=True)
class AnnotationFilter:
    """``key=value`` (``value`` set), ``key`` exists (``value`` None), or, with
    ``missing``, the job has no such annotation (the "(none)" group of a grouping)."""

    key: str
    value: str | None = None
    missing: bool = False

    @property
    def param(self) -> str:
        if self.missing:
            return f"!{self.key}"
        return self.key if self.value is None else f"{self.key}={self.value}"

    @property
    def label(self) -> str:
        if self.missing:
            return f"no {self.key}"
        return f"{self.key} exists" if self.value is None else f"{self.key} = {self.value}"


@dataclass(frozen=True)
class JobFilters:
    """What the grid is narrowed to; empty fields do not filter."""

    job_id: str = ""
    job_set: str = ""
    job_set_exact: str = ""
    owner: str = ""
    owner_exact: str = ""
    node: str = ""
    node_exact: str = ""
    cluster: str = ""
    cluster_exact: str = ""
    pool: str = ""
    pool_exact: str = ""
    queues: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    priority_classes: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subcategories: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    retryable: tuple[str, ...] = ()
    priority_min: int | None = None
    priority_max: int | None = None
    exit_code: str = ""  # exact: a whole number or "(none)"
    exit_code_min: int | None = None
    exit_code_max: int | None = None
    retries: int | None = None  # exact
    retries_min: int | None = None
    retries_max: int | None = None
    runs: int | None = None  # exact
    runs_min: int | None = None
    runs_max: int | None = None
    submitted_from: datetime | None = None
    submitted_to: datetime | None = None
    in_state_from: datetime | None = None
    in_state_to: datetime | None = None
    annotations: tuple[AnnotationFilter, ...] = ()

    @classmethod
    def from_query(cls, query: Mapping[str, Any]) -> JobFilters:
        """From a request's GET (a QueryDict: multi-valued parameters repeat). An empty
        value does not filter (a form sends its empty fields). Raises ``FilterError``."""
        from lookout.grid.filter_parsing import parse_filters

        return cls(**parse_filters(query))

    def as_params(self) -> list[tuple[str, str]]:
        """The filters as URL parameters (only those that are set)."""
        from lookout.grid.filter_parsing import format_time

        params: list[tuple[str, str]] = []
        for name in TEXT_FILTERS:
            if value := getattr(self, name):
                params.append((name, value))
        for name, param in MULTI_FILTERS.items():
            params.extend((param, v) for v in getattr(self, name))
        for low, high, param, kind in RANGE_FILTERS:
            for attr, suffix in ((low, "min" if kind == "int" else "from"), (high, None)):
                value = getattr(self, attr)
                if value is None:
                    continue
                suffix = suffix or ("max" if kind == "int" else "to")
                shown = format_time(value) if kind == "time" else str(value)
                params.append((f"{param}_{suffix}", shown))
        if self.exit_code:
            params.append(("exit_code", self.exit_code))
        for name in COUNT_FILTERS:
            if (count := getattr(self, name)) is not None:
                params.append((name, str(count)))
        params.extend(("ann", a.param) for a in self.annotations)
        return params

    @property
    def active(self) -> bool:
        return bool(self.as_params())

    def with_exact(self, column: str, value: str) -> JobFilters:
        """These filters narrowed to one value of ``column`` (a key of ``EXACT_COLUMNS`` or
        ``annotation:<key>``); ``""`` means "(none)" (no value)."""
        if column.startswith("annotation:"):
            key = column.removeprefix("annotation:")
            kept = tuple(a for a in self.annotations if a.key != key)
            wanted = (
                AnnotationFilter(key, missing=True) if value == "" else AnnotationFilter(key, value)
            )
            return replace(self, annotations=(*kept, wanted))
        if column not in EXACT_COLUMNS:
            raise FilterError("group", f"{column!r} is not a column jobs can be grouped by")
        name = EXACT_COLUMNS[column]
        shown = value if value != "" else ("unknown" if column == "retryable" else NONE)
        if name in MULTI_FILTERS:
            return replace(self, **{name: (shown,)})
        if name == "exit_code":
            return replace(self, exit_code=shown, exit_code_min=None, exit_code_max=None)
        if name in COUNT_FILTERS:
            if not (value.isascii() and value.isdigit()):
                raise FilterError("group", f"{column} is a whole number, not {value[:40]!r}")
            return replace(self, **{name: int(value), f"{name}_min": None, f"{name}_max": None})
        prefix_name = name.removesuffix("_exact")
        return replace(self, **{name: shown, prefix_name: ""})

    def without(self, *names: str) -> JobFilters:
        """These filters with the named fields cleared."""
        defaults = {f.name: f.default for f in fields(self) if f.name in names}
        return replace(self, **defaults)


# --- the query ---------------------------------------------------------------------------


def jobs_visible(actor: Any) -> QuerySet[Job]:
    """The jobs ``actor`` may watch (through ``services.authz``)."""
    qs = Job.objects.all()
    allowed = watchable_queues(actor)
    if allowed is not None:
        qs = qs.filter(queue_id__in=allowed)
    return qs


def _one_or_many(qs: QuerySet[Job], field: str, values: tuple[str, ...]) -> QuerySet[Job]:
    values = tuple("" if v == NONE else v for v in values)
    if len(values) == 1:
        return qs.filter(**{field: values[0]})
    return qs.filter(**{f"{field}__in": values}) if values else qs


_codepoint_order: bool | None = None


def _sorts_by_code_point() -> bool:
    """``migration_ops.sorts_by_code_point`` of the database (C, POSIX or C.UTF-8: the
    project's databases), read once per process."""
    global _codepoint_order
    if _codepoint_order is None:
        _codepoint_order = sorts_by_code_point(connection)
    return _codepoint_order


def starts_with(field: str, prefix: str) -> Q:
    """``field`` starts with ``prefix``. PostgreSQL uses a plain index for ``LIKE 'x%'`` only
    under the C collation, so where text sorts by code point the same test is also written
    as a range (``>= prefix`` and ``<`` the prefix with its last character the next one),
    which the column's index answers: a node prefix then reads the node index."""
    condition = Q(**{f"{field}__startswith": prefix})
    if not prefix or not _sorts_by_code_point():
        return condition
    last = ord(prefix[-1]) + 1
    if 0xD800 <= last <= 0xDFFF:
        last = 0xE000  # past the surrogates, which no stored text holds
    if last > 0x10FFFF:
        return condition
    return condition & Q(**{f"{field}__gte": prefix, f"{field}__lt": prefix[:-1] + chr(last)})


def in_range(qs: QuerySet[Job], field: str, low: Any, high: Any) -> QuerySet[Job]:
    """``qs`` with ``field`` from ``low`` to ``high``, both included (None: no bound)."""
    if low is not None:
        qs = qs.filter(**{f"{field}__gte": low})
    if high is not None:
        qs = qs.filter(**{f"{field}__lte": high})
    return qs


def apply_filters(qs: QuerySet[Job], filters: JobFilters) -> QuerySet[Job]:
    """``qs`` narrowed to the jobs ``filters`` match."""
    f = filters
    if f.job_id:
        # The primary key answers the range (the pattern twin of it is gone where text sorts
        # by code point, migration 0035).
        qs = qs.filter(starts_with("id", f.job_id.lower()))
    if f.job_set:
        qs = qs.filter(job_set__startswith=f.job_set)
    if f.job_set_exact:
        qs = qs.filter(job_set="" if f.job_set_exact == NONE else f.job_set_exact)
    if f.owner:
        qs = qs.filter(owner__startswith=f.owner)
    if f.owner_exact:
        qs = qs.filter(owner="" if f.owner_exact == NONE else f.owner_exact)
    qs = _one_or_many(qs, "queue_id", f.queues)
    qs = _one_or_many(qs, "state", f.states)
    qs = _one_or_many(qs, "priority_class", f.priority_classes)
    qs = _one_or_many(qs, "failure_category", f.categories)
    qs = _one_or_many(qs, "failure_subcategory", f.subcategories)
    qs = in_range(qs, "priority", f.priority_min, f.priority_max)
    qs = in_range(qs, "submitted_at", f.submitted_from, f.submitted_to)
    qs = in_range(qs, "last_transition_at", f.in_state_from, f.in_state_to)
    for name, field in COUNT_FILTERS.items():
        qs = in_range(qs, field, getattr(f, f"{name}_min"), getattr(f, f"{name}_max"))
        if (count := getattr(f, name)) is not None:
            qs = qs.filter(**{field: count})
    qs = _apply_annotations(qs, f.annotations)
    return _apply_run_filters(qs, f)


def _apply_annotations(qs: QuerySet[Job], annotations: tuple[AnnotationFilter, ...]):
    for a in annotations:
        if a.missing:
            qs = qs.exclude(annotations__has_key=a.key)
        elif a.value is None:
            qs = qs.filter(annotations__has_key=a.key)
        else:
            qs = qs.filter(Exact(KeyTextTransform(a.key, "annotations"), a.value))
    return qs


def _apply_run_filters(qs: QuerySet[Job], f: JobFilters) -> QuerySet[Job]:
    """The filters on the job's latest run, through the job's copy of it (``latest_*``,
    ``services.latest_run``): a job never leased has no node, cluster, pool, exit code or
    decision, and an unknown retryable verdict."""
    for field, prefix, exact in (
        ("latest_node", f.node, f.node_exact),
        ("latest_executor", f.cluster, f.cluster_exact),
        ("latest_pool", f.pool, f.pool_exact),
    ):
        if prefix:
            qs = qs.filter(starts_with(field, prefix))
        if exact:
            qs = qs.filter(**{field: "" if exact == NONE else exact})
    qs = in_range(qs, "latest_exit_code", f.exit_code_min, f.exit_code_max)
    if f.exit_code == NONE:
        qs = qs.filter(latest_exit_code__isnull=True)
    elif f.exit_code:
        qs = qs.filter(latest_exit_code=int(f.exit_code))
    qs = _one_or_many(qs, "latest_decision", f.decisions)
    if f.retryable and set(f.retryable) != set(RETRYABLE_CHOICES):
        known = [v == "yes" for v in f.retryable if v != "unknown"]
        wanted = Q(latest_retryable__in=known) if known else Q(pk__in=[])
        if "unknown" in f.retryable:
            wanted |= Q(latest_retryable__isnull=True)
        qs = qs.filter(wanted)
    return qs


def text_ok(field: str, value: str, limit: int) -> str:
    """``value`` stripped, or ``FilterError`` when it cannot be a filter value."""
    value = value.strip()
    if problem := text_problem(value):
        raise FilterError(field, problem)
    if len(value) > limit:
        raise FilterError(field, f"is longer than {limit} characters")
    return value
