"""Who is calling, from a gRPC call's metadata, the way Armada's clients send it.

- ``authorization: Bearer <key>`` (or ``Token <key>``): a personal API token or a legacy
  token, exactly as ``/api/v1`` takes it (``armada.api.auth.token_credentials``).
- ``authorization: Basic <base64 of user:password>``: a password, with the same failed-login
  throttle as the REST API (``armada.api.auth.basic_credentials``): a locked-out caller
  gets RESOURCE_EXHAUSTED before any hashing.
- No ``authorization`` at all: UNAUTHENTICATED, unless ``auth.anonymousAuth`` is on, when
  the caller is ``services.anonymous.AnonymousCaller`` (who may do only what
  ``auth.anonymousGroups`` may do: nothing, unless groups are configured).
  Credentials that are sent must be good even then: a wrong password is never anonymous.

:func:`authenticate` queries the database and may hash a password (about 0.3 s of CPU with
the production hasher), so the server runs it on a worker thread; it hands its database
connection back before returning.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import connection

from armada.api.auth import basic_credentials, token_credentials
from armada.services.anonymous import anonymous_caller
from armada.services.dbfaults import read_again_if_lost
from armada.services.stream_access import Credential, credential_of
from armada.wire.errors import Unauthenticated

NO_CREDENTIALS = (
    "authentication credentials were not provided: send the metadata "
    "'authorization: Bearer <token>' (armadactl login makes one) or "
    "'authorization: Basic <base64 of username:password>'"
)


def peer_address(peer: str) -> str:
    """The client's IP address from a gRPC peer string (``ipv4:127.0.0.1:5000``,
    ``ipv6:[::1]:5000``, ``unix:/path``): what the login throttle counts failures by."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    if kind == "ipv6":
        host = rest.rpartition(":")[0] if rest.startswith("[") else rest
        return host.strip("[]")
    return peer


def authorization(metadata: Iterable[tuple[str, Any]] | None) -> str | None:
    """The ``authorization`` metadata value, or None when there is none. Keys arrive in
    lower case (HTTP/2); several values are joined as HTTP joins repeated headers."""
    values = [
        v.decode("latin-1") if isinstance(v, bytes) else str(v)
        for k, v in metadata or ()
        if k.lower() == "authorization"
    ]
    return ",".join(values) if values else None


def authenticate(
    metadata: Iterable[tuple[str, Any]] | None, peer: str, *, anonymous: bool = False
) -> Any:
    """The Django user of a call (``AnonymousCaller`` when allowed: by ``auth.anonymousAuth``,
    or by ``anonymous`` for an operation open to everyone). Raises ``Unauthenticated``,
    DRF's ``AuthenticationFailed`` (bad credentials) or ``Throttled`` (locked out), which
    ``wire.errors`` maps to UNAUTHENTICATED and RESOURCE_EXHAUSTED, and the database's
    errors when it cannot be used (UNAVAILABLE)."""
    return caller(metadata, peer, anonymous=anonymous)[0]


def caller(
    metadata: Iterable[tuple[str, Any]] | None, peer: str, *, anonymous: bool = False
) -> tuple[Any, Credential]:
    """:func:`authenticate`'s user with the credential they came with, which a stream checks
    again while it is open (``api.stream_guard``)."""
    header = authorization(metadata)
    try:
        if header is None or not header.strip():
            if anonymous or settings.ARMADA.auth.anonymous_auth:
                user = anonymous_caller()
                return user, credential_of(user)
            raise Unauthenticated(NO_CREDENTIALS)
        user, auth = read_again_if_lost(
            lambda: _credentials(header, peer), "a caller's credentials"
        )
        return user, credential_of(user, auth)
    finally:
        connection.close()  # a worker thread's connection goes back to the pool now


def _credentials(header: str, peer: str) -> tuple[Any, Any]:
    found = token_credentials(header) or basic_credentials(header, peer_address(peer))
    if found is None:
        scheme = header.split()[0] if header.split() else header
        raise Unauthenticated(
            f"unsupported authorization scheme {scheme[:20]!r}: use Bearer or Basic"
        )
    return found
