"""The grid's view of the jobs that were retried, and its clear-all control: the ready view
"Retried jobs" (retries at least 1) is a link in the filter bar on top of the other filters;
"Clear all filters" shows only while a filter is set and takes every filter away, keeping the
sort, columns and grouping; the grouped view's "list" link of every group of runs, retries
and decisions opens a working list of exactly that group's jobs."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qsl, urlsplit

import pytest

from armada.core.retry import TRAIL_LABELS
from tests.lookout.builders import make_job, make_run
from tests.lookout.grid_jobs import ids, table  # noqa: F401

pytestmark = pytest.mark.django_db


def link(html: str, name: str) -> str | None:
    """The href of the link whose text is ``name`` (None: no such link)."""
    found = re.search(rf'<a href="([^"]*)"[^>]*>{re.escape(name)}</a>', html)
    return unescape(found.group(1)) if found else None


def list_links(html: str) -> dict[str, str]:
    """The grouped view's "list" links, by the group's value."""
    links = re.findall(
        r'<a class="group-list" href="([^"]*)">list<span class="visually-hidden">([^<]*)</span>',
        html,
    )
    return {unescape(name).split()[-1]: unescape(href) for href, name in links}


def test_the_retried_jobs_link_narrows_on_top_of_the_other_filters(client, table):  # noqa: F811
    client.force_login(table)
    html = client.get("/", {"queue": "demo", "sort": "priority"}).content.decode()
    url = link(html, "Retried jobs")
    assert url is not None
    assert dict(parse_qsl(urlsplit(url).query)) == {
        "queue": "demo",
        "retries_min": "1",
        "sort": "priority",
    }
    response = client.get(url)
    assert [r.job.id for r in response.context["rows"]] == ["01a"]
    assert 'aria-current="true">Retried jobs</a>' in response.content.decode()
    # Shown in the retries column's header filter, as "at least 1".
    assert 'name="retries_min" value="1"' in response.content.decode()
    assert ids(client, retries_min=1) == ["01a"]


def test_clear_all_shows_only_with_a_filter_and_keeps_the_rest_of_the_view(client, table):  # noqa: F811
    client.force_login(table)
    assert link(client.get("/", {"sort": "priority"}).content.decode(), "Clear all filters") is None
    view = {
        "queue": "demo",
        "state": ["failed", "running"],
        "retries_min": "1",
        "runs": "2",
        "ann": "team",
        "sort": "priority",
        "dir": "asc",
        "columns": "id,state,runs,retries",
        "per_page": "25",
        "group": "state",
    }
    html = client.get("/", view).content.decode()
    url = link(html, "Clear all filters")
    assert url is not None and 'id="clear-filters"' in html
    assert dict(parse_qsl(urlsplit(url).query)) == {
        "sort": "priority",
        "dir": "asc",
        "columns": "id,state,runs,retries",
        "per_page": "25",
        "group": "state",
    }
    # A refused filter can be cleared too.
    refused = client.get("/", {"retries": "abc", "sort": "priority"})
    assert refused.status_code == 400
    assert link(refused.content.decode(), "Clear all filters") == "/?sort=priority"[1:]


@pytest.mark.parametrize(
    ("key", "values"),
    [("retries", {"2": ["01a"], "0": ["01f", "01e", "01d", "01c", "01b"]}),
     ("runs", {"2": ["01a"], "0": ["01f", "01e", "01d", "01c", "01b"]})],
)  # fmt: skip
def test_groups_by_retries_and_runs_list_their_jobs(client, table, key, values):  # noqa: F811
    client.force_login(table)
    html = client.get("/", {"group": key}).content.decode()
    links = list_links(html)
    assert set(links) == set(values)
    for value, expected in values.items():
        response = client.get(links[value])
        assert response.status_code == 200, links[value]
        assert f"{key}={value}" in links[value]
        assert [r.job.id for r in response.context["rows"]] == expected


def test_every_decision_groups_list_link_opens_its_jobs(client, table):  # noqa: F811
    for i, label in enumerate(TRAIL_LABELS):
        make_job(f"02{i:02d}", state="failed")
        make_run(f"r02{i:02d}", f"02{i:02d}", state="failed", decision={"decision": label})
    client.force_login(table)
    links = list_links(client.get("/", {"group": "decision"}).content.decode())
    for i, label in enumerate(TRAIL_LABELS):
        response = client.get(links[label])
        assert response.status_code == 200, label
        expected = ["01a", f"02{i:02d}"] if label == "fail_policy_limit" else [f"02{i:02d}"]
        assert sorted(r.job.id for r in response.context["rows"]) == expected, label
    assert client.get("/", {"decision": "not_retried"}).status_code == 200
