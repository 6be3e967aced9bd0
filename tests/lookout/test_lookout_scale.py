"""What Lookout does differently at scale: a broad job-set prefix pages like a narrow one
(counted through the index, read by walking the key), and so does a submission-time range,
whichever way it is read, and the answer "broad or few" is kept for a minute. (Large group counts: tests/lookout/grid/test_groups_cache; a job's
latest events: tests/lookout/test_job_page.)"""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext

from lookout.grid import pages
from lookout.grid.pages import grid_page
from lookout.grid.params import GridParams
from tests.conftest import at
from tests.lookout.builders import make_job

pytestmark = pytest.mark.django_db


def walk(actor, query: str, page_size: int) -> list[str]:
    params = replace(GridParams.from_query(QueryDict(query)), per_page=page_size)
    seen: list[str] = []
    for _ in range(50):
        page = grid_page(actor, params)
        seen += page.ids
        if not page.next_cursor:
            return seen
        params = replace(
            GridParams.from_query(QueryDict(f"{query}&after={page.next_cursor}")),
            per_page=page_size,
        )
    raise AssertionError("pagination did not end")


@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_a_broad_job_set_prefix_pages_exactly_like_a_narrow_one(
    admin_user, queue, monkeypatch, direction
):
    for i in range(17):
        make_job(f"01j{i:02d}", job_set=f"team-{i % 3}/exp-{i % 4}")
    make_job("01z00", job_set="other")
    query = f"job_set=team-&dir={direction}"
    narrow = walk(admin_user, query, page_size=4)
    assert len(narrow) == 17 and "01z00" not in narrow
    monkeypatch.setattr(pages, "BROAD_PREFIX_MATCHES", 5)
    assert pages.broad_job_set_prefix("team-")
    assert not pages.broad_job_set_prefix("team-1/exp-1")
    assert walk(admin_user, query, page_size=4) == narrow
    assert walk(admin_user, f"job_set=team-1/&dir={direction}", page_size=2) == [
        j for j in narrow if int(j[3:]) % 3 == 1
    ]


@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_a_submission_time_range_pages_the_same_whichever_way_it_is_read(
    admin_user, queue, monkeypatch, direction
):
    """A range of few jobs is read through the submission-time index and sorted, a broad one
    or one reaching the newest job by walking the key: the pages are the same."""
    for i in range(20):
        # Ids in submission order, as a submit makes them.
        make_job(f"01r{i:02d}", submitted_at=at(i * 60))
    old = f"submitted_from={at(3 * 60).isoformat()}&submitted_to={at(11 * 60).isoformat()}"
    recent = f"submitted_from={at(15 * 60).isoformat()}"
    expected_old = [f"01r{i:02d}" for i in range(3, 12)]
    expected_recent = [f"01r{i:02d}" for i in range(15, 20)]
    if direction == "desc":
        expected_old.reverse()
        expected_recent.reverse()
    for query, expected in ((old, expected_old), (recent, expected_recent)):
        query = f"{query}&dir={direction}".replace("+", "%2B")
        assert walk(admin_user, query, page_size=4) == expected
    assert pages._newest_in_range(at(15 * 60), None)
    assert not pages._newest_in_range(at(3 * 60), at(11 * 60))
    assert not pages._broad_range("submitted_at", at(3 * 60), at(11 * 60))
    monkeypatch.setattr(pages, "BROAD_RANGE_MATCHES", 5)
    assert pages._broad_range("submitted_at", at(3 * 60), at(11 * 60))
    assert walk(admin_user, f"{old}&dir={direction}".replace("+", "%2B"), 4) == expected_old


@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_a_time_in_state_range_pages_the_same_whichever_way_it_is_read(
    admin_user, queue, monkeypatch, direction
):
    """Old jobs that changed state recently and new ones that have not: the matches of a
    time-in-state range are not the newest ids. Few are read through the transition index
    and sorted, many by walking the key: the pages are the same."""
    for i in range(20):
        changed = at((20 - i) * 60)  # the older the job, the later its last change
        make_job(f"01t{i:02d}", submitted_at=at(i), last_transition_at=changed)
    query = f"in_state_from={at(14 * 60).isoformat()}&dir={direction}".replace("+", "%2B")
    expected = [f"01t{i:02d}" for i in range(7)]  # changed at minutes 14 to 20
    if direction == "desc":
        expected.reverse()
    assert walk(admin_user, query, page_size=3) == expected
    assert not pages._broad_range("last_transition_at", at(14 * 60), None)
    monkeypatch.setattr(pages, "BROAD_RANGE_MATCHES", 5)
    assert pages._broad_range("last_transition_at", at(14 * 60), None)
    assert walk(admin_user, query, page_size=3) == expected


@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_several_states_page_the_same_whichever_way_they_are_read(
    admin_user, queue, monkeypatch, direction
):
    """Few jobs in any of several states are read through the state index and sorted, many
    by walking the key: the pages are the same."""
    states = ["succeeded", "queued", "running", "failed"]
    for i in range(20):
        make_job(f"01s{i:02d}", state=states[i % 4])
    query = f"state=queued&state=running&dir={direction}"
    expected = [f"01s{i:02d}" for i in range(20) if i % 4 in (1, 2)]
    if direction == "desc":
        expected.reverse()
    assert walk(admin_user, query, page_size=3) == expected
    assert not pages._broad_values("state", ("queued", "running"))
    monkeypatch.setattr(pages, "BROAD_VALUES_MATCHES", 5)
    assert pages._broad_values("state", ("queued", "running"))
    assert walk(admin_user, query, page_size=3) == expected


def test_the_broad_or_few_answer_is_counted_once_and_kept(admin_user, queue, monkeypatch):
    for i in range(6):
        make_job(f"01k{i:02d}", job_set=f"team-{i % 2}/exp")
    monkeypatch.setattr(pages, "BROAD_PREFIX_MATCHES", 5)
    with CaptureQueriesContext(connection) as first:
        assert pages.broad_job_set_prefix("team-")
    assert len(first.captured_queries) == 1
    with CaptureQueriesContext(connection) as again:
        assert pages.broad_job_set_prefix("team-")
        assert not pages.broad_job_set_prefix("team-1/")  # another filter: counted
    assert len(again.captured_queries) == 1
