"""Recording the SQL statements that every thread of the test process runs (a stream's reads
run on the event loop's executor threads, out of reach of ``CaptureQueriesContext``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db.backends.utils import CursorWrapper


@contextlib.contextmanager
def statements_recorded(monkeypatch) -> Iterator[list[str]]:
    """The statements run by any thread inside the block, in order."""
    statements: list[str] = []
    real = CursorWrapper._execute_with_wrappers

    def recorded(self, sql, params, many, executor):
        statements.append(sql)
        return real(self, sql, params, many, executor)

    monkeypatch.setattr(CursorWrapper, "_execute_with_wrappers", recorded)
    try:
        yield statements
    finally:
        monkeypatch.setattr(CursorWrapper, "_execute_with_wrappers", real)
