"""The jobs table: filters, sorting, keyset pages and grouped counts, read from the URL.

Everything the table shows is in its query string (filters, sort, cursor, annotation
columns), so a view can be shared and an auto refresh re-reads exactly the same page.

Pages are keyset pages, never OFFSET: the order is always ``(sort column, id)`` and a cursor
is the ``(value, id)`` of the row a page starts after (``after``) or ends before
(``before``), so a page costs an index range scan whatever its depth, and ties on the sort
column are broken by the unique id (no duplicates or gaps between pages).

Columns that come from a job's latest run (node, cluster, pool, exit code, runtime,
retryable, decision) are not copied onto the job: a page loads the latest runs of its rows in
one query, and the filters on them test the job's latest run (its run with the greatest id:
ids sort by creation) with an ``EXISTS``. The frequent filters (queue, queue and state,
failure category, job-set prefix) are on job columns with indexes of their own
(migrations 0009 and 0010).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.db import connection, connections
from django.db.models import CharField, Count, Exists, F, Func, OuterRef, Q, QuerySet
from django.utils import timezone

from armada.core.quantity import CPU, GPU, MEMORY, format_quantity
from armada.core.states import JobState
from armada.models import Job, Run
from armada.services.authz import watchable_queues
from armada.web.storable import text_problem

PAGE_SIZE = 50
MAX_GROUPS = 500
RETRYABLE_CHOICES = ("yes", "no", "unknown")
REFRESH_CHOICES = (5, 10, 30, 60)

# URL name -> (model field, label). The order is the table's column order.
SORTS: dict[str, tuple[str, str]] = {
    "id": ("id", "Job id"),
    "queue": ("queue_id", "Queue"),
    "job_set": ("job_set", "Job set"),
    "state": ("state", "State"),
    "priority": ("priority", "Priority"),
    "priority_class": ("priority_class", "Priority class"),
    "owner": ("owner", "Owner"),
    "submitted": ("submitted_at", "Submitted"),
    "in_state": ("last_transition_at", "Time in state"),
    "category": ("failure_category", "Failure category"),
    "retries": ("failure_count", "Retries used"),
}
DATETIME_SORTS = {"submitted", "in_state"}
GROUPS: dict[str, tuple[str, str]] = {
    "queue": ("queue_id", "Queue"),
    "job_set": ("job_set", "Job set"),
    "state": ("state", "State"),
    "category": ("failure_category", "Failure category"),
}
# Where a group's value goes in the filtered list's URL.
GROUP_FILTER = {
    "queue": "queue",
    "job_set": "job_set_exact",
    "state": "state",
    "category": "category",
}


@dataclass(frozen=True)
class JobFilters:
    """What the table is narrowed to; empty fields do not filter."""

    job_id: str = ""  # prefix
    queue: str = ""
    job_set: str = ""  # prefix
    job_set_exact: str = ""
    states: tuple[str, ...] = ()
    priority_class: str = ""
    owner: str = ""
    node: str = ""
    cluster: str = ""
    category: str = ""
    subcategory: str = ""
    retryable: str = ""  # yes | no | unknown
    decision: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, Any]) -> JobFilters:
        """From a request's GET (a QueryDict: ``state`` may repeat)."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "states":
                raw = query.getlist("state") if hasattr(query, "getlist") else query.get("state")
                if isinstance(raw, str):
                    raw = [raw]
                known = {s.value for s in JobState}
                values["states"] = tuple(s for s in dict.fromkeys(raw or []) if s in known)
            else:
                values[f.name] = str(query.get(f.name, "") or "").strip()
        if values["retryable"] not in RETRYABLE_CHOICES:
            values["retryable"] = ""
        return cls(**values)

    def as_params(self) -> list[tuple[str, str]]:
        """The filters as URL parameters (only those that are set)."""
        params: list[tuple[str, str]] = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "states":
                params.extend(("state", s) for s in value)
            elif value:
                params.append((f.name, value))
        return params

    @property
    def active(self) -> bool:
        return bool(self.as_params())


@dataclass(frozen=True)
class TableParams:
    """Everything in the jobs table's URL."""

    filters: JobFilters = field(default_factory=JobFilters)
    sort: str = "id"
    descending: bool = True
    after: str = ""
    before: str = ""
    group: str = ""
    annotations: tuple[str, ...] = ()
    refresh: int = 0  # auto refresh every so many seconds; 0: off

    @classmethod
    def from_query(cls, query: Mapping[str, Any]) -> TableParams:
        sort = query.get("sort", "id")
        group = query.get("group", "")
        raw_annotations = query.get("annotations", "") or ""
        return cls(
            filters=JobFilters.from_query(query),
            sort=sort if sort in SORTS else "id",
            descending=query.get("dir", "desc") != "asc",
            after=query.get("after", "") or "",
            before=query.get("before", "") or "",
            group=group if group in GROUPS else "",
            annotations=tuple(
                dict.fromkeys(a.strip() for a in raw_annotations.split(",") if a.strip())
            )[:10],
            refresh=_refresh(query.get("refresh", "")),
        )

    def url(self, **changes: Any) -> str:
        """This view's query string with ``changes`` applied (None removes a parameter).
        Changing anything but the cursor starts again from the first page."""
        current: dict[str, Any] = {
            "sort": self.sort if self.sort != "id" else None,
            "dir": None if self.descending else "asc",
            "group": self.group or None,
            "annotations": ",".join(self.annotations) or None,
            "refresh": self.refresh or None,
            "after": self.after or None,
            "before": self.before or None,
        }
        if not {"after", "before"} & set(changes):
            current["after"] = current["before"] = None
        current.update(changes)
        params = self.filters.as_params()
        params += [(k, v) for k, v in current.items() if v]
        return "?" + urlencode(params) if params else "?"

    def sort_url(self, key: str) -> str:
        """Sort by ``key``: descending first; the current sort column flips direction."""
        if key == self.sort:
            return self.url(dir=None if not self.descending else "asc")
        return self.url(sort=key if key != "id" else None, dir=None)


def _refresh(raw: str) -> int:
    try:
        seconds = int(raw)
    except (TypeError, ValueError):
        return 0
    return seconds if seconds in REFRESH_CHOICES else 0


# --- cursors ---------------------------------------------------------------------------


def encode_cursor(value: Any, job_id: str) -> str:
    if isinstance(value, datetime):
        value = value.isoformat()
    raw = json.dumps([value, job_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, sort: str) -> tuple[Any, str] | None:
    """The ``(value, id)`` in ``cursor``, or None for a cursor that is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value, job_id = json.loads(raw)
        if not isinstance(job_id, str) or text_problem(job_id) is not None:
            return None
        if isinstance(value, str) and text_problem(value) is not None:
            return None  # no stored value holds it (and the database would refuse it)
        if sort in DATETIME_SORTS:
            value = datetime.fromisoformat(value)
        elif sort in ("priority", "retries"):
            value = int(value)
        elif not isinstance(value, str):
            return None
        return value, job_id
    except (ValueError, TypeError, binascii.Error, json.JSONDecodeError):
        return None


# --- filtering ---------------------------------------------------------------------------


def _latest_run(**conditions: Any) -> Exists:
    """The job's latest run exists and matches ``conditions``."""
    later = Run.objects.filter(job_id=OuterRef("job_id"), id__gt=OuterRef("id"))
    return Exists(Run.objects.filter(job_id=OuterRef("pk"), **conditions).filter(~Exists(later)))


def jobs_visible(*, actor: Any) -> QuerySet[Job]:
    """The jobs ``actor`` may watch (through ``services.authz``)."""
    qs = Job.objects.all()
    allowed = watchable_queues(actor)
    if allowed is not None:
        qs = qs.filter(queue_id__in=allowed)
    return qs


def jobs_filter(qs: QuerySet[Job], filters: JobFilters) -> QuerySet[Job]:
    f = filters
    if f.job_id:
        qs = qs.filter(id__startswith=f.job_id.lower())
    if f.queue:
        qs = qs.filter(queue_id=f.queue)
    if f.job_set:
        qs = qs.filter(job_set__startswith=f.job_set)
    if f.job_set_exact:
        qs = qs.filter(job_set=f.job_set_exact)
    if len(f.states) == 1:
        qs = qs.filter(state=f.states[0])
    elif f.states:
        qs = qs.filter(state__in=f.states)
    if f.priority_class:
        qs = qs.filter(priority_class=f.priority_class)
    if f.owner:
        qs = qs.filter(owner=f.owner)
    if f.category:
        qs = qs.filter(failure_category="" if f.category == "(none)" else f.category)
    if f.subcategory:
        qs = qs.filter(failure_subcategory=f.subcategory)
    run_conditions: dict[str, Any] = {}
    if f.node:
        run_conditions["node"] = f.node
    if f.cluster:
        run_conditions["executor"] = f.cluster
    if f.decision:
        run_conditions["decision__decision"] = f.decision
    if f.retryable in ("yes", "no"):
        run_conditions["retryable"] = f.retryable == "yes"
    if run_conditions:
        qs = qs.filter(_latest_run(**run_conditions))
    if f.retryable == "unknown":
        qs = qs.exclude(_latest_run(retryable__isnull=False))
    return qs


# --- pages -------------------------------------------------------------------------------


@dataclass
class JobRow:
    """A row of the table: the job and what its latest run adds."""

    job: Job
    run: Run | None
    annotations: list[str]

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
        if self.run is None or not self.run.decision:
            return ""
        return str(self.run.decision.get("decision", ""))


@dataclass
class JobsPage:
    rows: list[JobRow]
    next_cursor: str  # for ``after``: the page that follows, "" at the end
    prev_cursor: str  # for ``before``: the page that precedes, "" at the start


def _keyset(column: str, value: Any, job_id: str, forward: bool) -> Q:
    op = "lt" if forward else "gt"
    return Q(**{f"{column}__{op}": value}) | Q(**{column: value, f"id__{op}": job_id})


def jobs_page(*, actor: Any, params: TableParams, page_size: int = PAGE_SIZE) -> JobsPage:
    """One keyset page of the jobs ``actor`` may watch, filtered and sorted as ``params`` say."""
    column = SORTS[params.sort][0]
    qs = jobs_filter(jobs_visible(actor=actor), params.filters)
    backwards = bool(params.before) and not params.after
    cursor = decode_cursor(params.before if backwards else params.after, params.sort)
    # ``descending`` pages walk to smaller values; a page walked backwards flips that.
    walk_down = params.descending != backwards
    if cursor is not None:
        qs = qs.filter(_keyset(column, cursor[0], cursor[1], walk_down))
    prefix = "-" if walk_down else ""
    order: list[Any] = [f"{prefix}{column}", f"{prefix}id"] if column != "id" else [f"{prefix}id"]
    if (
        column == "id"
        and params.filters.job_set
        and connection.vendor == "postgresql"
        and not _broad_job_set_prefix(params.filters.job_set)
    ):
        # Jobs of a job set are submitted together, so PostgreSQL's guess that matches of a
        # prefix are spread evenly over the ids is wrong, and walking the primary key
        # backwards looking for them can read every row. Ordering by an expression of the id
        # makes it read the matches through the job-set prefix index and sort them instead.
        # That reads every match, so it is only done for a prefix with few matches; for a
        # broad one (``team-``) matches are everywhere and walking the key finds a page at once.
        # The ids of the page come from the job-set index alone (it includes the id), so
        # only the page's rows are read from the table.
        id_text = Func(F("id"), template="(%(expressions)s || '')", output_field=CharField())
        page_ids = qs.order_by(id_text.desc() if walk_down else id_text.asc()).values("id")
        qs = Job.objects.filter(id__in=page_ids[: page_size + 1])
    # The table never shows the pod spec, the largest column.
    jobs = list(qs.defer("pod_spec").order_by(*order)[: page_size + 1])
    more = len(jobs) > page_size
    jobs = jobs[:page_size]
    if backwards:
        jobs.reverse()
    rows = _rows(jobs, params.annotations)
    first, last = (jobs[0], jobs[-1]) if jobs else (None, None)
    has_next = more if not backwards else bool(jobs)
    has_prev = (cursor is not None and bool(jobs)) if not backwards else more
    return JobsPage(
        rows=rows,
        next_cursor=encode_cursor(getattr(last, column), last.id) if last and has_next else "",
        prev_cursor=encode_cursor(getattr(first, column), first.id) if first and has_prev else "",
    )


# A job-set prefix with at least this many matching jobs is "broad": the page is found by
# walking the primary key (matches are dense) rather than by reading and sorting every match.
BROAD_PREFIX_MATCHES = 30_000


def _broad_job_set_prefix(prefix: str) -> bool:
    """Whether at least ``BROAD_PREFIX_MATCHES`` jobs (any queue) have a job set starting with
    ``prefix``: counted through the job-set prefix index, stopping at that many."""
    capped = (
        Job.objects.filter(job_set__startswith=prefix)
        .order_by()
        .values("job_set")[:BROAD_PREFIX_MATCHES]
    )
    return capped.count() >= BROAD_PREFIX_MATCHES


def latest_runs(job_ids: list[str]) -> dict[str, Run]:
    """The latest run of each of ``job_ids`` (one query; the page is small)."""
    latest: dict[str, Run] = {}
    for run in Run.objects.filter(job_id__in=job_ids).order_by("job_id", "id"):
        latest[run.job_id] = run
    return latest


def _rows(jobs: list[Job], annotations: tuple[str, ...]) -> list[JobRow]:
    runs = latest_runs([j.id for j in jobs])
    return [
        JobRow(
            job=j,
            run=runs.get(j.id),
            annotations=[str((j.annotations or {}).get(key, "")) for key in annotations],
        )
        for j in jobs
    ]


# --- groups ------------------------------------------------------------------------------


@dataclass
class Group:
    value: str
    count: int
    url: str


# Counting more than this many jobs is not cheap (a million take a few hundred milliseconds):
# such counts are kept per process and refreshed in the background, and say when they were
# counted. Fewer matching jobs are counted exactly on every request.
GROUP_EXACT_ROWS = 10_000
GROUP_REFRESH_SECONDS = 60.0
GROUP_CACHE_ENTRIES = 256


@dataclass
class _Counted:
    rows: list[tuple[str, int]]
    at: datetime  # when they were counted
    clock: float  # time.monotonic() then


_group_cache: dict[str, _Counted] = {}
_group_refreshing: set[str] = set()
_group_lock = threading.Lock()


def jobs_groups(*, actor: Any, params: TableParams) -> list[Group]:
    """Counts of the filtered jobs per value of ``params.group``, largest first, each with
    the URL of the list filtered to it."""
    return jobs_groups_as_of(actor=actor, params=params)[0]


def jobs_groups_as_of(*, actor: Any, params: TableParams) -> tuple[list[Group], datetime | None]:
    """``jobs_groups`` and when large counts were counted (None: counted just now, exactly)."""
    column = GROUPS[params.group][0]
    qs = jobs_filter(jobs_visible(actor=actor), params.filters)
    counts, as_of = _group_counts(qs, column)
    groups = []
    key = GROUP_FILTER[params.group]
    for value, n in counts:
        shown = value or "(none)"
        if key == "state":
            filters = JobFilters(**{**_filter_dict(params.filters), "states": (value,)})
        else:
            filters = JobFilters(**{**_filter_dict(params.filters), key: shown})
        target = TableParams(
            filters=filters,
            sort=params.sort,
            descending=params.descending,
            annotations=params.annotations,
            refresh=params.refresh,
        )
        groups.append(Group(value=shown, count=n, url=target.url()))
    return groups, as_of


def _count_groups(qs: QuerySet[Job], column: str) -> list[tuple[str, int]]:
    counts = qs.values(column).annotate(n=Count("id")).order_by("-n", column)[:MAX_GROUPS]
    return [(row[column] or "", row["n"]) for row in counts]


def _group_counts(qs: QuerySet[Job], column: str) -> tuple[list[tuple[str, int]], datetime | None]:
    """Exact counts when few jobs match (the check stops at ``GROUP_EXACT_ROWS``); else the
    counts last made in this process, recounted in the background once they are older than
    ``GROUP_REFRESH_SECONDS`` (only the first request of a grouping waits for them)."""
    if connection.vendor != "postgresql" or (
        qs.order_by().values("id")[:GROUP_EXACT_ROWS].count() < GROUP_EXACT_ROWS
    ):
        return _count_groups(qs, column), None
    key = hashlib.sha256(f"{column}|{qs.query}".encode()).hexdigest()
    with _group_lock:
        cached = _group_cache.get(key)
        stale = cached is not None and time.monotonic() - cached.clock > GROUP_REFRESH_SECONDS
        refresh = stale and key not in _group_refreshing
        if refresh:
            _group_refreshing.add(key)
    if cached is None:
        cached = _recount(key, qs, column)
    elif refresh:
        threading.Thread(target=_recount, args=(key, qs, column, True), daemon=True).start()
    return cached.rows, cached.at


def _recount(key: str, qs: QuerySet[Job], column: str, background: bool = False) -> _Counted:
    try:
        at, clock = timezone.now(), time.monotonic()
        counted = _Counted(rows=_count_groups(qs, column), at=at, clock=clock)
        with _group_lock:
            _group_cache[key] = counted
            while len(_group_cache) > GROUP_CACHE_ENTRIES:
                del _group_cache[min(_group_cache, key=lambda k: _group_cache[k].clock)]
        return counted
    finally:
        with _group_lock:
            _group_refreshing.discard(key)
        if background:
            connections.close_all()


def _filter_dict(filters: JobFilters) -> dict[str, Any]:
    return {f.name: getattr(filters, f.name) for f in fields(filters)}
