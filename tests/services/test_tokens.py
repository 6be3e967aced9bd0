"""Personal API tokens: made with a key shown once and stored as a digest, listed,
revoked, and authenticated with one indexed query and a rare write."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest

from armada.core.errors import ValidationFailed
from armada.models import ApiToken
from armada.services.errors import Conflict, NotFound, PermissionDenied
from armada.services.tokens import (
    LAST_USED_EVERY,
    MadeWithToken,
    TokenLifetimes,
    TokenRefused,
    token_authenticate,
    token_create,
    token_expiry,
    token_list,
    token_revoke,
    tokens_revoke_by_operator,
)
from tests.conftest import T0, at

pytestmark = pytest.mark.django_db


def make(user, name: str = "laptop", expires_at=None, now=T0):
    return token_create(user=user, name=name, expires_at=expires_at, now=now)


# --- creating and storing ---------------------------------------------------------------


def test_the_key_is_returned_once_and_only_its_digest_is_stored(owner):
    new = make(owner)
    assert new.key.startswith("arm_") and len(new.key) == 44
    row = ApiToken.objects.get(pk=new.token.pk)
    assert row.digest == hashlib.sha256(new.key.encode()).hexdigest()
    assert row.prefix == new.key[:12]
    stored = [str(v) for v in ApiToken.objects.filter(pk=row.pk).values().get().values()]
    assert not any(new.key in value for value in stored)
    assert (row.user, row.name, row.created_at, row.expires_at) == (owner, "laptop", T0, None)


def test_every_key_is_different(owner):
    keys = {make(owner, name=f"t{i}").key for i in range(20)}
    assert len(keys) == 20


def test_a_name_is_unique_per_user_among_live_tokens(owner, outsider):
    first = make(owner)
    with pytest.raises(Conflict, match="already have a token named 'laptop'"):
        make(owner)
    make(outsider)  # another user's names are their own
    token_revoke(user=owner, token_id=first.token.pk, now=at(1))
    assert make(owner).token.name == "laptop"  # a revoked token's name is free again


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "is required"),
        ("   ", "is required"),
        (None, "is required"),
        (42, "is required"),
        ("x" * 101, "at most 100 characters"),
        ("tab\there", "control characters"),
        ("nul\x00", "control characters"),
    ],
)
def test_bad_names_are_refused_naming_the_field(owner, name, message):
    with pytest.raises(ValidationFailed) as caught:
        make(owner, name=name)
    assert caught.value.errors[0].field == "name" and message in caught.value.errors[0].message
    assert not ApiToken.objects.exists()


def test_names_are_trimmed(owner):
    assert make(owner, name="  ci  ").token.name == "ci"


# --- expiry -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, None),
        ({"expires_in": "30d"}, T0 + timedelta(days=30)),
        ({"expires_in": "12h"}, T0 + timedelta(hours=12)),
        ({"expires_in": 3600}, T0 + timedelta(hours=1)),
        ({"expires_at": "2026-02-01T00:00:00Z"}, T0.replace(month=2, day=1, hour=0)),
        ({"expires_at": "2026-01-01T15:00:00+02:00"}, T0 + timedelta(hours=1)),
        ({"expires_in": "", "expires_at": None}, None),
    ],
)
def test_expiry_from_a_time_or_a_duration(given, expected):
    assert token_expiry(now=T0, **given) == expected


@pytest.mark.parametrize(
    ("given", "field", "message"),
    [
        ({"expires_in": "30d", "expires_at": "2027-01-01T00:00:00Z"}, "expiresIn", "not both"),
        ({"expires_in": "soon"}, "expiresIn", "is not a duration"),
        ({"expires_in": True}, "expiresIn", "duration"),
        ({"expires_in": -5}, "expiresIn", "negative"),
        ({"expires_in": "0"}, "expiresIn", "in the future"),
        ({"expires_in": "4000d"}, "expiresIn", "at most 3650 days"),
        ({"expires_at": "tomorrow"}, "expiresAt", "date and time"),
        ({"expires_at": 5}, "expiresAt", "date and time"),
        ({"expires_at": "2026-13-45T00:00:00Z"}, "expiresAt", "date and time"),
        ({"expires_at": "2027-01-01T00:00:00"}, "expiresAt", "time zone"),
        ({"expires_at": "2025-01-01T00:00:00Z"}, "expiresAt", "in the future"),
        ({"expires_at": "2026-01-01T12:00:00Z"}, "expiresAt", "in the future"),
    ],
)
def test_bad_expiries_are_refused_naming_the_field(given, field, message):
    with pytest.raises(ValidationFailed) as caught:
        token_expiry(now=T0, **given)
    error = caught.value.errors[0]
    assert error.field == field and message in error.message, error


DAY = 86400.0
DEFAULTS = TokenLifetimes(default=90 * DAY, most=365 * DAY)  # as configured by default
PARENT = MadeWithToken(expires_at=T0 + timedelta(days=10))


@pytest.mark.parametrize(
    ("given", "lifetimes", "made_with", "expected"),
    [
        # Nothing asked: the configured lifetime; with none configured (and no maximum), never.
        ({}, DEFAULTS, None, T0 + timedelta(days=90)),
        ({}, TokenLifetimes(default=0, most=0), None, None),
        ({"expires_in": "365d"}, DEFAULTS, None, T0 + timedelta(days=365)),
        ({"expires_in": "4000d"}, TokenLifetimes(default=0, most=0), None, None),  # refused
        # Made with a token: no later than it; the default is cut to it, not refused.
        ({}, DEFAULTS, PARENT, T0 + timedelta(days=10)),
        ({}, TokenLifetimes(default=0, most=0), PARENT, T0 + timedelta(days=10)),
        ({"expires_in": "2d"}, DEFAULTS, PARENT, T0 + timedelta(days=2)),
        ({"expires_in": "10d"}, DEFAULTS, PARENT, T0 + timedelta(days=10)),
    ],
)
def test_the_lifetime_given_configured_and_held_to_the_making_token(
    given, lifetimes, made_with, expected
):
    if expected is None and given:
        with pytest.raises(ValidationFailed, match="at most 3650 days"):
            token_expiry(now=T0, lifetimes=lifetimes, made_with=made_with, **given)
        return
    assert token_expiry(now=T0, lifetimes=lifetimes, made_with=made_with, **given) == expected


@pytest.mark.parametrize(
    ("given", "made_with", "field", "message"),
    [
        ({"expires_in": "366d"}, None, "expiresIn", "at most 365 days from now"),
        ({"expires_at": "2027-06-01T00:00:00Z"}, None, "expiresAt", "at most 365 days"),
        ({"expires_in": "11d"}, PARENT, "expiresIn", "no later than 2026-01-11T12:00:00+00:00"),
        ({"expires_at": "2026-02-01T00:00:00Z"}, PARENT, "expiresAt", "when the token making"),
    ],
)
def test_a_life_past_the_maximum_or_the_making_token_is_refused_naming_the_field(
    given, made_with, field, message
):
    with pytest.raises(ValidationFailed) as caught:
        token_expiry(now=T0, lifetimes=DEFAULTS, made_with=made_with, **given)
    error = caught.value.errors[0]
    assert error.field == field and message in error.message, error


def test_a_token_that_never_expires_makes_no_token():
    with pytest.raises(PermissionDenied, match="log in with your password"):
        token_expiry(now=T0, lifetimes=DEFAULTS, made_with=MadeWithToken(expires_at=None))


# --- authenticating -----------------------------------------------------------------------


def test_a_key_authenticates_its_user_with_one_query_when_recently_used(
    owner, django_assert_num_queries
):
    new = make(owner)
    token_authenticate(key=new.key, now=at(1))  # writes last_used_at
    with django_assert_num_queries(1):
        token = token_authenticate(key=new.key, now=at(2))
        assert token.user.username == "olive"  # joined: no second query


def test_last_used_is_written_at_most_once_a_minute(owner, django_assert_num_queries):
    new = make(owner)
    with django_assert_num_queries(2):  # the lookup, then the first use is written
        token_authenticate(key=new.key, now=at(10))
    for second in (11, 30, 69):
        token_authenticate(key=new.key, now=at(second))
    assert ApiToken.objects.get().last_used_at == at(10)
    token_authenticate(key=new.key, now=at(10) + LAST_USED_EVERY)
    assert ApiToken.objects.get().last_used_at == at(10) + LAST_USED_EVERY


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("arm_" + "x" * 40, "no such token"),
        ("0123456789abcdef0123456789abcdef01234567", "not a key this server made"),
        ("", "not a key this server made"),
        ("arm_" + "y" * 300, "not a key this server made"),
    ],
)
def test_unknown_keys_are_refused(owner, key, message):
    make(owner)
    with pytest.raises(TokenRefused, match=message):
        token_authenticate(key=key, now=at(1))


def test_a_revoked_token_is_refused_saying_so(owner):
    new = make(owner)
    token_revoke(user=owner, token_id=new.token.pk, now=at(5))
    with pytest.raises(TokenRefused, match="'laptop' was revoked at 2026-01-01 12:00"):
        token_authenticate(key=new.key, now=at(6))


def test_an_expired_token_is_refused_saying_so(owner):
    new = make(owner, expires_at=at(60))
    assert token_authenticate(key=new.key, now=at(59)).pk == new.token.pk
    with pytest.raises(TokenRefused, match="'laptop' expired at 2026-01-01 12:01"):
        token_authenticate(key=new.key, now=at(60))


def test_an_inactive_users_token_is_refused(owner):
    new = make(owner)
    owner.is_active = False
    owner.save()
    with pytest.raises(TokenRefused, match="inactive"):
        token_authenticate(key=new.key, now=at(1))


def test_deleting_a_user_deletes_their_tokens(owner):
    new = make(owner)
    owner.delete()
    with pytest.raises(TokenRefused, match="no such token"):
        token_authenticate(key=new.key, now=at(1))


# --- listing and revoking ----------------------------------------------------------------


def test_a_user_lists_their_live_tokens_newest_first(owner, outsider):
    make(owner, name="old", now=at(0))
    gone = make(owner, name="gone", now=at(1))
    make(owner, name="new", now=at(2))
    make(outsider, name="theirs")
    token_revoke(user=owner, token_id=gone.token.pk, now=at(3))
    assert [t.name for t in token_list(user=owner)] == ["new", "old"]


def test_only_the_owner_revokes_and_only_once(owner, outsider):
    new = make(owner)
    for token_id in (new.token.pk, str(new.token.pk), "abc", -1, 10**30, None):
        with pytest.raises(NotFound):
            token_revoke(user=outsider, token_id=token_id, now=at(1))
    assert ApiToken.objects.get().revoked_at is None
    assert token_revoke(user=owner, token_id=str(new.token.pk), now=at(2)).revoked_at == at(2)
    with pytest.raises(NotFound):
        token_revoke(user=owner, token_id=new.token.pk, now=at(3))
    assert ApiToken.objects.get().revoked_at == at(2)


def test_operators_revoke_anyones_tokens(owner, outsider):
    ids = [make(owner).token.pk, make(outsider).token.pk]
    assert tokens_revoke_by_operator(token_ids=ids, now=at(1)) == 2
    assert tokens_revoke_by_operator(token_ids=ids, now=at(2)) == 0
    assert set(ApiToken.objects.values_list("revoked_at", flat=True)) == {at(1)}


def test_a_user_holds_at_most_a_hundred_live_tokens(owner):
    ApiToken.objects.bulk_create(
        ApiToken(user=owner, name=f"t{i}", digest=f"{i:064x}", prefix="arm_x", created_at=T0)
        for i in range(100)
    )
    with pytest.raises(Conflict, match="revoke one first"):
        make(owner, name="one-more")
