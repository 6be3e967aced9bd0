"""What Lookout does differently at scale: a broad job-set prefix pages like a narrow one,
large group counts are kept for a while and say when they were counted, and the job page
shows a job's latest events with a link to all of them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.http import QueryDict

from armada.core.states import EventType
from armada.models import Event
from lookout import jobs_table
from lookout.jobs_table import TableParams, jobs_page
from tests.conftest import at
from tests.lookout.builders import make_job

pytestmark = pytest.mark.django_db


def walk(actor, query: str, page_size: int) -> list[str]:
    params = TableParams.from_query(QueryDict(query))
    seen: list[str] = []
    for _ in range(50):
        page = jobs_page(actor=actor, params=params, page_size=page_size)
        seen += [row.job.id for row in page.rows]
        if not page.next_cursor:
            return seen
        params = TableParams.from_query(QueryDict(f"{query}&after={page.next_cursor}"))
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
    monkeypatch.setattr(jobs_table, "BROAD_PREFIX_MATCHES", 5)
    assert jobs_table._broad_job_set_prefix("team-")
    assert not jobs_table._broad_job_set_prefix("team-1/exp-1")
    assert walk(admin_user, query, page_size=4) == narrow
    assert walk(admin_user, f"job_set=team-1/&dir={direction}", page_size=2) == [
        j for j in narrow if int(j[3:]) % 3 == 1
    ]


@pytest.fixture
def big_groups(monkeypatch):
    """Counts of more than two jobs are "large"; the cache starts empty and is emptied after."""
    monkeypatch.setattr(jobs_table, "GROUP_EXACT_ROWS", 3)
    monkeypatch.setattr(jobs_table, "GROUP_REFRESH_SECONDS", 3600.0)
    jobs_table._group_cache.clear()
    yield
    jobs_table._group_cache.clear()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="counts are kept on PostgreSQL only")
def test_large_group_counts_are_kept_and_say_when_they_were_counted(
    client, admin_user, queue, big_groups
):
    for i in range(4):
        make_job(f"01g{i}", state="failed" if i % 2 else "succeeded")
    client.force_login(admin_user)
    first = client.get("/", {"group": "state"})
    assert {g.value: g.count for g in first.context["groups"]} == {"failed": 2, "succeeded": 2}
    assert first.context["groups_as_of"] is not None
    assert "Counted at" in first.content.decode()
    make_job("01g9", state="failed")
    # Within the refresh period the same counts are shown, with the same time.
    again = client.get("/", {"group": "state"})
    assert {g.value: g.count for g in again.context["groups"]} == {"failed": 2, "succeeded": 2}
    assert again.context["groups_as_of"] == first.context["groups_as_of"]
    # Few matching jobs are counted exactly, every time, with no note.
    small = client.get("/", {"group": "state", "job_id": "01g9"})
    assert {g.value: g.count for g in small.context["groups"]} == {"failed": 1}
    assert small.context["groups_as_of"] is None
    assert "Counted at" not in small.content.decode()


@pytest.mark.skipif(connection.vendor == "postgresql", reason="the embedded database's rule")
def test_on_the_embedded_database_group_counts_are_always_exact_and_fresh(
    client, admin_user, queue, big_groups
):
    for i in range(4):
        make_job(f"01g{i}", state="failed")
    client.force_login(admin_user)
    first = client.get("/", {"group": "state"})
    assert {g.value: g.count for g in first.context["groups"]} == {"failed": 4}
    assert first.context["groups_as_of"] is None
    make_job("01g9", state="failed")
    again = client.get("/", {"group": "state"})
    assert {g.value: g.count for g in again.context["groups"]} == {"failed": 5}


def test_group_counts_are_exact_and_fresh_when_few_jobs_match(client, admin_user, queue):
    make_job("01h1", state="failed")
    client.force_login(admin_user)
    assert client.get("/", {"group": "state"}).context["groups_as_of"] is None
    make_job("01h2", state="failed")
    groups = client.get("/", {"group": "state"}).context["groups"]
    assert {g.value: g.count for g in groups} == {"failed": 2}


def test_the_job_page_shows_the_latest_events_and_links_to_all(
    client, admin_user, queue, monkeypatch
):
    make_job("01e1", state="running")
    Event.objects.bulk_create(
        Event(
            created=at(i),
            queue="demo",
            job_set="set-1",
            job_id="01e1",
            type=EventType.RUNNING if i % 2 else EventType.PENDING,
            payload={"node": f"node-{i}"},
        )
        for i in range(7)
    )
    monkeypatch.setattr("lookout.views.EVENTS_SHOWN", 3)
    client.force_login(admin_user)
    response = client.get("/jobs/01e1")
    shown = [item["event"].payload["node"] for item in response.context["events"]]
    assert shown == ["node-4", "node-5", "node-6"]  # the latest three, in order
    html = response.content.decode()
    assert "The last 3 of 7 events" in html and "?events=all" in html
    every = client.get("/jobs/01e1", {"events": "all"})
    assert [item["event"].payload["node"] for item in every.context["events"]] == [
        f"node-{i}" for i in range(7)
    ]
    assert "The last" not in every.content.decode()
