"""Errors the services raise; the API maps each to an HTTP status (400/403/404/409/503)."""

from __future__ import annotations

from armada.core.errors import FieldError, ValidationFailed

__all__ = [
    "Conflict",
    "FieldError",
    "NotFound",
    "PermissionDenied",
    "Unavailable",
    "ValidationFailed",
]


class NotFound(Exception):
    """The named thing does not exist (404)."""


class Conflict(Exception):
    """The request clashes with the current state, e.g. the name is taken (409)."""


class PermissionDenied(Exception):
    """The caller lacks a permission; the message names it (403)."""


class Unavailable(Exception):
    """The database could not be reached, or the connection broke, and the request could not
    be done (503); the message says whether anything was written."""
