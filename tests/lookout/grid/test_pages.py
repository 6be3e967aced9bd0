"""Sorting and keyset pages: every job exactly once, both directions, with ties on the sort
column, walking forwards and back; the page's links and page sizes; the rows endpoint."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.http import QueryDict

from lookout.grid.columns import SORTS
from lookout.grid.cursors import decode_cursor, encode_cursor
from lookout.grid.pages import grid_page, rows_for
from lookout.grid.params import GridParams
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db


def params_of(query: str, per_page: int | None = None) -> GridParams:
    params = GridParams.from_query(QueryDict(query))
    return replace(params, per_page=per_page) if per_page else params


def walk(actor, query: str, per_page: int) -> list[str]:
    seen: list[str] = []
    params = params_of(query, per_page)
    for _ in range(100):
        page = grid_page(actor, params)
        seen += page.ids
        if not page.next_cursor:
            return seen
        params = params_of(f"{query}&after={page.next_cursor}", per_page)
    raise AssertionError("pagination did not end")


def walk_back(actor, query: str, per_page: int, start: str) -> list[str]:
    """From the page before ``start`` back to the first page; the ids in page order."""
    seen: list[str] = []
    params = params_of(f"{query}&before={start}", per_page)
    for _ in range(100):
        page = grid_page(actor, params)
        seen = page.ids + seen
        if not page.prev_cursor:
            return seen
        params = params_of(f"{query}&before={page.prev_cursor}", per_page)
    raise AssertionError("pagination did not end")


@pytest.fixture
def ties(admin_user, queue):
    """23 jobs with only three priorities, two submission times, two states, few retries."""
    for i in range(23):
        make_job(
            f"01k{i:02d}",
            priority=i % 3,
            submitted_at=at(i % 2),
            last_transition_at=at(i % 3),
            state=["queued", "failed"][i % 2],
            retry_count=i % 4,
            run_count=i % 5,
            owner=f"o{i % 2}",
            failure_category=["", "oom"][i % 2],
        )
    return admin_user


@pytest.mark.parametrize("sort", sorted(SORTS))
@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_keyset_pages_have_no_duplicates_and_no_gaps_with_ties(ties, sort, direction):
    query = f"sort={sort}&dir={direction}"
    everything = walk(ties, query, per_page=50)
    assert sorted(everything) == sorted(f"01k{i:02d}" for i in range(23))
    paged = walk(ties, query, per_page=4)
    assert paged == everything
    # Walking back from past the last page's end returns every page in the same order.
    last = grid_page(ties, params_of(query, 50))
    assert last.next_cursor == ""
    field = SORTS[sort]
    from armada.models import Job

    tail = Job.objects.get(id=everything[-1])
    beyond = encode_cursor(getattr(tail, field), tail.id)
    # ``before`` the last row: every row but the last, walked back 4 at a time.
    assert walk_back(ties, query, 4, beyond) == everything[:-1]


def test_retries_sort_by_retry_count(ties):
    page = grid_page(ties, params_of("sort=retries", 50))
    counts = [row.job.retry_count for row in page.rows]
    assert counts == sorted(counts, reverse=True) and counts[0] == 3


def test_walking_back_with_before_returns_the_previous_page(admin_user, queue):
    for i in range(10):
        make_job(f"01p{i:02d}", priority=i % 2)
    first = grid_page(admin_user, params_of("sort=priority", 4))
    second = grid_page(admin_user, params_of(f"sort=priority&after={first.next_cursor}", 4))
    assert second.prev_cursor
    back = grid_page(admin_user, params_of(f"sort=priority&before={second.prev_cursor}", 4))
    assert back.ids == first.ids
    assert back.prev_cursor == ""  # the first page has nothing before it


def test_cursors_round_trip_and_junk_is_refused(client, admin_user, queue):
    assert decode_cursor(encode_cursor(T0, "01x"), "submitted") == (T0, "01x")
    assert decode_cursor(encode_cursor(3, "01x"), "priority") == (3, "01x")
    assert decode_cursor(encode_cursor("3", "01x"), "priority") is None
    assert decode_cursor(encode_cursor(True, "01x"), "retries") is None
    assert decode_cursor("!!not-a-cursor", "id") is None
    assert decode_cursor(encode_cursor("a\x00", "01x"), "owner") is None
    make_job("01z")
    client.force_login(admin_user)
    assert client.get("/", {"after": "garbage"}).status_code == 400


def test_the_page_links_pages_and_page_sizes(client, admin_user, queue):
    for i in range(30):
        make_job(f"01q{i:02d}")
    client.force_login(admin_user)
    first = client.get("/", {"per_page": "25"})
    assert [r.job.id for r in first.context["rows"]] == [f"01q{i:02d}" for i in range(29, 4, -1)]
    html = first.content.decode()
    assert "Next page" in html and "Previous page" not in html
    assert 'value="25" selected' in html
    next_url = first.context["next_url"]
    assert "per_page=25" in next_url and "after=" in next_url
    second = client.get("/" + next_url)
    assert [r.job.id for r in second.context["rows"]] == [f"01q{i:02d}" for i in range(4, -1, -1)]
    assert second.context["first_url"] and second.context["prev_url"]
    assert "Next page" not in second.content.decode()


def test_the_url_keeps_every_setting_and_a_new_filter_starts_over():
    params = GridParams.from_query(
        QueryDict(
            "queue=a&state=failed&state=queued&sort=priority&dir=asc&per_page=100"
            "&group=queue,state&columns=id,state&job=01abc&live=0&refresh=10"
        )
    )
    url = params.url()
    for part in (
        "queue=a",
        "state=failed",
        "state=queued",
        "sort=priority",
        "dir=asc",
        "per_page=100",
        "group=queue%2Cstate",
        "columns=id%2Cstate",
        "job=01abc",
        "live=0",
    ):
        assert part in url
    assert "refresh" not in url
    assert "after=abc" in params.url(after="abc")
    moved = replace(params, after="abc")
    assert "after=" not in moved.url(sort="state")  # a new order starts over
    assert "after=abc" in moved.url(columns=("id",))  # showing other columns keeps the page
    assert "columns=" not in GridParams.from_query(QueryDict("")).url()


def test_sort_links_flip_direction_and_say_aria_sort(client, admin_user, queue):
    make_job("01s")
    client.force_login(admin_user)
    html = client.get("/", {"sort": "state", "dir": "asc"}).content.decode()
    assert 'data-col="state" aria-sort="ascending"' in html
    assert 'data-col="id" aria-sort="none"' in html
    header = {h.key: h for h in client.get("/", {"sort": "state"}).context["header"]}
    assert "dir=asc" in header["state"].sort_url
    assert "sort=retries" in header["retries"].sort_url


def test_rows_endpoint_answers_only_rows_that_still_match(client, admin_user, owner, queue):
    from armada.services.queues import queue_create

    queue_create(actor=admin_user, data={"name": "other", "owners": ["someone"]}, now=T0)
    make_job("01r1", state="failed")
    make_job("01r2", state="running")
    make_job("01r3", state="failed", queue="other")
    make_run("r1", "01r1", node="node-7", exit_code=3)
    client.force_login(owner)
    response = client.get(
        "/rows", {"ids": "01r1,01r2,01r3,nope", "state": "failed", "columns": "id,state,node"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('<tr class="job-row"') == 1  # 01r2 does not match, 01r3 is not watchable
    assert 'data-job-id="01r1" data-state="failed" tabindex="-1"' in html
    assert 'class="row-select" value="01r1" aria-label="Select job 01r1"' in html
    assert '<td data-col="node"' in html and "node-7" in html
    assert 'data-col="retries"' not in html  # hidden columns are not rendered
    assert "<html" not in html
    assert client.get("/rows").status_code == 400
    too_many = ",".join(f"01x{i}" for i in range(201))
    assert client.get("/rows", {"ids": too_many}).status_code == 400
    assert client.post("/rows", {"ids": "01r1"}).status_code == 405


def test_rows_for_keeps_the_views_order(admin_user, queue):
    for i in range(5):
        make_job(f"01o{i}", priority=i)
    params = params_of("sort=priority&dir=asc")
    rows = rows_for(admin_user, params, ["01o3", "01o1", "01o4"])
    assert [r.job.id for r in rows] == ["01o1", "01o3", "01o4"]


def test_fragment_rows_is_the_pages_rows_only(client, admin_user, queue):
    make_job("01f1", state="failed")
    make_job("01f2", state="queued")
    client.force_login(admin_user)
    body = client.get("/", {"state": "failed", "fragment": "rows"}).content.decode()
    assert "<html" not in body and 'data-job-id="01f1"' in body and "01f2" not in body


def test_the_htmx_part_pushes_the_views_url(client, admin_user, queue):
    make_job("01h1", state="failed")
    client.force_login(admin_user)
    part = client.get(
        "/?state=failed&job_id=&owner=", headers={"HX-Request": "true", "HX-Target": "job-rows"}
    )
    assert part.status_code == 200
    assert part["HX-Push-Url"] == "/?state=failed"
    html = part.content.decode()
    assert "<html" not in html and 'id="job-rows"' in html and 'id="grid-pager"' in html
    assert 'id="grid-head"' in html and 'id="grid-form-fields"' in html
    assert "HX-Request" in part["Vary"]
