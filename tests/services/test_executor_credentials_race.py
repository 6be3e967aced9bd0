"""Executor credentials made and revoked by several callers at once, on PostgreSQL, each in
a thread of its own with its own connection, all let go together: of the creates with one
name exactly one wins and the others are AlreadyExists (the partial unique index decides,
and its IntegrityError is turned into the service's error); of the revocations of one
credential exactly one writes, and every caller is answered the time that one wrote."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import connection

from armada.models import ExecutorCredential
from armada.services.errors import AlreadyExists
from armada.services.executor_credentials import (
    executor_credential_authenticate,
    executor_credential_create,
    executor_credential_revoke,
)
from tests.conftest import at

pytestmark = pytest.mark.django_db(transaction=True)

CALLERS = 6  # each holds a connection; the pool holds 8


def race(work: Callable[[int], object]) -> tuple[list[object], list[str]]:
    """``work(i)`` in CALLERS threads at once; returns what each returned or raised (an
    ``AlreadyExists`` is kept as a result) and any other error, by name."""
    if connection.vendor != "postgresql":
        pytest.skip("needs concurrent writers")
    barrier = threading.Barrier(CALLERS)
    results: list[object] = []
    errors: list[str] = []

    def body(i: int) -> None:
        try:
            connection.ensure_connection()  # so that all start their work together
            barrier.wait(timeout=60)
            results.append(work(i))
        except AlreadyExists as exc:
            results.append(exc)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(f"caller {i}: {type(exc).__name__}: {exc}")
        finally:
            connection.close()

    threads = [threading.Thread(target=body, args=(i,), name=f"caller-{i}") for i in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    return results, errors


def test_of_creates_racing_with_one_name_exactly_one_wins(admin_user):
    results, errors = race(
        lambda i: executor_credential_create(
            actor=admin_user, cluster_id="cluster-1", name="executor", now=at(i)
        )
    )
    assert errors == []
    kinds = Counter(type(r).__name__ for r in results)
    assert kinds == {"NewExecutorCredential": 1, "AlreadyExists": CALLERS - 1}
    for refused in (r for r in results if isinstance(r, AlreadyExists)):
        assert "'cluster-1' already has an executor credential named 'executor'" in str(refused)
    [winner] = [r for r in results if not isinstance(r, AlreadyExists)]
    assert list(ExecutorCredential.objects.values_list("pk", flat=True)) == [winner.credential.pk]
    identity = executor_credential_authenticate(key=winner.key, now=at(10))
    assert identity.cluster_id == "cluster-1"


def test_creates_racing_with_different_names_all_win(admin_user):
    results, errors = race(
        lambda i: executor_credential_create(
            actor=admin_user, cluster_id="cluster-1", name=f"executor-{i}", now=at(i)
        )
    )
    assert errors == [] and not any(isinstance(r, AlreadyExists) for r in results)
    assert ExecutorCredential.objects.filter(cluster_id="cluster-1").count() == CALLERS


def test_of_revocations_racing_one_writes_and_all_answer_its_time(admin_user):
    new = executor_credential_create(
        actor=admin_user, cluster_id="cluster-1", name="executor", now=at(0)
    )
    results, errors = race(
        lambda i: executor_credential_revoke(
            actor=admin_user, credential_id=new.credential.pk, now=at(100 + i)
        )
    )
    assert errors == [] and len(results) == CALLERS
    stored = ExecutorCredential.objects.get().revoked_at
    assert stored in {at(100 + i) for i in range(CALLERS)}
    assert {r.revoked_at for r in results} == {stored}
