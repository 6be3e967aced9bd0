"""The grid's rows: keyset pages of the jobs a viewer may watch, and single rows again.

Pages are keyset pages, never OFFSET (``lookout.grid.cursors``): a page costs an index range
scan whatever its depth. The grid never shows the pod spec (the largest column), so it is
never read. What a job's latest run says is on the job (``latest_*``) but its times (the
runtime) and category, which are read for the page's rows in one query.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.cache import caches
from django.db import connection
from django.db.models import CharField, F, Func, Q, QuerySet

from armada.core.quantity import CPU, GPU, MEMORY, format_quantity
from armada.models import Job, Run
from lookout.grid.columns import COLUMNS
from lookout.grid.cursors import checked_cursor, encode_cursor
from lookout.grid.filters import NONE, apply_filters, in_range, jobs_visible
from lookout.grid.params import GridParams

MAX_ROW_IDS = 200
# A job-set prefix with at least this many matching jobs is "broad": the page is found by
# walking the primary key (matches are dense) rather than by reading and sorting every match.
BROAD_PREFIX_MATCHES = 30_000
# The same for a submission-time range. Its matches are read from an index that holds the
# time and the id, so reading and sorting this many (~0.1 s at a million jobs) still beats
# walking the key past every job submitted after the range.
BROAD_RANGE_MATCHES = 200_000
# The same for several values of a column with an index of its own (states, queues, failure
# categories, decisions): one value is read in id order from that index, several are not,
# and a rare pair (queued and running when the queues are empty) would have the key walked
# past every job.
BROAD_VALUES_MATCHES = 10_000
# Filter -> the job column it narrows, for the filters that take several values.
MULTI_VALUED = {
    "states": "state",
    "queues": "queue_id",
    "categories": "failure_category",
    "decisions": "latest_decision",
}
# How long a "broad or few" answer is kept (it only decides how a page is read).
PLAN_KEEP_SECONDS = 60
PLAN_PREFIX = "lookout:grid-plan:"
PLAN_CACHE = "lookout-plans"
# Job columns no row shows (the pod spec is the largest of all).
UNREAD = ("pod_spec", "mutations", "terminal_message", "client_id", "services", "ingress")


@dataclass
class JobRow:
    """A row of the grid: the job (with its copy of what its latest run says: node, cluster,
    pool, exit code, decision, verdict) and the latest run's times and category."""

    job: Job
    run: Run | None

    @property
    def resources(self) -> str:
        requests = self.job.requests or {}
        parts = []
        for resource, label in ((CPU, "cpu"), (MEMORY, "mem"), (GPU, "gpu")):
            if requests.get(resource):
                parts.append(f"{label} {format_quantity(int(requests[resource]), resource)}")
        return ", ".join(parts)

    def runtime_seconds(self, now: datetime) -> float | None:
        if self.run is None or self.run.running_at is None:
            return None
        end = self.run.finished_at or now
        return max(0.0, (end - self.run.running_at).total_seconds())

    @property
    def decision(self) -> str:
        return self.job.latest_decision

    @property
    def retryable(self) -> str:
        """The latest run's verdict: yes, no, or unknown (not decided, or no run)."""
        if self.job.latest_retryable is None:
            return "unknown"
        return "yes" if self.job.latest_retryable else "no"

    @property
    def category(self) -> str:
        """The job's failure category, or while it has none, its latest run's."""
        if self.job.failure_category:
            return self.job.failure_category
        return self.run.failure_category if self.run is not None else ""

    @property
    def subcategory(self) -> str:
        if self.job.failure_category or self.job.failure_subcategory:
            return self.job.failure_subcategory
        return self.run.failure_subcategory if self.run is not None else ""

    def annotation(self, key: str) -> str:
        value = (self.job.annotations or {}).get(key)
        return "" if value is None else str(value)


@dataclass
class GridPage:
    rows: list[JobRow]
    next_cursor: str  # for ``after``: the page that follows, "" at the end
    prev_cursor: str  # for ``before``: the page that precedes, "" at the start

    @property
    def ids(self) -> list[str]:
        return [row.job.id for row in self.rows]


def _keyset(column: str, value: Any, job_id: str, forward: bool) -> Q:
    op = "lt" if forward else "gt"
    return Q(**{f"{column}__{op}": value}) | Q(**{column: value, f"id__{op}": job_id})


def filtered_jobs(actor: Any, params: GridParams) -> QuerySet[Job]:
    """The jobs ``actor`` may watch that ``params``' filters match."""
    return apply_filters(jobs_visible(actor), params.filters)


def grid_page(actor: Any, params: GridParams) -> GridPage:
    """One keyset page of the jobs ``actor`` may watch, filtered and sorted as ``params``
    say. Raises ``FilterError`` on a cursor that is not one of this sort."""
    page_size = params.per_page
    column = COLUMNS[params.sort].sort or "id"
    qs = filtered_jobs(actor, params)
    backwards = bool(params.before)
    cursor = checked_cursor(
        "before" if backwards else "after",
        params.before if backwards else params.after,
        params.sort,
    )
    # ``descending`` pages walk to smaller values; a page walked backwards flips that.
    walk_down = params.descending != backwards
    if cursor is not None:
        qs = qs.filter(_keyset(column, cursor[0], cursor[1], walk_down))
    prefix = "-" if walk_down else ""
    order: list[Any] = [f"{prefix}{column}", f"{prefix}id"] if column != "id" else [f"{prefix}id"]
    if column == "id" and connection.vendor == "postgresql" and _few_matches(params):
        # Jobs of a job set are submitted together, jobs of a time range are neighbours in
        # time, and a rare state can have no job at all, so PostgreSQL's guess that the
        # matches are spread evenly over the ids is wrong, and walking the primary key
        # backwards looking for them can read every row. Ordering by an expression of the id
        # makes it read the matches through the filter's own index (job-set prefix, time,
        # state, queue, category, decision) and sort them instead. That reads every match,
        # so it is only done when they are few; for a broad prefix (``team-``), range or set
        # of values, matches are everywhere and walking the key finds a page at once. The
        # ids of the page come from the index alone (each includes the id), so only the
        # page's rows are read from the table.
        id_text = Func(F("id"), template="(%(expressions)s || '')", output_field=CharField())
        page_ids = qs.order_by(id_text.desc() if walk_down else id_text.asc()).values("id")
        qs = Job.objects.filter(id__in=page_ids[: page_size + 1])
    jobs = list(qs.defer(*UNREAD).order_by(*order)[: page_size + 1])
    more = len(jobs) > page_size
    jobs = jobs[:page_size]
    if backwards:
        jobs.reverse()
    first, last = (jobs[0], jobs[-1]) if jobs else (None, None)
    has_next = more if not backwards else bool(jobs)
    has_prev = (cursor is not None and bool(jobs)) if not backwards else more
    return GridPage(
        rows=_rows(jobs),
        next_cursor=encode_cursor(getattr(last, column), last.id) if last and has_next else "",
        prev_cursor=encode_cursor(getattr(first, column), first.id) if first and has_prev else "",
    )


def rows_for(actor: Any, params: GridParams, ids: list[str] | None = None) -> list[JobRow]:
    """The rows of ``ids`` that ``actor`` may watch and that still match ``params``' filters
    (in the grid's sort order); without ``ids``, the rows of the page ``params`` is on."""
    if ids is None:
        return grid_page(actor, params).rows
    wanted = list(dict.fromkeys(ids))[:MAX_ROW_IDS]
    column = COLUMNS[params.sort].sort or "id"
    prefix = "-" if params.descending else ""
    order = [f"{prefix}{column}", f"{prefix}id"] if column != "id" else [f"{prefix}id"]
    qs = filtered_jobs(actor, params).filter(id__in=wanted)
    return _rows(list(qs.defer(*UNREAD).order_by(*order)))


def _few_matches(params: GridParams) -> bool:
    """Whether a filter that PostgreSQL misjudges narrows the jobs to a few: a job-set
    prefix matched by fewer than ``BROAD_PREFIX_MATCHES`` jobs, several values of an indexed
    column (``MULTI_VALUED``) by fewer than ``BROAD_VALUES_MATCHES``, or a submission-time or
    time-in-state range by fewer than ``BROAD_RANGE_MATCHES``."""
    f = params.filters
    if f.job_set and not broad_job_set_prefix(f.job_set):
        return True
    for name, field in MULTI_VALUED.items():
        values = getattr(f, name)
        if len(values) > 1 and not _broad_values(field, values):
            return True
    submitted = (f.submitted_from, f.submitted_to)
    if submitted != (None, None) and not (
        _newest_in_range(*submitted) or _broad_range("submitted_at", *submitted)
    ):
        return True
    if f.in_state_from is not None or f.in_state_to is not None:
        return not _broad_range("last_transition_at", f.in_state_from, f.in_state_to)
    return False


def _newest_in_range(start: datetime | None, end: datetime | None) -> bool:
    """Whether the newest job was submitted in the range: then the range's matches are
    where walking the key starts (the range runs up to now)."""
    newest = Job.objects.order_by("-id").values_list("submitted_at", flat=True).first()
    return (
        newest is not None and (start is None or newest >= start) and (end is None or newest <= end)
    )


def _broad_range(field: str, start: datetime | None, end: datetime | None) -> bool:
    """Whether at least ``BROAD_RANGE_MATCHES`` jobs have ``field`` (a time with an index
    that starts with it) between ``start`` and ``end``: counted through that index, stopping
    at that many."""
    return _at_least(in_range(Job.objects.all(), field, start, end), field, BROAD_RANGE_MATCHES)


def _broad_values(field: str, values: tuple[str, ...]) -> bool:
    """Whether at least ``BROAD_VALUES_MATCHES`` jobs have one of ``values`` in ``field``
    ("(none)": no value): counted through the column's index, stopping at that many."""
    wanted = ["" if v == NONE else v for v in values]
    return _at_least(Job.objects.filter(**{f"{field}__in": wanted}), field, BROAD_VALUES_MATCHES)


def broad_job_set_prefix(prefix: str) -> bool:
    """Whether at least ``BROAD_PREFIX_MATCHES`` jobs (any queue) have a job set starting with
    ``prefix``: counted through the job-set prefix index, stopping at that many."""
    jobs = Job.objects.filter(job_set__startswith=prefix)
    return _at_least(jobs, "job_set", BROAD_PREFIX_MATCHES)


def _at_least(jobs: QuerySet[Job], field: str, count: int) -> bool:
    """Whether ``jobs`` are at least ``count``: counted on ``field`` alone (so through an
    index that starts with it), stopping at ``count``.

    The answer only picks how a page is read (both ways read the same rows), so the web
    process keeps it for ``PLAN_KEEP_SECONDS`` (the ``lookout-plans`` cache): a filter paged
    through, or opened by several viewers, is counted once a minute rather than on every
    page."""
    counted = jobs.order_by().values(field)[:count]
    sql, params = counted.query.sql_with_params()
    name = PLAN_PREFIX + hashlib.sha256(repr((sql, params, count)).encode()).hexdigest()
    plans = caches[PLAN_CACHE]
    kept = plans.get(name)
    if kept is None:
        kept = counted.count() >= count
        plans.set(name, kept, PLAN_KEEP_SECONDS)
    return bool(kept)


def latest_runs(jobs: list[Job]) -> dict[str, Run]:
    """The latest run of each of ``jobs``, with what a row reads of it (one query by primary
    key: each job names its latest run)."""
    ids = [j.latest_run_id for j in jobs if j.latest_run_id]
    if not ids:
        return {}
    runs = Run.objects.filter(id__in=ids).only(*ROW_RUN_FIELDS)
    return {run.job_id: run for run in runs}


# What a row reads of a job's latest run; the rest of what a row shows is on the job.
ROW_RUN_FIELDS = (
    "id",
    "job_id",
    "running_at",
    "finished_at",
    "failure_category",
    "failure_subcategory",
)


def _rows(jobs: list[Job]) -> list[JobRow]:
    runs = latest_runs(jobs)
    return [JobRow(job=j, run=runs.get(j.id)) for j in jobs]
