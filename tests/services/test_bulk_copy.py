"""``insert_rows`` writes every kind of value the models hold (text, integers, booleans,
timestamps, JSON, nulls) so that it reads back unchanged, and reports bad rows and database
errors as Django's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import IntegrityError, connection, transaction

from armada.models import Job, Run
from armada.services.bulk import insert_rows
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file

pytestmark = pytest.mark.django_db

ODD_TEXT = "tab\t nl\n cr\r bs\\ \\N quote' dq\" é ✓ 漢字 \x01"


def run_row(run_id: str, job_id: str, **fields) -> dict:
    return {
        "id": run_id,
        "job_id": job_id,
        "executor": "e",
        "node": "n",
        "pool": "p",
        "leased_at": at(1),
        "exit_code": None,
        "retryable": None,
        "finished_at": None,
        "message": "",
        "decision": {},
        **fields,
    }


def test_every_kind_of_value_reads_back_unchanged(queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    other_zone = timezone(timedelta(hours=-7, minutes=-30))
    rows = [
        run_row("r0", job_id),
        run_row(
            "r1",
            job_id,
            exit_code=-9,
            retryable=True,
            finished_at=datetime(2026, 3, 1, 4, 5, 6, 789123, tzinfo=other_zone),
            message=ODD_TEXT,
            decision={"text": ODD_TEXT, "n": [0, -1, 2**53, 1.25e-7, None, False], "e": {}},
        ),
        run_row("r2", job_id, exit_code=2**31 - 1, retryable=False, finished_at=at(2)),
    ]
    with transaction.atomic():
        assert insert_rows(Run, rows) == 3
    fields = ["exit_code", "retryable", "finished_at", "message", "decision", "state"]
    got = {r["id"]: r for r in Run.objects.values("id", *fields)}
    for row in rows:
        assert {f: got[row["id"]][f] for f in fields} == {
            **{f: row.get(f) for f in fields},
            "state": "leased",
        }
    assert got["r1"]["finished_at"] == datetime(2026, 3, 1, 11, 35, 6, 789123, tzinfo=UTC)


def test_rows_must_all_name_the_same_known_fields(queue, owner):
    if connection.vendor != "postgresql":
        pytest.skip("a rule of COPY; elsewhere the rows are model instances")
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    with pytest.raises(ValueError, match="must all give the same fields"), transaction.atomic():
        insert_rows(Run, [run_row("r1", job_id), {"id": "r2", "job_id": job_id}])
    with pytest.raises(ValueError, match="unknown fields: colour"), transaction.atomic():
        insert_rows(Run, [run_row("r1", job_id, colour="red")])
    assert not Run.objects.exists()


def test_a_failing_copy_raises_djangos_error_and_writes_nothing(queue, owner):
    first, second = job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=at(0))
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows(Run, [run_row("r1", first), run_row("r1", second)])
    assert not Run.objects.exists()
    assert Job.objects.count() == 2


def test_rows_of_one_field_are_copied_too():
    if connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    from armada.models import Event
    from armada.services.bulk import _copy_into

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE one_field (job_set text) ON COMMIT DROP")
        _copy_into(
            "one_field",
            [Event._meta.get_field("job_set")],
            [{"job_set": t} for t in ODD_TEXT.split()],
        )
        cursor.execute("SELECT job_set FROM one_field")
        assert [r[0] for r in cursor.fetchall()] == ODD_TEXT.split()
