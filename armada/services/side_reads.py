"""A long read in shares over several connections that all see one snapshot (``snapshot``,
``in_shares``).

PostgreSQL runs each query on one core (but for a parallel scan); a long read split into
shares, one per connection, uses every core. The shares must see the same rows, so the
transaction that ``snapshot`` opens exports its snapshot (``pg_export_snapshot``) and
every share's transaction adopts it (``SET TRANSACTION SNAPSHOT``). Inside a transaction
that is not the outermost one (a test's, say), other connections would not see the same
rows: everything then runs on this connection, one after the other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.db import connection, connections, transaction

T = TypeVar("T")
WORK_MEM = "256MB"  # PostgreSQL: for the sorts and aggregates of each read
SHARES = 2  # reads of a shared snapshot at once (the cores of a small database server)
_exported: ContextVar[str | None] = ContextVar("exported_snapshot", default=None)
_SNAPSHOT_ID = re.compile(r"^[0-9A-F]+-[0-9A-F]+(-[0-9]+)?$")


# While shares run: they use the cores, so no parallel workers on top; and a share's filter
# (a hash of the job id) is one the planner cannot estimate: it would take a share for a
# handful of rows, and walk the job index for each, or sort where it should hash (the
# sorts a query cannot do without still happen).
SHARE_SETTINGS = {
    "max_parallel_workers_per_gather": "0",
    "enable_nestloop": "off",
    "enable_sort": "off",
}


def _settings(cursor: Any) -> None:
    cursor.execute(f"SET LOCAL work_mem = '{WORK_MEM}'")
    cursor.execute("SET LOCAL jit = off")  # compiling these reads costs more than it saves
    cursor.execute("SET LOCAL parallel_tuple_cost = 0.001")  # let a lone scan use the cores


def _share_settings(cursor: Any, on: bool) -> None:
    for name, value in SHARE_SETTINGS.items():
        cursor.execute(f"SET LOCAL {name} = {value if on else 'DEFAULT'}")


@contextmanager
def snapshot() -> Iterator[None]:
    """One transaction for a set of reads: on PostgreSQL, where it is the outermost one,
    read-only and repeatable-read (every read sees the same rows), its snapshot exported
    for ``in_shares``; with memory for sorts and aggregates, and no JIT."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        token = None
        if connection.vendor == "postgresql":
            with connection.cursor() as setup:
                if outermost:
                    setup.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                _settings(setup)
                if outermost:
                    setup.execute("SELECT pg_export_snapshot()")
                    token = _exported.set(setup.fetchone()[0])
        try:
            yield
        finally:
            if token is not None:
                _exported.reset(token)


def shares() -> int:
    """How many shares ``in_shares`` will run at once here."""
    return SHARES if _exported.get() is not None else 1


def _in_snapshot(snapshot_id: str, function: Callable[..., T], args: tuple) -> T:
    """``function(*args)`` in a transaction of this thread's connection that adopts the
    exported snapshot ``snapshot_id`` (then the connection is closed)."""
    if not _SNAPSHOT_ID.match(snapshot_id):
        raise ValueError(f"not a snapshot id: {snapshot_id!r}")
    try:
        with transaction.atomic():
            with connection.cursor() as setup:
                setup.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                setup.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_id}'")
                _settings(setup)
                _share_settings(setup, on=True)
            return function(*args)
    finally:
        connections.close_all()


def in_shares(function: Callable[[int, int], T]) -> list[T]:
    """``function(share, shares)`` for every share, at once where ``snapshot`` exported
    its snapshot (share 0 on this connection, the others in threads of their own), else
    one after the other here. Returns the answers in share order."""
    snapshot_id, count = _exported.get(), shares()
    if snapshot_id is None or count == 1:
        return [function(share, count) for share in range(count)]
    with ThreadPoolExecutor(max_workers=count - 1, thread_name_prefix="read-share") as pool:
        others = [
            pool.submit(_in_snapshot, snapshot_id, function, (share, count))
            for share in range(1, count)
        ]
        with connection.cursor() as setup:
            _share_settings(setup, on=True)
        try:
            first = function(0, count)
        finally:
            with connection.cursor() as setup:
                _share_settings(setup, on=False)
        return [first, *(future.result() for future in others)]
