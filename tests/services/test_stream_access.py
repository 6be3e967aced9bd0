"""Whether an open stream may go on (``services.stream_access``): every way a credential or
a permission goes, each said in its error, and a batch of checks one query per kind of fact
however many streams it checks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.sessions.backends.db import SessionStore
from django.utils import timezone
from rest_framework.authtoken.models import Token

from armada.services.anonymous import AnonymousCaller
from armada.services.errors import CredentialGone, NotFound, PermissionDenied
from armada.services.queues import queue_delete, queue_update
from armada.services.stream_access import (
    Credential,
    check_stream_access,
    credential_of,
    streams_access_refusals,
)
from armada.services.tokens import token_create, token_revoke
from tests.conftest import T0

pytestmark = pytest.mark.django_db


def check(credential: Credential, queue: str = "demo", now=None) -> None:
    check_stream_access(credential, queue, now=now or timezone.now())


def token_of(user, expires_at=None, name="laptop"):
    new = token_create(user=user, name=name, expires_at=expires_at, now=timezone.now())
    return new.token, credential_of(user, new.token)


def fact_queries(context) -> list[str]:
    """The statements that read facts (not the savepoint around them)."""
    return [q["sql"] for q in context.captured_queries if "SAVEPOINT" not in q["sql"]]


def test_valid_credentials_pass_with_one_query_per_kind_of_fact_whatever_their_number(
    queue, owner, outsider, admin_user, admin_client
):
    """Five kinds of credential at once read users, tokens, legacy tokens, sessions and
    queues once each; forty streams of them (more users, more tokens, more sessions) read
    no more (the distinct streams here are 21)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def five(user, n):
        session = SessionStore()
        session.create()
        return [
            token_of(user, name=f"laptop-{n}")[1],
            credential_of(user),
            credential_of(user, session_key=session.session_key),
            credential_of(user, Token.objects.get_or_create(user=user)[0]),
            credential_of(admin_user),
        ]

    grant = {"subjects": [{"kind": "User", "name": "otto"}], "verbs": ["watch"]}
    queue_update(actor=admin_user, name="demo", data={"permissions": [grant]}, now=T0)
    small = [(c, "demo") for c in five(owner, 0)]
    many = [(c, "demo") for n in range(1, 5) for user in (owner, outsider) for c in five(user, n)]
    assert len(set(many)) > 20
    counts = []
    for checks in (small, many):
        with CaptureQueriesContext(connection) as context:
            assert streams_access_refusals(checks, now=timezone.now()) == {}
        counts.append(len(fact_queries(context)))
    assert counts == [5, 5]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda t, u: token_revoke(user=u, token_id=t.pk, now=timezone.now()), "was revoked at"),
        (lambda t, u: t.delete(), "its token was deleted"),
        (lambda t, u: u.delete(), "its user was deleted"),
        (lambda t, u: type(u).objects.filter(pk=u.pk).update(is_active=False), "inactive"),
    ],
)
def test_a_token_that_goes_ends_the_stream(queue, owner, change, said):
    token, credential = token_of(owner)
    change(token, owner)
    with pytest.raises(CredentialGone, match=said) as raised:
        check(credential)
    assert "no longer lets you in" in str(raised.value)


def test_an_expired_token_ends_the_stream(queue, owner):
    now = timezone.now()
    _, credential = token_of(owner, expires_at=now + timedelta(seconds=2))
    check(credential, now=now)
    with pytest.raises(CredentialGone, match="expired at"):
        check(credential, now=now + timedelta(seconds=2))


def test_a_password_or_session_credential_ends_with_its_user_password_or_session(queue, owner):
    session = SessionStore()
    session.create()
    by_session = credential_of(owner, session_key=session.session_key)
    by_password = credential_of(owner)
    session.delete()  # logged out
    with pytest.raises(CredentialGone, match="its session ended"):
        check(by_session)
    check(by_password)
    owner.set_password("new-password")
    owner.save()
    with pytest.raises(CredentialGone, match="password of user 'olive' was changed"):
        check(by_password)
    type(owner).objects.filter(pk=owner.pk).update(is_active=False)
    with pytest.raises(CredentialGone, match="user 'olive' was deactivated"):
        check(credential_of(owner))


def test_a_deleted_legacy_token_ends_the_stream(queue, owner):
    legacy = Token.objects.create(user=owner)
    credential = credential_of(owner, legacy)
    legacy.delete()
    with pytest.raises(CredentialGone, match="its token was deleted"):
        check(credential)


def test_the_permission_is_read_as_it_is_now(queue, owner, outsider, admin_user):
    """Owner, user grant, group grant, group owner, global codename through a group: each
    lets the stream go on while it holds, and its loss ends it."""
    otto = credential_of(outsider)
    with pytest.raises(PermissionDenied, match="'otto' may no longer watch queue 'demo'"):
        check(otto)
    grant = {"subjects": [{"kind": "User", "name": "otto"}], "verbs": ["watch"]}
    queue_update(actor=admin_user, name="demo", data={"permissions": [grant]}, now=T0)
    check(otto)
    watchers = Group.objects.create(name="watchers")
    outsider.groups.add(watchers)
    by_group = {"subjects": [{"kind": "Group", "name": "watchers"}], "verbs": ["watch"]}
    queue_update(actor=admin_user, name="demo", data={"permissions": [by_group]}, now=T0)
    check(otto)
    queue_update(
        actor=admin_user, name="demo", data={"permissions": [], "groupOwners": ["watchers"]}, now=T0
    )
    check(otto)
    outsider.groups.remove(watchers)
    with pytest.raises(PermissionDenied, match="needs the 'watch' permission"):
        check(otto)
    everything = Group.objects.create(name="all-events")
    everything.permissions.add(Permission.objects.get(codename="watch_all_events"))
    outsider.groups.add(everything)
    check(otto)
    check(credential_of(admin_user))  # superuser
    queue_update(actor=admin_user, name="demo", data={"owners": []}, now=T0)
    with pytest.raises(PermissionDenied):
        check(credential_of(owner))  # no longer an owner


def test_a_deleted_queue_ends_the_stream(queue, owner, admin_user):
    queue_delete(actor=admin_user, name="demo", now=T0)
    with pytest.raises(NotFound, match="queue 'demo' was deleted"):
        check(credential_of(owner))


def test_an_anonymous_caller_keeps_only_what_its_groups_hold(queue, admin_user):
    credential = credential_of(AnonymousCaller(frozenset({"everyone"})))
    assert credential == Credential(None, anonymous_groups=("everyone",))
    with pytest.raises(PermissionDenied, match="'anonymous' may no longer watch"):
        check(credential)
    grant = {"subjects": [{"kind": "Group", "name": "everyone"}], "verbs": ["watch"]}
    queue_update(actor=admin_user, name="demo", data={"permissions": [grant]}, now=T0)
    check(credential)


def test_a_batch_refuses_only_the_streams_that_must_end(queue, owner, outsider, admin_user):
    """In one batch: a revoked token, a user without ``watch`` and a deleted queue are
    refused, each with its own error; the streams around them go on."""
    from armada.services.queues import queue_create

    queue_create(actor=admin_user, data={"name": "other", "owners": ["olive"]}, now=T0)
    revoked, by_revoked = token_of(owner)
    _, by_token = token_of(owner, name="desktop")
    token_revoke(user=owner, token_id=revoked.pk, now=timezone.now())
    checks = [
        (by_revoked, "demo"),
        (by_token, "demo"),
        (by_token, "other"),
        (credential_of(outsider), "demo"),
        (credential_of(admin_user), "demo"),
    ]
    queue_delete(actor=admin_user, name="other", now=T0)
    refusals = streams_access_refusals(checks, now=timezone.now())
    assert set(refusals) == {checks[0], checks[2], checks[3]}
    assert isinstance(refusals[checks[0]], CredentialGone)
    assert isinstance(refusals[checks[2]], NotFound)
    assert isinstance(refusals[checks[3]], PermissionDenied)
