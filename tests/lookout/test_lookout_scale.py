"""What Lookout does differently at scale: a broad job-set prefix pages like a narrow one
(counted through the index, read by walking the key), and the job page shows a job's latest
events with a link to all of them. (Large group counts: tests/lookout/grid/test_groups_cache.)"""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.http import QueryDict

from armada.core.states import EventType
from armada.models import Event
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
    monkeypatch.setattr("lookout.panel_parts.EVENTS_SHOWN", 3)
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
