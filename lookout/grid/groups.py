"""Nested groups of the jobs grid: the filtered jobs a viewer may watch, counted per value of
a groupable column, with their counts per state.

``?group=queue,job_set`` groups by queue, and a queue's group expands into its job sets; the
last level expands into job rows. A group is named by its *path*, the ``[column, value]``
pairs from the top level down; a level's jobs are the view's filters narrowed to every pair
of the path (``JobFilters.with_exact``), so the counts of a group's children add up to the
group's own. A value ``""`` is "no value" (no failure category, no latest run, no such
annotation); ``retryable`` groups are ``yes``, ``no`` and ``unknown`` as its filter says;
``runs`` and ``retries`` groups are counts (``"0"``, ``"1"``, ...).

One query counts a level: grouped by the column, with one ``COUNT(...) FILTER (WHERE state =
...)`` per state beside the total, ordered by the total and cut at ``MAX_GROUPS`` in the
database (a column with a hundred thousand values sends ``MAX_GROUPS`` rows, not all of
them, and a window count beside them says how many groups there are). The columns of a job's
latest run (node, cluster, pool, exit code, decision, retryable) are read from the job's copy
of that run (``latest_*``, ``services.latest_run``), like any job column.

Counting many jobs is not cheap (a few hundred milliseconds for a million). When at least ``GROUP_EXACT_ROWS`` jobs are counted (on
PostgreSQL), the counts are kept in Django's default cache, shared by every web process
(Redis when ``REDIS_URL`` is set), and say when they were counted; once older than
``GROUP_REFRESH_SECONDS`` the next request still gets them and starts one recount in the
background (one for all processes: the recount holds a lock in the same cache, and only one
background recount runs at a time, so counts that grow old together are not recounted all at
once). Fewer jobs are counted exactly on every request.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.core.cache import cache
from django.db import connection, connections, transaction
from django.db.models import (
    Count,
    F,
    Q,
    QuerySet,
    TextField,
    Value,
    Window,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce
from django.utils import timezone

from armada.core.states import JobState
from armada.models import Job
from armada.web.storable import text_problem
from lookout.grid.columns import ANNOTATION_PREFIX, COLUMNS, ColumnError, column
from lookout.grid.filters import (
    COUNT_FILTERS,
    MAX_ANNOTATION_VALUE,
    MAX_COUNT,
    MAX_EXIT_CODE,
    MIN_EXIT_CODE,
    RETRYABLE_CHOICES,
    STATES,
    FilterError,
    JobFilters,
    apply_filters,
    jobs_visible,
)

# Column key -> label, for the group-by control (``annotation:<key>`` besides these).
GROUPABLE: dict[str, str] = {k: c.label for k, c in COLUMNS.items() if c.groupable}
MAX_GROUPS = 100  # groups shown per level; the rest are counted and named "N more"
MAX_PATH_CHARS = 4096
GROUP_EXACT_ROWS = 10_000
GROUP_REFRESH_SECONDS = 60.0
GROUP_KEEP_SECONDS = 15 * 60  # a kept count older than this is counted again, waiting
REFRESH_LOCK_SECONDS = 5 * 60
CACHE_PREFIX = "lookout:groups:v1:"
RECOUNTING = CACHE_PREFIX + "recounting"  # held by the one background recount running

Path = tuple[tuple[str, str], ...]
TEXT = TextField()


@dataclass(frozen=True)
class GroupCount:
    """One group: its value (``""``: no value), its jobs and their states."""

    value: str
    total: int
    states: tuple[tuple[str, int], ...]  # (state, jobs) of the states it has, in state order


@dataclass(frozen=True)
class GroupLevel:
    """The groups of one level, largest first."""

    column: str
    groups: list[GroupCount]
    hidden: int  # groups not in ``groups`` (beyond ``MAX_GROUPS``)
    as_of: datetime | None  # when kept counts were counted; None: counted now, exactly


def label(key: str) -> str:
    """The label of a groupable column (an annotation column is labelled by its key)."""
    if key.startswith(ANNOTATION_PREFIX):
        return key.removeprefix(ANNOTATION_PREFIX)
    return GROUPABLE[key]


def no_value_label(key: str) -> str:
    return "(no value)" if key.startswith(ANNOTATION_PREFIX) else "(none)"


# --- paths -------------------------------------------------------------------------------


def parse_path(raw: str, group: tuple[str, ...], name: str = "path") -> Path:
    """A group's path from its JSON (``[["queue", "a"], ["job_set", "s"]]``), checked
    against the view's grouping: its columns are the first levels of ``group``, in order,
    and each value is one the column can hold. ``FilterError`` naming ``name`` otherwise."""
    if len(raw) > MAX_PATH_CHARS:
        raise FilterError(name, f"is longer than {MAX_PATH_CHARS} characters")
    try:
        pairs = json.loads(raw)
    except (ValueError, RecursionError):
        raise FilterError(name, "is not JSON (a list of [column, value] pairs)") from None
    if not isinstance(pairs, list):
        raise FilterError(name, "must be a list of [column, value] pairs")
    if len(pairs) > len(group):
        raise FilterError(name, f"is {len(pairs)} levels deep; the grouping has {len(group)}")
    path: list[tuple[str, str]] = []
    for level, pair in enumerate(pairs):
        ok = isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        if not ok:
            raise FilterError(name, f"level {level + 1} is not a [column, value] pair")
        key, value = pair
        if key != group[level]:
            raise FilterError(
                name, f"level {level + 1} is {key[:60]!r} but the view groups by {group[level]!r}"
            )
        path.append((key, _checked_value(name, key, value)))
    return tuple(path)


def _checked_value(name: str, key: str, value: str) -> str:
    if key == "state":
        if value not in STATES:
            raise FilterError(name, f"{value[:60]!r} is not a job state")
    elif key == "retryable":
        if value not in RETRYABLE_CHOICES:
            raise FilterError(name, f"retryable is one of {', '.join(RETRYABLE_CHOICES)}")
    elif key == "exit_code":
        if value != "":
            try:
                code = int(value)
            except ValueError:
                raise FilterError(name, f"{value[:60]!r} is not an exit code") from None
            if not MIN_EXIT_CODE <= code <= MAX_EXIT_CODE or str(code) != value:
                raise FilterError(name, f"{value[:60]!r} is not an exit code")
    elif key in COUNT_FILTERS:
        if not (value.isascii() and value.isdigit()) or str(int(value)) != value:
            raise FilterError(name, f"{value[:60]!r} is not a count of {label(key).lower()}")
        if int(value) > MAX_COUNT:
            raise FilterError(name, f"a count is at most {MAX_COUNT}")
    elif (problem := text_problem(value)) is not None:
        raise FilterError(name, problem)
    elif len(value) > MAX_ANNOTATION_VALUE:
        raise FilterError(name, f"a value is at most {MAX_ANNOTATION_VALUE} characters")
    return value


def path_json(path: Path) -> str:
    return json.dumps([list(pair) for pair in path], separators=(",", ":"))


def narrowed(filters: JobFilters, path: Path) -> JobFilters:
    """``filters`` narrowed to the group ``path`` names."""
    for key, value in path:
        filters = filters.with_exact(key, value)
    return filters


# --- counting ----------------------------------------------------------------------------


def _value_expression(key: str) -> Any:
    """What jobs are grouped by for column ``key`` (text; NULL only where "no value" must
    stay apart from an empty text: exit codes and retryable)."""
    try:
        col = column(key)
    except ColumnError as exc:
        raise FilterError("group", str(exc)) from None
    if col.groupable and col.annotation_key is not None:
        return Coalesce(
            KeyTextTransform(col.annotation_key, "annotations"), Value(""), output_field=TEXT
        )
    if not col.groupable or col.field is None:
        raise FilterError("group", f"jobs cannot be grouped by {key[:60]!r}")
    return F(col.field)


def _shown(key: str, value: Any) -> str:
    """A grouped value as its path holds it."""
    if key == "retryable":
        return "unknown" if value is None else ("yes" if value else "no")
    return "" if value is None else str(value)


def count_groups(qs: QuerySet[Job], key: str) -> tuple[list[GroupCount], int]:
    """The jobs of ``qs`` per value of column ``key``: the ``MAX_GROUPS`` largest groups and
    how many more there are, in one grouped query (the number of groups is a window count
    over the groups, taken before the limit)."""
    by_state = {f"s{i}": Count("pk", filter=Q(state=s.value)) for i, s in enumerate(JobState)}
    counted = (
        qs.order_by()
        .annotate(g=_value_expression(key))
        .values("g")
        .annotate(total=Count("pk"), groups=Window(Count("*")), **by_state)
        .order_by("-total", F("g").asc(nulls_last=True))
    )
    with _counting():
        rows = list(counted[:MAX_GROUPS])
    groups = [
        GroupCount(
            value=_shown(key, row["g"]),
            total=row["total"],
            states=tuple((s.value, row[f"s{i}"]) for i, s in enumerate(JobState) if row[f"s{i}"]),
        )
        for row in rows
    ]
    return groups, (rows[0]["groups"] - len(rows)) if rows else 0


@contextmanager
def _counting() -> Iterator[None]:
    """A counting query's transaction. On PostgreSQL without JIT compilation: a count over a
    million jobs is costed high enough to be compiled, which takes longer (about a second)
    than it saves."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = off")
        yield


def level_counts(actor: Any, filters: JobFilters, group: tuple[str, ...], path: Path) -> GroupLevel:
    """The groups one level below ``path`` (the top level for an empty path) of the jobs
    ``actor`` may watch that ``filters`` match: counted now, or kept (see the module)."""
    key = group[len(path)]
    qs = apply_filters(jobs_visible(actor), narrowed(filters, path))
    if connection.vendor != "postgresql" or (
        qs.order_by().values("pk")[:GROUP_EXACT_ROWS].count() < GROUP_EXACT_ROWS
    ):
        groups, hidden = count_groups(qs, key)
        return GroupLevel(column=key, groups=groups, hidden=hidden, as_of=None)
    return _kept_counts(qs, key)


def cache_key(qs: QuerySet[Job], key: str) -> str:
    """The kept counts' name: the column and the exact query (the viewer's queues are in it,
    so viewers who may watch the same queues share counts)."""
    sql, params = qs.query.sql_with_params()
    digest = hashlib.sha256(repr((key, sql, params)).encode()).hexdigest()
    return CACHE_PREFIX + digest


def _kept_counts(qs: QuerySet[Job], key: str) -> GroupLevel:
    name = cache_key(qs, key)
    kept = cache.get(name)
    if kept is None:
        return _recount(name, qs, key)
    level = _from_cache(key, kept)
    assert level.as_of is not None
    age = time.time() - level.as_of.timestamp()
    if age > GROUP_REFRESH_SECONDS and _may_recount(name):
        threading.Thread(target=_refresh, args=(name, qs, key), daemon=True).start()
    return level


def _may_recount(name: str) -> bool:
    """Take the locks of a background recount of ``name``: its own (one recount of a count
    at a time) and ``RECOUNTING`` (one background recount at a time in the installation, so
    that counts kept at the same moment and growing old together are recounted one after
    the other, not all at once on the database's cores; until then they are shown as they
    are, with their time)."""
    if not cache.add(RECOUNTING, name, REFRESH_LOCK_SECONDS):
        return False
    if cache.add(name + ":refreshing", 1, REFRESH_LOCK_SECONDS):
        return True
    cache.delete(RECOUNTING)
    return False


def _recount(name: str, qs: QuerySet[Job], key: str) -> GroupLevel:
    at = timezone.now()
    groups, hidden = count_groups(qs, key)
    level = GroupLevel(column=key, groups=groups, hidden=hidden, as_of=at)
    cache.set(name, _to_cache(level), GROUP_KEEP_SECONDS)
    return level


def _refresh(name: str, qs: QuerySet[Job], key: str) -> None:
    """Count again in the background (a thread of its own, with its own connection)."""
    try:
        _recount(name, qs, key)
    finally:
        cache.delete(name + ":refreshing")
        cache.delete(RECOUNTING)
        connections.close_all()


def _to_cache(level: GroupLevel) -> dict[str, Any]:
    """Plain data (what any version of this module can read back)."""
    assert level.as_of is not None
    return {
        "groups": [[g.value, g.total, [list(s) for s in g.states]] for g in level.groups],
        "hidden": level.hidden,
        "at": level.as_of.timestamp(),
    }


def _from_cache(key: str, kept: dict[str, Any]) -> GroupLevel:
    return GroupLevel(
        column=key,
        groups=[
            GroupCount(value=v, total=n, states=tuple((s, c) for s, c in states))
            for v, n, states in kept["groups"]
        ],
        hidden=kept["hidden"],
        as_of=datetime.fromtimestamp(kept["at"], tz=UTC),
    )


def render_groups(request: Any, params: Any) -> str:
    """The top level's group rows of the grouped grid (``params.group`` set), with the groups
    the URL's ``expanded`` names opened below theirs. ``FilterError`` on a bad
    ``expanded``."""
    from lookout.group_views import render_level

    return render_level(request, params, ())
