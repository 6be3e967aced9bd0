"""Executor credentials: made with a key shown once and stored as a digest, for one cluster
id; listed, revoked (idempotently) and authenticated with one indexed query and a rare
write, all behind the global ``manage_executor_credentials`` permission."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.auth.models import Group, Permission

from armada.core.errors import ValidationFailed
from armada.models import ExecutorCredential
from armada.services.errors import AlreadyExists, NotFound, PermissionDenied
from armada.services.executor_credentials import (
    LAST_USED_EVERY,
    CredentialRefused,
    ExecutorIdentity,
    executor_credential_authenticate,
    executor_credential_create,
    executor_credential_input,
    executor_credential_issue,
    executor_credential_list,
    executor_credential_name_taken,
    executor_credential_revoke,
    executor_credentials_revoke,
)
from armada.services.tokens import token_create
from tests.conftest import T0, at

pytestmark = pytest.mark.django_db

PERMISSION = "manage_executor_credentials"


def grant_manage(user) -> None:
    """Give ``user`` the permission through a group, as ``seed_permissions`` does."""
    group, _ = Group.objects.get_or_create(name="credential-managers")
    group.permissions.add(
        Permission.objects.get(content_type__app_label="armada", codename=PERMISSION)
    )
    user.groups.add(group)


@pytest.fixture
def operator(django_user_model):
    """Not a superuser: holds ``manage_executor_credentials`` through a group, and nothing
    else."""
    user = django_user_model.objects.create_user("opal", password="opal-password")
    grant_manage(user)
    return user


def make(actor, cluster_id: str = "cluster-1", name: str | None = "executor", now=T0):
    return executor_credential_create(actor=actor, cluster_id=cluster_id, name=name, now=now)


# --- creating and storing ---------------------------------------------------------------


def test_the_key_is_returned_once_and_only_its_digest_is_stored(operator):
    new = make(operator)
    assert new.key.startswith("arme_") and len(new.key) == 45
    assert all(c.isalnum() or c in "-_" for c in new.key[5:])
    row = ExecutorCredential.objects.get(pk=new.credential.pk)
    assert row.digest == hashlib.sha256(new.key.encode()).hexdigest()
    assert row.prefix == new.key[:13]
    stored = [str(v) for v in ExecutorCredential.objects.filter(pk=row.pk).values().get().values()]
    assert not any(new.key in value for value in stored)
    assert (row.cluster_id, row.name, row.created_by, row.created_at) == (
        "cluster-1",
        "executor",
        operator,
        T0,
    )
    assert (row.last_used_at, row.revoked_at) == (None, None)


def test_every_key_is_different(admin_user):
    keys = {make(admin_user, name=f"e{i}").key for i in range(20)}
    assert len(keys) == 20 and all(k.startswith("arme_") for k in keys)


@pytest.mark.parametrize(
    ("given", "stored"),
    [(None, "executor"), ("  spare  ", "spare"), ("x" * 100, "x" * 100), ("é ü 漢", "é ü 漢")],
)
def test_names_default_to_executor_and_are_trimmed(admin_user, given, stored):
    assert make(admin_user, name=given).credential.name == stored


def test_the_cluster_need_not_have_registered(admin_user):
    assert make(admin_user, cluster_id="not-yet-started").credential.cluster_id == "not-yet-started"


@pytest.mark.parametrize(
    ("cluster_id", "message"),
    [
        ("", "is required"),
        (None, "is required"),
        (42, "must be text"),
        (["cluster-1"], "must be text"),
        ("Cluster-1", "lower-case RFC 1123 label"),
        ("cluster_1", "lower-case RFC 1123 label"),
        ("cluster.1", "lower-case RFC 1123 label"),
        ("-cluster", "lower-case RFC 1123 label"),
        ("cluster-", "lower-case RFC 1123 label"),
        ("cluster-1\n", "lower-case RFC 1123 label"),
        (" cluster-1", "lower-case RFC 1123 label"),
        ("x" * 64, "at most 63 characters"),
    ],
)
def test_bad_cluster_ids_are_refused_naming_the_field(admin_user, cluster_id, message):
    with pytest.raises(ValidationFailed) as caught:
        make(admin_user, cluster_id=cluster_id)
    [error] = caught.value.errors
    assert error.field == "clusterId" and message in error.message, error
    assert not ExecutorCredential.objects.exists()


@pytest.mark.parametrize("cluster_id", ["a", "0", "cluster-1", "a--b", "x" * 63])
def test_cluster_ids_are_rfc_1123_labels(admin_user, cluster_id):
    assert make(admin_user, cluster_id=cluster_id).credential.cluster_id == cluster_id


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "1 to 100 characters"),
        ("   ", "1 to 100 characters"),
        ("x" * 101, "at most 100 characters"),
        ("tab\there", "control characters"),
        ("nul\x00", "control characters"),
        ("bell\x07", "control characters"),
        ("del\x7f", "control characters"),
        ("next\x85line", "control characters"),
        (42, "must be text"),
        (["executor"], "must be text"),
    ],
)
def test_bad_names_are_refused_naming_the_field(admin_user, name, message):
    with pytest.raises(ValidationFailed) as caught:
        make(admin_user, name=name)
    [error] = caught.value.errors
    assert error.field == "name" and message in error.message, error
    assert not ExecutorCredential.objects.exists()


def test_every_bad_field_is_named_at_once():
    with pytest.raises(ValidationFailed) as caught:
        executor_credential_input(cluster_id="Bad", name="")
    assert [e.field for e in caught.value.errors] == ["clusterId", "name"]


def test_a_name_is_unique_per_cluster_among_credentials_not_revoked(admin_user):
    first = make(admin_user)
    with pytest.raises(AlreadyExists, match="'cluster-1' already has an executor credential"):
        make(admin_user)
    assert ExecutorCredential.objects.count() == 1
    assert executor_credential_name_taken(cluster_id="cluster-1", name="executor")
    make(admin_user, cluster_id="cluster-2")  # another cluster's names are its own
    make(admin_user, name="spare")  # and a cluster may hold several credentials
    executor_credential_revoke(actor=admin_user, credential_id=first.credential.pk, now=at(1))
    assert not executor_credential_name_taken(cluster_id="cluster-1", name="executor")
    assert make(admin_user).credential.name == "executor"  # a revoked one's name is free
    assert ExecutorCredential.objects.filter(cluster_id="cluster-1").count() == 3


# --- issued by the control plane itself ------------------------------------------------


def test_the_system_issues_credentials_without_an_actor():
    new = executor_credential_issue(cluster_id="cluster-1", name="local", now=T0)
    assert (new.credential.created_by, new.credential.name) == (None, "local")
    assert executor_credential_authenticate(key=new.key, now=at(1)).cluster_id == "cluster-1"
    with pytest.raises(AlreadyExists):
        executor_credential_issue(cluster_id="cluster-1", name="local", now=at(1))
    with pytest.raises(ValidationFailed):
        executor_credential_issue(cluster_id="Not OK", name="local", now=at(1))
    assert ExecutorCredential.objects.count() == 1


def test_issuing_with_replace_revokes_the_old_one_of_that_name_in_the_same_step(operator):
    old = executor_credential_issue(cluster_id="cluster-1", name="local", now=T0)
    other = make(operator, name="other")
    new = executor_credential_issue(cluster_id="cluster-1", name="local", now=at(5), replace=True)
    assert ExecutorCredential.objects.get(pk=old.credential.pk).revoked_at == at(5)
    assert ExecutorCredential.objects.get(pk=other.credential.pk).revoked_at is None
    with pytest.raises(CredentialRefused, match="revoked"):
        executor_credential_authenticate(key=old.key, now=at(6))
    assert executor_credential_authenticate(key=new.key, now=at(6)).credential_id == (
        new.credential.pk
    )
    fresh = executor_credential_issue(cluster_id="cluster-2", name="local", now=at(7), replace=True)
    assert fresh.credential.revoked_at is None  # nothing to replace: just made


# --- who may ----------------------------------------------------------------------------


CALLS = {
    "create": lambda actor, pk: make(actor, name="other"),
    "list": lambda actor, pk: executor_credential_list(actor=actor),
    "list-one-cluster": lambda actor, pk: executor_credential_list(
        actor=actor, cluster_id="cluster-1"
    ),
    "revoke": lambda actor, pk: executor_credential_revoke(
        actor=actor, credential_id=pk, now=at(1)
    ),
    "revoke-unknown": lambda actor, pk: executor_credential_revoke(
        actor=actor, credential_id=pk + 1, now=at(1)
    ),
    "revoke-many": lambda actor, pk: executor_credentials_revoke(
        actor=actor, credential_ids=[pk], now=at(1)
    ),
}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("persona", ["owner", "member", "outsider"])
def test_without_the_permission_everything_is_denied_naming_it(request, admin_user, call, persona):
    pk = make(admin_user).credential.pk
    before = list(ExecutorCredential.objects.values())
    with pytest.raises(PermissionDenied, match="needs the global 'manage_executor_credentials'"):
        CALLS[call](request.getfixturevalue(persona), pk)
    assert list(ExecutorCredential.objects.values()) == before


@pytest.mark.parametrize("call", sorted(set(CALLS) - {"revoke-unknown"}))
@pytest.mark.parametrize("persona", ["admin_user", "operator"])
def test_superusers_and_holders_of_the_permission_may(request, admin_user, call, persona):
    pk = make(admin_user).credential.pk
    CALLS[call](request.getfixturevalue(persona), pk)


def test_a_staff_user_without_the_permission_is_denied(django_user_model):
    staff = django_user_model.objects.create_user("stan", password="x", is_staff=True)
    with pytest.raises(PermissionDenied, match="'manage_executor_credentials'"):
        make(staff)


# --- listing ----------------------------------------------------------------------------


def test_the_list_holds_every_credential_by_cluster_then_newest_first(operator, admin_user):
    make(operator, cluster_id="b", name="old", now=at(0))
    gone = make(operator, cluster_id="b", name="gone", now=at(1))
    make(admin_user, cluster_id="b", name="new", now=at(2))
    make(operator, cluster_id="a", name="only", now=at(3))
    executor_credential_revoke(actor=operator, credential_id=gone.credential.pk, now=at(4))
    rows = executor_credential_list(actor=operator)
    assert [(c.cluster_id, c.name, c.revoked_at) for c in rows] == [
        ("a", "only", None),
        ("b", "new", None),
        ("b", "gone", at(4)),
        ("b", "old", None),
    ]
    assert [c.name for c in executor_credential_list(actor=operator, cluster_id="b")] == [
        "new",
        "gone",
        "old",
    ]
    assert executor_credential_list(actor=operator, cluster_id="nowhere") == []


def test_the_list_names_who_made_each_in_one_query(operator, django_assert_num_queries):
    for i in range(3):
        make(operator, name=f"e{i}")
    with django_assert_num_queries(1):
        assert {c.created_by.username for c in executor_credential_list(actor=operator)} == {"opal"}


@pytest.mark.parametrize("cluster_id", ["", "Bad", "a\x00b", "x" * 64, 5])
def test_listing_by_a_cluster_id_no_executor_can_have_is_refused(operator, cluster_id):
    with pytest.raises(ValidationFailed) as caught:
        executor_credential_list(actor=operator, cluster_id=cluster_id)
    assert caught.value.errors[0].field == "clusterId"


# --- revoking ---------------------------------------------------------------------------


def test_revoking_is_idempotent_and_keeps_the_first_time(operator):
    new = make(operator)
    first = executor_credential_revoke(actor=operator, credential_id=new.credential.pk, now=at(5))
    assert first.revoked_at == at(5) and first.pk == new.credential.pk
    again = executor_credential_revoke(actor=operator, credential_id=new.credential.pk, now=at(9))
    assert again.revoked_at == at(5)
    assert ExecutorCredential.objects.get().revoked_at == at(5)


@pytest.mark.parametrize("credential_id", [999, 0, -1, 2**63, 10**30, True, "1", None, 1.0])
def test_revoking_an_id_no_credential_has_is_not_found(operator, credential_id):
    make(operator)
    ExecutorCredential.objects.update(id=1)
    with pytest.raises(NotFound, match="no executor credential with id"):
        executor_credential_revoke(actor=operator, credential_id=credential_id, now=at(1))
    assert ExecutorCredential.objects.get().revoked_at is None


def test_revoking_many_counts_those_still_live(operator):
    ids = [make(operator, name=f"e{i}").credential.pk for i in range(3)]
    executor_credential_revoke(actor=operator, credential_id=ids[0], now=at(1))
    assert executor_credentials_revoke(actor=operator, credential_ids=ids, now=at(2)) == 2
    assert executor_credentials_revoke(actor=operator, credential_ids=ids, now=at(3)) == 0
    assert sorted(ExecutorCredential.objects.values_list("revoked_at", flat=True)) == [
        at(1),
        at(2),
        at(2),
    ]


# --- authenticating ---------------------------------------------------------------------


def test_a_key_authenticates_as_its_cluster(operator):
    new = make(operator, cluster_id="cluster-7")
    make(operator, cluster_id="cluster-8")
    identity = executor_credential_authenticate(key=new.key, now=at(1))
    assert identity == ExecutorIdentity(cluster_id="cluster-7", credential_id=new.credential.pk)


def test_a_call_is_one_indexed_query_when_recently_used(operator, django_assert_num_queries):
    new = make(operator)
    executor_credential_authenticate(key=new.key, now=at(1))  # writes last_used_at
    with django_assert_num_queries(1) as captured:
        executor_credential_authenticate(key=new.key, now=at(2))
    sql = captured.captured_queries[0]["sql"]
    assert '"digest" =' in sql and "ORDER BY" not in sql


def test_last_used_is_written_at_most_once_a_minute(operator, django_assert_num_queries):
    new = make(operator)
    with django_assert_num_queries(2):  # the lookup, then the first use is written
        executor_credential_authenticate(key=new.key, now=at(10))
    for second in (11, 30, 69):
        executor_credential_authenticate(key=new.key, now=at(second))
    assert ExecutorCredential.objects.get().last_used_at == at(10)
    executor_credential_authenticate(key=new.key, now=at(10) + LAST_USED_EVERY)
    assert ExecutorCredential.objects.get().last_used_at == at(10) + LAST_USED_EVERY


def test_a_revoked_credential_is_refused_from_the_next_call_saying_when(operator):
    new = make(operator)
    executor_credential_authenticate(key=new.key, now=at(1))
    executor_credential_revoke(actor=operator, credential_id=new.credential.pk, now=at(5))
    with pytest.raises(
        CredentialRefused,
        match="'executor' of cluster 'cluster-1' was revoked at 2026-01-01 12:00:05 UTC",
    ):
        executor_credential_authenticate(key=new.key, now=at(6))


def test_revoking_one_leaves_the_clusters_other_credentials_working(operator):
    old, spare = make(operator), make(operator, name="spare")
    executor_credential_revoke(actor=operator, credential_id=old.credential.pk, now=at(1))
    assert executor_credential_authenticate(key=spare.key, now=at(2)).cluster_id == "cluster-1"


def test_the_credential_outlives_the_user_who_made_it(operator):
    new = make(operator)
    operator.delete()
    assert ExecutorCredential.objects.get().created_by is None
    assert executor_credential_authenticate(key=new.key, now=at(1)).cluster_id == "cluster-1"


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("arme_" + "x" * 40, "unknown executor key"),
        ("arm_" + "x" * 40, "personal API token"),
        ("arme_" + "x" * 39, "not an executor key"),
        ("arme_" + "x" * 41, "not an executor key"),
        ("arme_" + "!" * 40, "not an executor key"),
        ("ARME_" + "x" * 40, "not an executor key"),
        ("arme_" + "x" * 40 + "\n", "not an executor key"),
        (" arme_" + "x" * 40, "not an executor key"),
        ("0123456789abcdef0123456789abcdef01234567", "not an executor key"),
        ("", "not an executor key"),
        ("arme_" + "y" * 10_000, "not an executor key"),
    ],
)
def test_other_keys_are_refused_saying_why(operator, key, message, django_assert_num_queries):
    make(operator)
    queries = 1 if message == "unknown executor key" else 0  # a key of the wrong shape: none
    with (
        django_assert_num_queries(queries),
        pytest.raises(CredentialRefused, match=message),
    ):
        executor_credential_authenticate(key=key, now=at(1))


def test_a_personal_token_is_not_an_executor_credential(owner):
    key = token_create(user=owner, name="laptop", expires_at=None, now=T0).key
    with pytest.raises(CredentialRefused, match="personal API token"):
        executor_credential_authenticate(key=key, now=at(1))
