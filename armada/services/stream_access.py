"""Whether an open event stream may go on: its credential still lets its caller in, and the
caller may still use the verb (``watch``) on the stream's queue.

A stream is let in once, when it opens (``api.auth``, ``wire.grpc_auth``); it may then stay
open for hours. :class:`Credential` keeps what it was let in with, and
:func:`check_stream_access` asks again, in **one query** (the user's row by primary key, with
a correlated subquery per other fact, each on a primary key or unique index):

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

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models import Aggregate, Exists, JSONField, OuterRef, QuerySet, Subquery

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


def _one_query(credential: Credential, queue: str, codename: str, now: datetime) -> QuerySet:
    """The single query of a check (see the module docstring)."""
    queue_row = Queue.objects.filter(name=queue).order_by()

    def queue_field(name: str) -> Subquery:
        return Subquery(queue_row.values(name)[:1], output_field=JSONField())

    facts: dict[str, Any] = {
        "q_exists": Exists(queue_row),
        "q_owners": queue_field("owners"),
        "q_group_owners": queue_field("group_owners"),
        "q_permissions": queue_field("permissions"),
    }
    holds_global = Permission.objects.filter(content_type__app_label="armada", codename=codename)
    if credential.user_id is None:
        facts["global"] = Exists(holds_global.filter(group__name__in=credential.anonymous_groups))
        return Queue.objects.filter(name=queue).annotate(**facts).values(*facts)
    facts["global"] = Exists(holds_global.filter(user=OuterRef("pk")))
    facts["global_by_group"] = Exists(holds_global.filter(group__user=OuterRef("pk")))
    facts["group_names"] = Subquery(
        Group.objects.filter(user=OuterRef("pk"))
        .order_by()
        .values("user")
        .annotate(names=_JsonList("name"))
        .values("names")[:1],
        output_field=JSONField(),
    )
    columns = ["is_active", "is_superuser", "username", "password"]
    if credential.token_id is not None:
        token = ApiToken.objects.filter(pk=credential.token_id, user=OuterRef("pk")).order_by()
        facts["t_name"] = Subquery(token.values("name")[:1])
        facts["t_revoked_at"] = Subquery(token.values("revoked_at")[:1])
        facts["t_expires_at"] = Subquery(token.values("expires_at")[:1])
    if credential.legacy_key is not None:
        from rest_framework.authtoken.models import Token

        facts["lt_exists"] = Exists(
            Token.objects.filter(key=credential.legacy_key, user=OuterRef("pk"))
        )
    if credential.session_key is not None:
        from django.contrib.sessions.models import Session

        facts["s_live"] = Exists(
            Session.objects.filter(session_key=credential.session_key, expire_date__gt=now)
        )
    users = get_user_model().objects.filter(pk=credential.user_id)
    return users.annotate(**facts).values(*columns, *facts)


def _credential_refusal(
    credential: Credential, row: dict[str, Any] | None, now: datetime
) -> str | None:
    """Why the credential lets no one in any more, or None."""
    if row is None:
        return "its user was deleted"
    if credential.token_id is not None:
        if row["t_name"] is None:
            return "its token was deleted"
        return token_refusal(
            name=row["t_name"],
            revoked_at=row["t_revoked_at"],
            expires_at=row["t_expires_at"],
            user_active=row["is_active"],
            now=now,
        )
    if not row["is_active"]:
        return f"user {row['username']!r} was deactivated"
    if credential.legacy_key is not None and not row["lt_exists"]:
        return "its token was deleted"
    if credential.password is not None and row["password"] != credential.password:
        return f"the password of user {row['username']!r} was changed"
    if credential.session_key is not None and not row["s_live"]:
        return "its session ended (logged out or expired)"
    return None


def check_stream_access(
    credential: Credential, queue: str, *, now: datetime, verb: str = "watch"
) -> None:
    """Raise unless ``credential`` still lets its caller in and they may still ``verb`` on
    ``queue`` (see the module docstring); one query."""
    codename = GLOBAL_FOR_VERB[verb]
    row = _one_query(credential, queue, codename, now).first()
    if credential.user_id is not None:
        refusal = _credential_refusal(credential, row, now)
        if refusal is not None:
            raise CredentialGone(
                f"the stream's credential no longer lets you in: {refusal}; {RECONNECT}"
            )
    if row is None or not row["q_exists"]:
        raise NotFound(f"queue {queue!r} was deleted")
    if credential.user_id is None:
        username, groups, superuser = None, set(credential.anonymous_groups), False
    else:
        username, groups, superuser = (
            row["username"],
            set(row["group_names"] or ()),
            row["is_superuser"],
        )
    shown = _QueueNow(row["q_owners"], row["q_group_owners"], row["q_permissions"])
    holds = row["global"] or row.get("global_by_group", False)
    if superuser or holds or queue_grants(shown, username, groups, verb):
        return
    raise PermissionDenied(
        f"user {username or 'anonymous'!r} may no longer {verb} queue {queue!r}: needs the "
        f"{verb!r} permission on the queue or the global {codename!r} permission"
    )
