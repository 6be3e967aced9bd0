"""Whether an open event stream may go on: its credential still lets its caller in, and the
caller may still use the verb (``watch``) on the stream's queue.

A stream is let in once, when it opens (``api.auth``, ``wire.grpc_auth``); it may then stay
open for hours. :class:`Credential` keeps what it was let in with, and
:func:`streams_access_refusals` asks again for many streams at once, in **a fixed number of
queries** whatever their number (one per kind of fact: the users with their groups and
global permissions, the personal tokens, the legacy tokens, the sessions, the queues; each
by primary key or unique index), in one transaction:

- a personal API token: its row still there, not revoked, not expired, its user active
  (``services.tokens.token_refusal``, the same rules and words as when a key is presented);
- a legacy token: its row still there, its user active;
- a password (HTTP Basic): the user still there and active, and the password unchanged;
- a session (Lookout's login): the same, and the session not logged out nor expired (with
  the database or cached-database session engines, which keep a row per session);
- an anonymous caller (``auth.anonymousAuth``): no credential; only the permission;
- and then the permission, by the rules of ``services.authz`` (superuser, the global
  codename directly or through a group, owners, the queue's grants) on the queue as it is
  now. A queue deleted meanwhile is NotFound.

Refusals raise ``CredentialGone`` (401 / UNAUTHENTICATED), ``PermissionDenied`` (403 /
PERMISSION_DENIED) or ``NotFound`` (404), each with a message saying what changed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import Aggregate, Exists, JSONField, OuterRef, Subquery

from armada.models import ApiToken, Queue
from armada.services.authz import GLOBAL_FOR_VERB, queue_grants
from armada.services.errors import CredentialGone, NotFound, PermissionDenied
from armada.services.tokens import token_refusal

# Session engines that keep a row per session, which a logout deletes.
SESSION_ROWS = (
    "django.contrib.sessions.backends.db",
    "django.contrib.sessions.backends.cached_db",
)
RECONNECT = "reconnect with a valid credential (from the last event id you saw)"
T = TypeVar("T")


@dataclass(frozen=True)
class Credential:
    """What a stream's caller was let in with. ``user_id`` None: an anonymous caller (in
    ``anonymous_groups``). At most one of ``token_id`` (a personal token), ``legacy_key``
    (a legacy token) and ``password`` (the password hash as it was: Basic or a session)
    is set; ``session_key`` with ``password`` for a session; none of them when only the
    user is known (a caller let in some other way: the user must stay there and active)."""

    user_id: int | None
    token_id: int | None = None
    legacy_key: str | None = None
    password: str | None = None
    session_key: str | None = None
    anonymous_groups: tuple[str, ...] = ()


def credential_of(user: Any, auth: Any = None, *, session_key: str | None = None) -> Credential:
    """The credential of a caller as authentication found it: ``auth`` is what DRF calls
    ``request.auth`` (a personal token, a legacy token, or None for a password or a session);
    ``session_key`` when the caller came with a session."""
    from rest_framework.authtoken.models import Token

    if not getattr(user, "is_authenticated", False):
        return Credential(
            None, anonymous_groups=tuple(sorted(getattr(user, "anonymous_groups", ())))
        )
    if isinstance(auth, ApiToken):
        return Credential(user.pk, token_id=auth.pk)
    if isinstance(auth, Token):
        return Credential(user.pk, legacy_key=auth.key)
    if session_key is not None and settings.SESSION_ENGINE not in SESSION_ROWS:
        session_key = None  # no row to look at: the user and password are still checked
    return Credential(user.pk, password=user.password or "", session_key=session_key)


class _JsonList(Aggregate):
    """The aggregated values as a JSON list (PostgreSQL ``jsonb_agg``, SQLite
    ``json_group_array``)."""

    function = "JSONB_AGG"
    output_field = JSONField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, function="JSON_GROUP_ARRAY", **extra)


@dataclass(frozen=True)
class _QueueNow:
    """The queue as it is now: what ``authz.queue_grants`` reads."""

    owners: Any
    group_owners: Any
    permissions: Any


#: At most this many values in one ``IN (...)`` list.
CHUNK = 500


def _chunked(values: set, read: Callable[[list], Iterable[T]]) -> list[T]:
    ordered = sorted(values, key=str)
    return [row for i in range(0, len(ordered), CHUNK) for row in read(ordered[i : i + CHUNK])]


@dataclass
class _Facts:
    """What the checks of a batch read, each kind in one query (see ``_read_facts``)."""

    users: dict[int, dict[str, Any]]
    tokens: dict[int, dict[str, Any]]
    legacy: set[tuple[str, int]]
    live_sessions: set[str]
    queues: dict[str, dict[str, Any]]
    anonymous_holders: set[str]


def _read_facts(checks: Collection[tuple[Credential, str]], codename: str, now: datetime) -> _Facts:
    """One query per kind of fact the batch needs, whatever its size (up to ``CHUNK`` values
    of a kind per query): the users with what they hold, the personal tokens, the legacy
    tokens, the live sessions, the queues, and the anonymous groups holding ``codename``."""
    credentials = {credential for credential, _ in checks}
    holds = Permission.objects.filter(content_type__app_label="armada", codename=codename)
    users = get_user_model().objects.order_by()
    user_columns = ["pk", "is_active", "is_superuser", "username", "password"]
    group_names = Subquery(
        Group.objects.filter(user=OuterRef("pk"))
        .order_by()
        .values("user")
        .annotate(names=_JsonList("name"))
        .values("names")[:1],
        output_field=JSONField(),
    )
    facts = {
        "global": Exists(holds.filter(user=OuterRef("pk"))),
        "global_by_group": Exists(holds.filter(group__user=OuterRef("pk"))),
        "group_names": group_names,
    }
    from django.contrib.sessions.models import Session
    from rest_framework.authtoken.models import Token

    def ids(attr: str) -> set:
        return {getattr(c, attr) for c in credentials if getattr(c, attr) is not None}

    return _Facts(
        users={
            row["pk"]: row
            for row in _chunked(
                ids("user_id"),
                lambda part: (
                    users.filter(pk__in=part).annotate(**facts).values(*user_columns, *facts)
                ),
            )
        },
        tokens={
            row["pk"]: row
            for row in _chunked(
                ids("token_id"),
                lambda part: ApiToken.objects.filter(pk__in=part).values(
                    "pk", "user_id", "name", "revoked_at", "expires_at"
                ),
            )
        },
        legacy=set(
            _chunked(
                ids("legacy_key"),
                lambda part: Token.objects.filter(key__in=part).values_list("key", "user_id"),
            )
        ),
        live_sessions=set(
            _chunked(
                ids("session_key"),
                lambda part: Session.objects.filter(
                    session_key__in=part, expire_date__gt=now
                ).values_list("session_key", flat=True),
            )
        ),
        queues={
            row["name"]: row
            for row in _chunked(
                {queue for _, queue in checks},
                lambda part: Queue.objects.filter(name__in=part).values(
                    "name", "owners", "group_owners", "permissions"
                ),
            )
        },
        anonymous_holders=set(
            _chunked(
                {g for c in credentials if c.user_id is None for g in c.anonymous_groups},
                lambda part: holds.filter(group__name__in=part).values_list(
                    "group__name", flat=True
                ),
            )
        ),
    )


def _credential_refusal(credential: Credential, facts: _Facts, now: datetime) -> str | None:
    """Why the credential lets no one in any more, or None."""
    row = facts.users.get(credential.user_id)
    if row is None:
        return "its user was deleted"
    if credential.token_id is not None:
        token = facts.tokens.get(credential.token_id)
        if token is None or token["user_id"] != credential.user_id:
            return "its token was deleted"
        return token_refusal(
            name=token["name"],
            revoked_at=token["revoked_at"],
            expires_at=token["expires_at"],
            user_active=row["is_active"],
            now=now,
        )
    if not row["is_active"]:
        return f"user {row['username']!r} was deactivated"
    if (
        credential.legacy_key is not None
        and (credential.legacy_key, credential.user_id) not in facts.legacy
    ):
        return "its token was deleted"
    if credential.password is not None and row["password"] != credential.password:
        return f"the password of user {row['username']!r} was changed"
    if credential.session_key is not None and credential.session_key not in facts.live_sessions:
        return "its session ended (logged out or expired)"
    return None


def _refusal(
    credential: Credential, queue: str, facts: _Facts, verb: str, codename: str, now: datetime
) -> Exception | None:
    """Why the stream of ``credential`` on ``queue`` must end, or None."""
    if credential.user_id is not None:
        refusal = _credential_refusal(credential, facts, now)
        if refusal is not None:
            return CredentialGone(
                f"the stream's credential no longer lets you in: {refusal}; {RECONNECT}"
            )
    shown = facts.queues.get(queue)
    if shown is None:
        return NotFound(f"queue {queue!r} was deleted")
    if credential.user_id is None:
        username, superuser = None, False
        groups = set(credential.anonymous_groups)
        holds = bool(groups & facts.anonymous_holders)
    else:
        row = facts.users[credential.user_id]
        username, superuser = row["username"], row["is_superuser"]
        groups = set(row["group_names"] or ())
        holds = row["global"] or row["global_by_group"]
    now_queue = _QueueNow(shown["owners"], shown["group_owners"], shown["permissions"])
    if superuser or holds or queue_grants(now_queue, username, groups, verb):
        return None
    return PermissionDenied(
        f"user {username or 'anonymous'!r} may no longer {verb} queue {queue!r}: needs the "
        f"{verb!r} permission on the queue or the global {codename!r} permission"
    )


def streams_access_refusals(
    checks: Collection[tuple[Credential, str]], *, now: datetime, verb: str = "watch"
) -> dict[tuple[Credential, str], Exception]:
    """The checks of many open streams at once, each a ``(credential, queue)``: the error
    that must end each stream whose caller may no longer ``verb`` on its queue (see the
    module docstring); those that may go on are absent. A fixed number of queries, in one
    transaction, whatever the number of streams (``_read_facts``)."""
    if not checks:
        return {}
    codename = GLOBAL_FOR_VERB[verb]
    with transaction.atomic():
        facts = _read_facts(checks, codename, now)
    refusals: dict[tuple[Credential, str], Exception] = {}
    for credential, queue in set(checks):
        refusal = _refusal(credential, queue, facts, verb, codename, now)
        if refusal is not None:
            refusals[(credential, queue)] = refusal
    return refusals


def check_stream_access(
    credential: Credential, queue: str, *, now: datetime, verb: str = "watch"
) -> None:
    """Raise unless ``credential`` still lets its caller in and they may still ``verb`` on
    ``queue`` (``streams_access_refusals`` for one stream)."""
    refusal = streams_access_refusals([(credential, queue)], now=now, verb=verb).get(
        (credential, queue)
    )
    if refusal is not None:
        raise refusal
