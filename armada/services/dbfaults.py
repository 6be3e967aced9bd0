"""Telling a lost database connection from other database errors.

A connection can die under a request: the server restarted, an operator ran
``pg_terminate_backend``, the network dropped it. The pool checks connections as they are
handed out (``settings``), so this is rare, but a connection can still break mid-request.
What the caller may then do depends on what the request was: a read can simply run again
(``armada.web.dbfaults``), a write must say whether it was stored (``services.submit``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from django.db import connection
from django.db.utils import InterfaceError, OperationalError

log = logging.getLogger(__name__)
T = TypeVar("T")

DATABASE_ERRORS = (OperationalError, InterfaceError)
# The server ended the session: administrator command (pg_terminate_backend), crash, or a
# server shutting down. Class 08 (connection exceptions) counts too.
LOST_SQLSTATES = {"57P01", "57P02", "57P03"}


def connection_lost(exc: BaseException) -> bool:
    """True when ``exc`` came from a connection that no longer works (not from a statement
    the database refused, nor from a pool with no connection to give)."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    sqlstate = getattr(exc.__cause__, "sqlstate", None) or ""
    if sqlstate.startswith("08") or sqlstate in LOST_SQLSTATES:
        return True
    raw = connection.connection
    return raw is None or bool(getattr(raw, "closed", False) or getattr(raw, "broken", False))


def connection_reset() -> None:
    """Drop this thread's connection (a broken one is discarded by the pool), so that the
    next query starts on a fresh one."""
    try:
        connection.close()
    except DATABASE_ERRORS:
        connection.connection = None


def read_again_if_lost(read: Callable[[], T], what: str) -> T:
    """``read()``, and once more on a fresh connection when the connection broke under it.
    Only for work that writes nothing: running it twice must be harmless."""
    try:
        return read()
    except DATABASE_ERRORS as exc:
        if not connection_lost(exc):
            raise
        connection_reset()
        log.warning("database connection lost during %s; reading again", what)
        return read()
