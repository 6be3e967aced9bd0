"""The retry policies list: its columns, finding a policy by name (``?q=``, with and without
htmx) and keyset pages that cost the same at 300 policies as at 3."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from armada.models import Queue, RetryPolicy
from tests.conftest import T0

pytestmark = pytest.mark.django_db


def make_policies(count: int) -> list[str]:
    """``count`` policies ``p-000`` ... straight into the table, with a rule each."""
    names = [f"p-{n:03d}" for n in range(count)]
    RetryPolicy.objects.bulk_create(
        RetryPolicy(
            name=name,
            retry_limit=n % 5,
            default_action="Retry" if n % 2 else "Fail",
            rules=[{"action": "Fail", "onCategory": "user-error"}],
            created_at=T0,
            updated_at=T0,
            updated_by="root",
        )
        for n, name in enumerate(names)
    )
    return names


@pytest.fixture
def admin(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def names_on(response) -> list[str]:
    return [row["policy"].name for row in response.context["rows"]]


def test_300_policies_come_a_page_at_a_time_at_the_same_cost(admin, queue):
    names = make_policies(300)
    Queue.objects.filter(name="demo").update(retry_policies=["p-120", "p-007"])
    with CaptureQueriesContext(connection) as first_page:
        response = admin.get("/policies/")
    assert response.status_code == 200
    assert names_on(response) == names[:50]
    assert response.context["page"].total == 300
    html = response.content.decode()
    assert "300 policies; showing p-000 to p-049" in html
    assert 'href="?after=p-049"' in html and "Previous page" not in html
    # Walk to the last page by the next links: each page is its next 50 names.
    seen, url = [], "/policies/"
    while url:
        with CaptureQueriesContext(connection) as queries:
            response = admin.get(url)
        assert len(queries) <= len(first_page) + 1, [q["sql"] for q in queries]
        seen += names_on(response)
        url = response.context["page"].next_url and "/policies/" + response.context["page"].next_url
    assert seen == names
    # ... and back: the previous link of the last page is the page before it.
    last = response.context["page"]
    assert last.previous_url == "?before=p-250"
    back = admin.get("/policies/" + last.previous_url)
    assert names_on(back) == names[200:250]
    assert back.context["page"].next_url == "?after=p-249"
    # The queues using a policy are shown on its row, wherever the page is.
    row = next(r for r in admin.get("/policies/?after=p-099").context["rows"])
    assert row["policy"].name == "p-100"
    [row] = [r for r in admin.get("/policies/?after=p-099").context["rows"] if r["queues"]]
    assert (row["policy"].name, row["queues"]) == ("p-120", ["demo"])


def test_find_by_name_is_a_substring_whatever_the_case(admin):
    make_policies(300)
    response = admin.get("/policies/", {"q": "P-12"})
    assert names_on(response) == [f"p-{n}" for n in range(120, 130)]
    assert response.context["page"].total == 10
    assert "10 policies with “P-12” in the name" in response.content.decode()
    assert names_on(admin.get("/policies/", {"q": "-01"})) == [f"p-01{n}" for n in range(10)]
    [one] = names_on(admin.get("/policies/", {"q": " p-299 "}))
    assert one == "p-299"
    empty = admin.get("/policies/", {"q": "nothing-like-it"})
    assert names_on(empty) == []
    assert "No retry policy has “nothing-like-it”" in empty.content.decode()
    # Pages of found policies keep the text in their links.
    found = admin.get("/policies/", {"q": "p-1"})
    assert found.context["page"].total == 100
    assert found.context["page"].next_url == "?q=p-1&after=p-149"
    assert names_on(admin.get("/policies/" + found.context["page"].next_url))[0] == "p-150"


def test_odd_find_text_finds_nothing_and_breaks_nothing(admin):
    make_policies(3)
    for text in ["%", "_", "'", "\\", "a" * 5000, "p-0%"]:
        response = admin.get("/policies/", {"q": text})
        assert response.status_code == 200, text
        assert names_on(response) == [], text
    assert admin.get("/policies/", {"q": "x\x00y"}).status_code == 400
    for cursor in ("after", "before"):
        for value in ("x" * 16_000, "9" * 40, "-1", "%", "\u00b2"):
            response = admin.get("/policies/", {cursor: value, "q": "p"})
            assert response.status_code == 200, (cursor, value)
        assert admin.get("/policies/", {cursor: "a\x00"}).status_code == 400
        # Longer than the web server takes in a request line: refused, naming the parameter.
        too_long = admin.get("/policies/", {cursor: "x" * 100_000, "q": "p"})
        assert too_long.status_code == 400 and cursor in too_long.content.decode()
    assert names_on(admin.get("/policies/", {"after": "zzz"})) == []
    assert names_on(admin.get("/policies/", {"before": ""})) == ["p-000", "p-001", "p-002"]


def test_htmx_gets_only_the_results_and_the_count(admin):
    make_policies(3)
    response = admin.get("/policies/", {"q": "p-001"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "HX-Request" in response["Vary"]
    assert "<html" not in html and 'id="find-name"' not in html
    assert re.search(r'<p id="list-count"[^>]*hx-swap-oob="innerHTML"', html)
    assert ">p-001</a>" in html and "p-002" not in html
    # A history restore asks for the whole page.
    restore = admin.get(
        "/policies/", {"q": "p-001"}, HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )
    assert "<html" in restore.content.decode()


def test_the_page_works_without_javascript(admin):
    make_policies(3)
    html = admin.get("/policies/", {"q": "p-002"}).content.decode()
    # A plain GET form with the text kept in its box, and a button to send it.
    assert re.search(r'<form method="get" action="/policies/" role="search"', html)
    assert 'name="q" value="p-002"' in html and '<button type="submit">Find</button>' in html
    assert '<p id="list-count" class="list-count" role="status">' in html
    assert 'href="/policies/">Show all</a>' in html
