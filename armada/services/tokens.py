"""Personal API tokens: create, list, revoke, and authenticate a key.

A key is ``arm_`` followed by 40 random URL-safe characters (240 bits). It is shown once,
when it is made; the store keeps only its SHA-256 digest, which is enough (and fast) for a
key this random, so authenticating a call is one indexed query with no password hashing.
``prefix`` (``arm_`` and the next 8 characters) lets a person tell their tokens apart.

Order of the checks in :func:`token_authenticate`: the key's shape, then the row found by
digest, revoked, expired, and the user still active. Each refusal says which.

How long a new token lives (:func:`token_expiry`): what was asked for (``expiresAt`` or
``expiresIn``), else ``auth.tokenLifetime`` (90 days unless configured); never past
``auth.tokenMaxLifetime`` (a year unless configured). A request made with a token may make
only tokens that expire no later than that token, so that a token cannot outlive, through
the tokens it makes, the life it was given; a token that never expires (a legacy token, or
one made while no maximum applied) makes none. A password (a Lookout session, HTTP Basic,
``armadactl login``) may make any within the maximum.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.dateparse import parse_datetime

from armada.core.duration import parse_duration
from armada.core.errors import FieldError, ValidationFailed
from armada.models import ApiToken
from armada.services.errors import Conflict, NotFound, PermissionDenied

KEY_PREFIX = "arm_"
KEY_RANDOM_CHARS = 40
PREFIX_CHARS = len(KEY_PREFIX) + 8
NAME_MAX_CHARS = 100
MAX_ACTIVE_TOKENS = 100
# The longest life a token may be given when no maximum is configured; past it, an expiry
# is almost surely a typo.
MAX_LIFETIME = timedelta(days=3650)
# ``last_used_at`` is written when it is older than this, so busy tokens do not write on
# every call and the time shown is never more than this stale.
LAST_USED_EVERY = timedelta(seconds=60)


class TokenRefused(Exception):
    """The key does not authenticate anyone; the message says why (shown with the 401)."""


@dataclass(frozen=True)
class NewToken:
    """A token just made, with its key: the only time the key is known."""

    token: ApiToken
    key: str


def new_key(prefix: str = KEY_PREFIX) -> str:
    """A new key: ``prefix`` and ``KEY_RANDOM_CHARS`` random URL-safe characters."""
    return prefix + secrets.token_urlsafe(KEY_RANDOM_CHARS)[:KEY_RANDOM_CHARS]


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def is_token_key(key: str) -> bool:
    """Whether ``key`` has the shape of one of our keys (else it may be a legacy token)."""
    return key.startswith(KEY_PREFIX)


@dataclass(frozen=True)
class TokenLifetimes:
    """``auth.tokenLifetime`` and ``auth.tokenMaxLifetime``, in seconds (0: none)."""

    default: float = 0.0
    most: float = 0.0

    @classmethod
    def configured(cls) -> TokenLifetimes:
        from django.conf import settings

        auth = settings.ARMADA.auth
        return cls(default=auth.token_lifetime, most=auth.token_max_lifetime)


@dataclass(frozen=True)
class MadeWithToken:
    """The request asking for a token was authenticated by a token expiring at ``expires_at``
    (None: it never expires)."""

    expires_at: datetime | None


def made_with(credential: Any) -> MadeWithToken | None:
    """What ``token_expiry`` needs of the credential a request was authenticated with (DRF's
    ``request.auth``): a personal token, a legacy token (which never expires), or a password
    (None)."""
    if isinstance(credential, ApiToken):
        return MadeWithToken(expires_at=credential.expires_at)
    if credential is not None:
        return MadeWithToken(expires_at=None)
    return None


def token_expiry(
    *,
    expires_at: Any = None,
    expires_in: Any = None,
    now: datetime,
    lifetimes: TokenLifetimes = TokenLifetimes(),
    made_with: MadeWithToken | None = None,
) -> datetime | None:
    """The new token's expiry (None: never); see the module docstring. What may be asked:
    an ISO 8601 time with its offset (``expiresAt``), or a duration from now such as ``30d``
    or ``12h`` (``expiresIn``). Raises ValidationFailed naming the field, and
    PermissionDenied for a request made with a token that never expires."""
    if made_with is not None and made_with.expires_at is None:
        raise PermissionDenied(
            "a token that never expires may not make tokens: log in with your password "
            "(armadactl login, or Lookout's API tokens page) to make one"
        )
    when, field = _asked(expires_at, expires_in, now)
    if when is None:
        if not lifetimes.default:
            return _within_parent(None, None, made_with)
        when = now + timedelta(seconds=lifetimes.default)
    elif when <= now:
        raise ValidationFailed.one(field, "must be in the future")
    most = timedelta(seconds=lifetimes.most) if lifetimes.most else MAX_LIFETIME
    if field and when - now > most:
        raise ValidationFailed.one(field, f"must be at most {_days(most)} from now")
    return _within_parent(when, field, made_with)


def _days(span: timedelta) -> str:
    days = span.total_seconds() / 86400
    return f"{days:g} day{'' if days == 1 else 's'}"


def _within_parent(
    when: datetime | None, field: str | None, made_with: MadeWithToken | None
) -> datetime | None:
    """``when`` held to the making token's expiry: refused when it was asked for, else
    (the default) cut to it."""
    if made_with is None or made_with.expires_at is None:
        return when
    limit = made_with.expires_at
    if when is not None and when <= limit:
        return when
    if field:
        raise ValidationFailed.one(
            field,
            f"must be no later than {limit.isoformat()}, when the token making it expires "
            "(log in with your password to make a longer-lived one)",
        )
    return limit


def _asked(expires_at: Any, expires_in: Any, now: datetime) -> tuple[datetime | None, str]:
    """The expiry asked for and the field that asked it ((None, "") when none was)."""
    given = [
        name
        for name, value in (("expiresAt", expires_at), ("expiresIn", expires_in))
        if value not in (None, "")
    ]
    if len(given) == 2:
        raise ValidationFailed.one("expiresIn", "give expiresAt or expiresIn, not both")
    if not given:
        return None, ""
    if given == ["expiresIn"]:
        field = "expiresIn"
        try:
            seconds = parse_duration(expires_in)
        except ValueError as exc:
            raise ValidationFailed.one(field, f"{exc} (days are written like '30d')") from None
        when = now + timedelta(seconds=seconds)
    else:
        field = "expiresAt"
        when = expires_at if isinstance(expires_at, datetime) else None
        if when is None and isinstance(expires_at, str):
            try:
                when = parse_datetime(expires_at.strip())
            except ValueError:
                when = None
        if when is None:
            raise ValidationFailed.one(
                field, "must be a date and time such as '2030-01-31T00:00:00Z'"
            )
        if when.tzinfo is None:
            raise ValidationFailed.one(
                field, "must give its time zone, e.g. a trailing 'Z' for UTC"
            )
    return when, field


def _clean_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationFailed.one(
            "name", "is required: say where the token is used, e.g. 'laptop'"
        )
    text = name.strip()
    problems = []
    if len(text) > NAME_MAX_CHARS:
        problems.append(FieldError("name", f"must be at most {NAME_MAX_CHARS} characters"))
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        problems.append(FieldError("name", "must not contain control characters"))
    if problems:
        raise ValidationFailed(problems)
    return text


def token_create(*, user: Any, name: Any, expires_at: datetime | None, now: datetime) -> NewToken:
    """Make a token for ``user``; the returned key is never stored and cannot be shown again.
    A name already used by another of the user's tokens (not revoked) is a Conflict."""
    clean = _clean_name(name)
    key = new_key()
    try:
        with transaction.atomic():
            active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).count()
            if active >= MAX_ACTIVE_TOKENS:
                raise Conflict(
                    f"you have {active} tokens, the most one user may hold; revoke one first"
                )
            token = ApiToken.objects.create(
                user=user,
                name=clean,
                digest=key_digest(key),
                prefix=key[:PREFIX_CHARS],
                created_at=now,
                expires_at=expires_at,
            )
    except IntegrityError:
        raise Conflict(
            f"you already have a token named {clean!r}; choose another name or revoke that one"
        ) from None
    return NewToken(token=token, key=key)


def token_list(*, user: Any) -> list[ApiToken]:
    """The user's tokens that are not revoked (expired ones included), newest first."""
    return list(
        ApiToken.objects.filter(user=user, revoked_at__isnull=True).order_by("-created_at", "-id")
    )


def token_get(*, user: Any, token_id: Any) -> ApiToken:
    """One of the user's tokens not revoked; anyone else's, or a revoked one, is NotFound
    (whether another user's token exists is not the caller's business)."""
    try:
        pk = int(str(token_id))
    except ValueError:
        pk = None
    token = (
        ApiToken.objects.filter(pk=pk, user=user, revoked_at__isnull=True).first()
        if pk is not None and 0 < pk < 2**63
        else None
    )
    if token is None:
        raise NotFound(f"you have no token with id {str(token_id)[:40]!r}")
    return token


def token_revoke(*, user: Any, token_id: Any, now: datetime) -> ApiToken:
    """Revoke one of the user's tokens: from now on its key is refused. A guarded UPDATE, so
    two revocations at once revoke it once and the second is NotFound."""
    token = token_get(user=user, token_id=token_id)
    done = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now)
    if not done:
        raise NotFound(f"you have no token with id {token.pk}")
    token.revoked_at = now
    return token


def token_refusal(
    *,
    name: str,
    revoked_at: datetime | None,
    expires_at: datetime | None,
    user_active: bool,
    now: datetime,
) -> str | None:
    """Why a token found by its key lets no one in at ``now`` (revoked, then expired, then
    its user inactive), or None when it still does. Shared by :func:`token_authenticate`
    and the re-checks of open event streams (``services.stream_access``)."""
    if revoked_at is not None:
        return (
            f"invalid token: token {name!r} was revoked at {revoked_at:%Y-%m-%d %H:%M} UTC; "
            "create a new one"
        )
    if expires_at is not None and expires_at <= now:
        return (
            f"invalid token: token {name!r} expired at {expires_at:%Y-%m-%d %H:%M} UTC; "
            "create a new one"
        )
    if not user_active:
        return "invalid token: its user is inactive"
    return None


def token_authenticate(*, key: str, now: datetime) -> ApiToken:
    """The token of ``key``, with its user loaded; raises TokenRefused saying why not.

    One indexed query (digest, user joined). ``last_used_at`` is refreshed only when it is
    older than ``LAST_USED_EVERY``, by a guarded UPDATE so that concurrent calls write it
    once."""
    if not is_token_key(key) or len(key) > 200:
        raise TokenRefused("invalid token: it is not a key this server made")
    try:
        # get(), not first(): no ORDER BY on a lookup by a unique key.
        token = ApiToken.objects.select_related("user").get(digest=key_digest(key))
    except ApiToken.DoesNotExist:
        raise TokenRefused(
            "invalid token: no such token (mistyped, or its user was deleted)"
        ) from None
    refusal = token_refusal(
        name=token.name,
        revoked_at=token.revoked_at,
        expires_at=token.expires_at,
        user_active=token.user.is_active,
        now=now,
    )
    if refusal is not None:
        raise TokenRefused(refusal)
    stale = now - LAST_USED_EVERY
    if token.last_used_at is None or token.last_used_at <= stale:
        ApiToken.objects.filter(pk=token.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale)
        ).update(last_used_at=now)
        token.last_used_at = now
    return token


def tokens_revoke_by_operator(*, token_ids: list[int], now: datetime) -> int:
    """Revoke any users' tokens (the admin's action); returns how many were still live."""
    return ApiToken.objects.filter(pk__in=token_ids, revoked_at__isnull=True).update(revoked_at=now)
