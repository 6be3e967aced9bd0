"""Batched writes: rows inserted by ``insert_rows`` read back exactly as written, whatever
characters they hold (COPY's text format on PostgreSQL escapes them)."""

from __future__ import annotations

import pytest
from django.db import transaction

from armada.models import Event, Run
from armada.services.bulk import insert_rows, sql_in
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file

pytestmark = pytest.mark.django_db

AWKWARD = ["plain", "tab\there", "new\nline", "back\\slash", "cr\rx", "\\N", "é ✓ 漢字", ""]


def test_values_with_awkward_characters_read_back_unchanged():
    rows = [
        {
            "created": at(i),
            "queue": "q",
            "job_set": text,
            "job_id": f"j{i}",
            "run_id": "",
            "type": "submitted",
            "payload": {"text": text, "list": [1, 2.5, None, True], "nested": {"k": text}},
        }
        for i, text in enumerate(AWKWARD)
    ]
    with transaction.atomic():
        assert insert_rows(Event, rows) == len(rows)
    got = list(Event.objects.order_by("id").values("created", "job_set", "job_id", "payload"))
    assert [g["job_set"] for g in got] == AWKWARD
    assert [g["payload"] for g in got] == [r["payload"] for r in rows]
    assert [g["created"] for g in got] == [r["created"] for r in rows]


def test_fields_left_out_take_their_defaults(queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    with transaction.atomic():
        insert_rows(
            Run,
            [
                {
                    "id": "r1",
                    "job_id": job_id,
                    "executor": "e",
                    "node": "n",
                    "pool": "p",
                    "leased_at": at(1),
                }
            ],
        )
    run = Run.objects.get(id="r1")
    assert (run.state, run.requests, run.exit_code, run.retryable, run.stop_requested_at) == (
        "leased",
        {},
        None,
        None,
        None,
    )
    # JSON and text fields too (the driver's COPY leaves them to their defaults)
    assert (run.exit_codes, run.decision, run.hint, run.pod_name) == ({}, {}, "", "")


def test_sql_in_matches_exactly_the_values_given():
    with transaction.atomic():
        insert_rows(
            Event,
            [
                {"created": at(0), "queue": "q", "job_set": "s", "job_id": j, "type": "queued"}
                for j in ["a", "b", "c"]
            ],
        )
    from django.db import connection

    where, params = sql_in("job_id", ["a", "c", "zz"])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT job_id FROM {Event._meta.db_table} WHERE {where}", params)
        assert sorted(r[0] for r in cursor.fetchall()) == ["a", "c"]


# Strings that a list sent as one parameter must carry exactly: quotes, backslashes, the
# array and JSON syntax characters, the word NULL, the empty string, other scripts.
LIST_STRINGS = [
    'a"b',
    "back\\slash",
    "{x,y}",
    "NULL",
    "",
    "comma, space",
    "ünï-ç☃",
    "tab\tnl\n",
    "'q'",
]


def test_values_table_carries_every_string_exactly():
    from django.db import connection

    from armada.services.bulk import values_table

    rows = [(v, f"{i}", v[::-1]) for i, v in enumerate(LIST_STRINGS)]
    cte, params = values_table("v(a, b, c)", rows)
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {cte} SELECT a, b, c FROM v", params)
        assert sorted(cursor.fetchall()) == sorted(rows)


@pytest.mark.parametrize("wanted", [LIST_STRINGS, LIST_STRINGS[:1], ["absent"]])
def test_sql_in_and_the_any_lookup_match_exactly_the_strings_given(wanted):
    from django.db import connection

    with transaction.atomic():
        insert_rows(
            Event,
            [
                {"created": at(0), "queue": "q", "job_set": "s", "job_id": j, "type": "queued"}
                for j in [*LIST_STRINGS, "other"]
            ],
        )
    expected = sorted(v for v in wanted if v in LIST_STRINGS)
    where, params = sql_in("job_id", wanted)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT job_id FROM {Event._meta.db_table} WHERE {where}", params)
        assert sorted(r[0] for r in cursor.fetchall()) == expected
    found = Event.objects.filter(job_id__any=wanted).values_list("job_id", flat=True)
    assert sorted(found) == expected


def test_upsert_inserts_new_rows_and_overwrites_existing_ones(queue, owner):
    from armada.models import SchedulingReason, SchedulingRound
    from armada.services.bulk import upsert_rows

    a, b, c = job_submit(actor=owner, data=job_file(jobs=[job(), job(), job()]), now=at(0))
    first = SchedulingRound.objects.create(started_at=at(1), duration_ms=1)
    second = SchedulingRound.objects.create(started_at=at(2), duration_ms=1)
    fields = ["reason", "round", "updated_at"]
    with transaction.atomic():
        upsert_rows(
            SchedulingReason,
            [
                {
                    "job_id": a,
                    "reason": "tab\tnew\nline",
                    "round_id": first.id,
                    "updated_at": at(1),
                },
                {"job_id": b, "reason": "old", "round_id": first.id, "updated_at": at(1)},
            ],
            update_fields=fields,
        )
    with transaction.atomic():
        assert (
            upsert_rows(
                SchedulingReason,
                [
                    {"job_id": b, "reason": "new", "round_id": second.id, "updated_at": at(2)},
                    {"job_id": c, "reason": "third", "round_id": second.id, "updated_at": at(2)},
                ],
                update_fields=fields,
            )
            == 2
        )
    got = {r.job_id: (r.reason, r.round_id, r.updated_at) for r in SchedulingReason.objects.all()}
    assert got == {
        a: ("tab\tnew\nline", first.id, at(1)),
        b: ("new", second.id, at(2)),
        c: ("third", second.id, at(2)),
    }


@pytest.mark.parametrize("value", [None, True, 1.5, b"x"])
def test_array_literal_refuses_what_it_cannot_spell(value):
    from armada.services.bulk import array_literal

    with pytest.raises(TypeError):
        array_literal(["a", value])


def test_insert_select_refuses_a_field_the_model_lacks():
    from armada.services.bulk import insert_select_sql

    with pytest.raises(ValueError, match="armada_run has no fields nodes"):
        insert_select_sql(Run, {"nodes": ("c.node", [])}, "c")
