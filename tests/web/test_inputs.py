"""The input guard (armada.web.inputs) on its own: whole numbers, the async path under ASGI,
and the view's own checks of a field it names."""

from __future__ import annotations

import asyncio

import pytest
from django.test import AsyncClient, Client

from armada.web.inputs import whole_number

NUMBERS = [
    ("plain", "42", 42),
    ("zero", "0", 0),
    ("spaces", " 7 ", 7),
    ("empty", "", None),
    ("negative", "-1", None),
    ("plus", "+3", None),
    ("underscore", "3_000", None),
    ("superscript", "\u00b2", None),
    ("arabic-indic", "\u0663", None),
    ("fraction", "1.5", None),
    ("eighteen-digits", "9" * 18, 10**18 - 1),
    ("nineteen-digits", "9" * 19, None),
    ("a-hundred-thousand-digits", "9" * 100_000, None),
]


@pytest.mark.parametrize(("raw", "expected"), [n[1:] for n in NUMBERS], ids=[n[0] for n in NUMBERS])
def test_whole_number(raw, expected):
    assert whole_number(raw) == expected


def test_the_guard_answers_under_asgi_too():
    """Under ASGI (the event stream is an async view) the guard refuses before the view
    too, and before any login or database read."""

    async def run():
        client = AsyncClient()
        api = await client.get("/api/v1/job-sets/demo/set/events", QUERY_STRING="from=%00")
        page = await client.get("/queues/%00/")
        query = await client.get("/api/v1/jobs", QUERY_STRING="state=%ED%A0%80")
        return api, page, query

    api, page, query = asyncio.run(run())
    assert api.status_code == 400
    assert api.json()["errors"][0]["field"] == "from"
    assert page.status_code == 404 and b'class="problem"' in page.content
    assert query.status_code == 400
    assert query.json()["errors"] == [{"field": "state", "message": "is not valid UTF-8 text"}]


@pytest.mark.django_db
def test_a_field_a_view_checks_itself_is_left_to_it(admin_user):
    """The policy editor names ``document``: its NUL reaches the editor (a form error on its
    line), while a NUL in another field is the guard's 400."""
    client = Client()
    client.force_login(admin_user)
    own = client.post("/policies/validate", {"document": 'name: "a\\0"\n'})
    assert own.status_code == 200
    assert own.json()["errors"][0]["field"] == "name"
    other = client.post("/policies/validate", {"document": "name: a\n", "name": "a\x00"})
    assert other.status_code == 400
    assert b"name" in other.content
