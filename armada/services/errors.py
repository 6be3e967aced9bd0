"""Errors the services raise; the API maps each to an HTTP status (400/403/404/409/503)."""

from __future__ import annotations

from armada.core.errors import FieldError, ValidationFailed

__all__ = [
    "AlreadyExists",
    "Conflict",
    "CredentialGone",
    "FailedPrecondition",
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


class AlreadyExists(Conflict):
    """The name is taken (409; gRPC ALREADY_EXISTS)."""


class FailedPrecondition(Conflict):
    """The thing is not in a state that allows the request, e.g. a policy still in use or a
    job that is not running (409; gRPC FAILED_PRECONDITION)."""


class CredentialGone(Exception):
    """The credential a long-lived call (an event stream) was let in with lets no one in any
    more: its token was revoked or expired, its user deactivated or deleted, its password
    changed, its session ended (401; gRPC UNAUTHENTICATED). The message says which."""


class PermissionDenied(Exception):
    """The caller lacks a permission; the message names it (403)."""


class Unavailable(Exception):
    """The database could not be reached, or the connection broke, and the request could not
    be done (503); the message says whether anything was written."""
