"""Keyset cursors of the grid's pages.

A page's order is always ``(sort column, id)``, and a cursor is the ``(value, id)`` of the
row a page starts after (``after``) or ends before (``before``), so that a page costs an
index range scan whatever its depth (never OFFSET), and ties on the sort column are broken
by the unique id (no duplicates or gaps between pages).
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from armada.web.storable import text_problem
from lookout.grid.columns import DATETIME_SORTS, INT_SORTS
from lookout.grid.filters import FilterError

MAX_CURSOR = 2048


def encode_cursor(value: Any, job_id: str) -> str:
    if isinstance(value, datetime):
        value = value.isoformat()
    raw = json.dumps([value, job_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, sort: str) -> tuple[Any, str] | None:
    """The ``(value, id)`` in ``cursor``, or None for a cursor that is not one of ours."""
    if len(cursor) > MAX_CURSOR:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value, job_id = json.loads(raw)
        if not isinstance(job_id, str) or text_problem(job_id) is not None:
            return None
        if isinstance(value, str) and text_problem(value) is not None:
            return None  # no stored value holds it (and the database would refuse it)
        if sort in DATETIME_SORTS:
            value = datetime.fromisoformat(value)
            if value.tzinfo is None:
                return None
        elif sort in INT_SORTS:
            if isinstance(value, bool) or not isinstance(value, int):
                return None
            if not 0 <= value < 2**63:
                return None
        elif not isinstance(value, str):
            return None
        return value, job_id
    except (ValueError, TypeError, binascii.Error, json.JSONDecodeError, UnicodeDecodeError):
        return None


def checked_cursor(name: str, cursor: str, sort: str) -> tuple[Any, str] | None:
    """``decode_cursor`` of a URL parameter; ``FilterError`` naming it when it is not a
    cursor of this sort."""
    if not cursor:
        return None
    decoded = decode_cursor(cursor, sort)
    if decoded is None:
        raise FilterError(name, "is not a page cursor of this sort (start again from page one)")
    return decoded
