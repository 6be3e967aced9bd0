"""Idempotent submits: a job's clientId makes a retried submit answer with the original job.

The PostgreSQL test submits the same clientIds from several threads at once, each on its own
connection, as several web processes would: exactly one job per clientId, and every caller
gets its id.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from armada.core.errors import ValidationFailed
from armada.models import Event, Job
from armada.services.errors import PermissionDenied
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file

FAKE = "fake.armadaproject.io/"


def counts() -> tuple[int, int]:
    return Job.objects.count(), Event.objects.count()


def deadlocks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_a_retried_submit_returns_the_original_ids_and_writes_nothing(queue, owner):
    data = job_file(jobs=[job(clientId="a"), job(clientId="b")])
    first = job_submit(actor=owner, data=data, now=at(0))
    assert counts() == (2, 4)
    again = job_submit(actor=owner, data=data, now=at(1))
    assert again == first
    assert counts() == (2, 4)
    assert dict(Job.objects.values_list("id", "client_id")) == {first[0]: "a", first[1]: "b"}


@pytest.mark.django_db
def test_a_mixed_file_creates_only_the_new_jobs_in_one_go(queue, owner):
    [a] = job_submit(actor=owner, data=job_file(jobs=[job(clientId="a")]), now=at(0))
    before = counts()
    ids = job_submit(
        actor=owner,
        data=job_file(jobs=[job(), job(clientId="a"), job(clientId="c"), job(clientId="")]),
        now=at(1),
    )
    assert len(set(ids)) == 4 and ids[1] == a
    new = [ids[0], ids[2], ids[3]]
    assert Job.objects.filter(id__in=new).count() == 3
    assert counts() == (before[0] + 3, before[1] + 6)
    assert set(Event.objects.filter(job_id=a).values_list("created", flat=True)) == {at(0)}
    # Jobs without a clientId are never deduplicated.
    assert job_submit(actor=owner, data=job_file(jobs=[job()]), now=at(2)) != [ids[0]]


@pytest.mark.django_db
def test_the_key_is_per_queue_and_job_set(queue, owner, admin_user):
    from armada.services.queues import queue_create

    queue_create(actor=admin_user, data={"name": "other", "owners": [owner.username]}, now=at(0))
    ids = {
        job_submit(
            actor=owner, data=job_file(queue=q, job_set=s, jobs=[job(clientId="k")]), now=at(0)
        )[0]
        for q, s in [("demo", "set-1"), ("demo", "set-2"), ("other", "set-1")]
    }
    assert len(ids) == 3


@pytest.mark.django_db
def test_the_original_is_returned_whatever_its_state_and_spec(queue, owner):
    [a] = job_submit(actor=owner, data=job_file(jobs=[job(clientId="a")]), now=at(0))
    Job.objects.filter(id=a).update(state="cancelled")
    assert job_submit(actor=owner, data=job_file(jobs=[job(cpu="2", clientId="a")]), now=at(1)) == [
        a
    ]
    assert Job.objects.get(id=a).requests["cpu"] == 1000


@pytest.mark.django_db
def test_a_retry_is_checked_like_any_submit(queue, owner, outsider):
    data = job_file(jobs=[job(clientId="a")])
    job_submit(actor=owner, data=data, now=at(0))
    before = counts()
    with pytest.raises(PermissionDenied):
        job_submit(actor=outsider, data=data, now=at(1))
    bad = job_file(jobs=[job(clientId="a"), job(cpu="lots", clientId="b")])
    with pytest.raises(ValidationFailed) as caught:
        job_submit(actor=owner, data=bad, now=at(1))
    assert [e.field for e in caught.value.errors] == [
        "jobs[1].podSpec.containers[0].resources.requests.cpu",
        "jobs[1].podSpec.containers[0].resources.limits.cpu",
    ]
    assert counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("client_id", "problem"),
    [
        (7, "must be text of at most 100 characters"),
        ("x" * 101, "must be text of at most 100 characters"),
    ],
)
def test_a_bad_client_id_is_named(queue, owner, client_id, problem):
    with pytest.raises(ValidationFailed) as caught:
        job_submit(actor=owner, data=job_file(jobs=[job(clientId=client_id)]), now=at(0))
    assert [(e.field, e.message) for e in caught.value.errors] == [("jobs[0].clientId", problem)]
    assert counts() == (0, 0)


@pytest.mark.django_db
def test_a_client_id_twice_in_one_file_is_refused(queue, owner):
    data = job_file(jobs=[job(clientId="a"), job(clientId="b"), job(clientId="a")])
    with pytest.raises(ValidationFailed) as caught:
        job_submit(actor=owner, data=data, now=at(0))
    assert [(e.field, e.message) for e in caught.value.errors] == [
        (
            "jobs[2].clientId",
            "jobs[0] has the same clientId; a clientId names one job of a job set",
        )
    ]
    assert counts() == (0, 0)
    # 100 characters is the most.
    [a] = job_submit(actor=owner, data=job_file(jobs=[job(clientId="x" * 100)]), now=at(0))
    assert Job.objects.get(id=a).client_id == "x" * 100


@pytest.mark.django_db(transaction=True)
def test_parallel_submits_of_the_same_client_ids_make_one_job_each(queue, owner):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")
    threads_count, rounds = 6, 5
    deadlocks_before = deadlocks()
    errors: list[BaseException] = []
    answers: dict[int, list[list[str]]] = {n: [] for n in range(rounds)}
    lock = threading.Lock()
    barriers = [threading.Barrier(threads_count) for _ in range(rounds)]

    def submitter(t: int) -> None:
        try:
            for n in range(rounds):
                # Every thread sends the same keys of this round, in its own order, with a
                # key of its own among them (so that some rows of each file are new).
                keys = [f"r{n}-k{i}" for i in range(20)]
                keys = keys[t % 20 :] + keys[: t % 20]
                jobs = [job(clientId=k) for k in keys] + [job(clientId=f"r{n}-own-{t}")]
                barriers[n].wait(timeout=60)
                ids = job_submit(actor=owner, data=job_file(jobs=jobs), now=at(n))
                by_key = dict(zip(keys + [f"own-{t}"], ids, strict=True))
                with lock:
                    answers[n].append([by_key[f"r{n}-k{i}"] for i in range(20)])
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
            for barrier in barriers:
                barrier.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submitter, args=(t,)) for t in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    for n in range(rounds):
        assert len(answers[n]) == threads_count
        # Every caller got the same id for each key ...
        assert all(answer == answers[n][0] for answer in answers[n])
        # ... and that id is the one job with that key.
        stored = dict(
            Job.objects.filter(client_id__startswith=f"r{n}-k").values_list("client_id", "id")
        )
        assert stored == {f"r{n}-k{i}": answers[n][0][i] for i in range(20)}
    per_round = 20 + threads_count
    assert Job.objects.count() == rounds * per_round
    assert Event.objects.count() == 2 * rounds * per_round
    # The files list their keys in different orders; the rows go in in one order.
    assert deadlocks() == deadlocks_before
