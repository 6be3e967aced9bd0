"""The grouped grid's rows: the top level's group rows with counts per state, expanding a
group through ``GET /groups`` (the next level, or a keyset page of job rows with a "more"
row), groups named open in the URL rendered open, and every bad input a 400 naming it."""

from __future__ import annotations

import json
import re
from urllib.parse import quote, unquote

import pytest
from django.test import RequestFactory

from lookout.grid.filters import FilterError
from lookout.grid.groups import render_groups
from lookout.grid.params import GridParams
from tests.lookout.builders import make_job
from tests.lookout.grid.test_groups_data import grouped_jobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(admin_user, queue):
    grouped_jobs(admin_user)


@pytest.fixture
def as_admin(client, admin_user, jobs):
    client.force_login(admin_user)
    return client


def expand(client, query: str, path: list) -> tuple[int, str]:
    response = client.get(f"/groups?{query}&path={quote(json.dumps(path))}")
    return response.status_code, response.content.decode()


def group_rows(html: str) -> list[dict]:
    """Each group row's path, level, total, expanded flag and per-state badges."""
    rows = []
    for match in re.finditer(r'<tr class="group-row"[^>]*>.*?</tr>', html, re.S):
        row = match.group(0)
        attrs = dict(re.findall(r'(data-[a-z-]+|aria-[a-z]+)="([^"]*)"', row.split(">")[0]))
        states = re.findall(r'data-state="([a-z]+)">\1 ([\d,]+)<', row)
        rows.append(
            {
                "path": json.loads(attrs["data-group-path"].replace("&quot;", '"')),
                "level": int(attrs["data-level"]),
                "total": int(attrs["data-total"]),
                "expanded": attrs["data-expanded"] == "true",
                "states": {s: int(n.replace(",", "")) for s, n in states},
                "html": row,
            }
        )
    return rows


def top_level(user, query: str) -> str:
    request = RequestFactory().get(f"/?{query}")
    request.user = user
    return render_groups(request, GridParams.from_request(request))


def test_the_top_level_shows_each_group_with_its_total_and_states(admin_user, jobs):
    rows = group_rows(top_level(admin_user, "group=queue,job_set"))
    assert [(r["path"], r["total"], r["level"]) for r in rows] == [
        ([["queue", "demo"]], 5, 1),
        ([["queue", "other"]], 1, 1),
    ]
    assert rows[0]["states"] == {"queued": 1, "running": 1, "succeeded": 1, "failed": 2}
    html = rows[0]["html"]
    assert 'aria-expanded="false"' in html and 'class="group-toggle"' in html
    assert 'Queue</span> <span class="group-value">demo</span>' in html
    assert "5 jobs" in html and "failed 2" in html  # counts as text, not colour only
    toggle = re.search(r'<button type="button" class="group-toggle"[^>]*>', html).group(0)
    assert 'aria-controls="grp-' in toggle
    url = unquote(re.search(r'data-children-url="([^"]*)"', toggle).group(1))
    assert url.startswith("/groups?group=queue%2Cjob_set") or url.startswith("/groups?")
    assert url.endswith('path=[["queue","demo"]]')
    listed = re.search(r'class="group-list" href="([^"]*)"', html).group(1)
    assert "queue=demo" in listed and "group=" not in listed


def test_no_value_groups_are_named_so(admin_user, jobs):
    html = top_level(admin_user, "group=annotation:team")
    assert '<span class="group-value">(no value)</span>' in html
    assert '<span class="group-value">(none)</span>' in top_level(admin_user, "group=node")


def test_expanding_a_group_answers_the_next_level(as_admin):
    status, html = expand(as_admin, "group=queue,job_set,state", [["queue", "demo"]])
    assert status == 200
    rows = group_rows(html)
    assert [(r["path"][-1], r["total"], r["level"]) for r in rows] == [
        (["job_set", "s1"], 3, 2),
        (["job_set", "s2"], 2, 2),
    ]
    assert all(r["path"][0] == ["queue", "demo"] for r in rows)
    status, html = expand(
        as_admin, "group=queue,job_set,state", [["queue", "demo"], ["job_set", "s2"]]
    )
    assert [(r["path"][-1], r["level"]) for r in group_rows(html)] == [
        (["state", "failed"], 3),
        (["state", "queued"], 3),
    ]


def test_the_last_level_expands_into_job_rows_of_the_view(as_admin):
    query = "group=queue,job_set&columns=id,state,node&sort=id&dir=asc"
    status, html = expand(as_admin, query, [["queue", "demo"], ["job_set", "s1"]])
    assert status == 200
    assert re.findall(r'data-job-id="([^"]+)"', html) == ["01", "02", "05"]
    row = re.search(r'<tr class="job-row"[^>]*>.*?</tr>', html, re.S).group(0)
    assert re.findall(r'data-col="([a-z_]+)"', row) == ["select", "id", "state", "node"]
    assert "group-more" not in html


def test_a_group_of_many_jobs_pages_with_a_more_row(as_admin):
    for i in range(30):
        make_job(f"09{i:02d}", job_set="big", state="failed")
    status, html = expand(as_admin, "group=job_set&per_page=25", [["job_set", "big"]])
    first = re.findall(r'data-job-id="([^"]+)"', html)
    assert first == [f"09{i:02d}" for i in range(29, 4, -1)]
    more = re.search(r'<tr class="group-more" data-level="2">.*?data-more-url="([^"]+)"', html)
    assert more and "Show 25 more jobs of big" in html
    rest = as_admin.get(more.group(1).replace("&amp;", "&"))
    assert rest.status_code == 200
    body = rest.content.decode()
    assert re.findall(r'data-job-id="([^"]+)"', body) == [f"09{i:02d}" for i in range(4, -1, -1)]
    assert "group-more" not in body


def test_groups_named_open_in_the_url_are_rendered_open(admin_user, jobs):
    demo = json.dumps([["queue", "demo"]])
    s2 = json.dumps([["queue", "demo"], ["job_set", "s2"]])
    query = f"group=queue,job_set&columns=id,state&expanded={quote(demo)}&expanded={quote(s2)}"
    html = top_level(admin_user, query)
    rows = group_rows(html)
    assert [(r["path"][-1][1], r["expanded"]) for r in rows] == [
        ("demo", True),
        ("s1", False),
        ("s2", True),
        ("other", False),
    ]
    # The jobs of s2 come right after its row, before queue "other".
    after_s2 = html.split('data-group-path="[[&quot;queue&quot;,&quot;demo&quot;],[&quot;job_set')[
        -1
    ]
    assert re.findall(r'data-job-id="([^"]+)"', after_s2) == ["04", "03"]
    demo_toggle = re.search(r'<button type="button" class="group-toggle"[^>]*>', rows[0]["html"])
    controls = re.search(r'aria-controls="([^"]*)"', demo_toggle.group(0)).group(1).split()
    assert controls == [re.search(r'id="([^"]+)"', rows[i]["html"]).group(1) for i in (1, 2)]


def test_a_viewer_expands_only_what_they_may_watch(client, owner, jobs):
    client.force_login(owner)
    status, html = expand(client, "group=queue,job_set", [["queue", "other"]])
    assert status == 200 and group_rows(html) == []
    assert "No jobs match in this group now." in html
    status, html = expand(client, "group=queue,job_set", [["queue", "other"], ["job_set", "s9"]])
    assert "data-job-id" not in html


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("path=%5B%5D", "group"),
        ("group=queue", "path"),
        ("group=queue&path=%5B%5D&path=%5B%5D", "path"),
        ("group=queue&path=nope", "path"),
        ("group=queue&path=" + quote('[["state","failed"]]'), "path"),
        ("group=queue&path=" + quote('[["queue","demo"],["state","failed"]]'), "path"),
        ("group=resources&path=%5B%5D", "group"),
        ("group=bogus&path=%5B%5D", "group"),
        ("group=queue,state,owner,node&path=%5B%5D", "group"),
        ("group=exit_code&path=" + quote('[["exit_code","x"]]'), "path"),
        ("group=retries&path=" + quote('[["retries","-1"]]'), "path"),
        ("group=runs&path=%5B%5D&runs_min=abc", "runs_min"),
        ("group=queue&path=%5B%5D&expanded=" + quote('[["state","x"]]'), "expanded"),
        ("group=queue&path=%5B%5D&expanded=%5B%5D", "expanded"),
        ("group=queue&path=%5B%5D&state=finished", "state"),
        ("group=queue&path=%5B%5D&after=zzz", "after"),
    ],
)
def test_bad_input_is_a_400_naming_the_parameter(as_admin, query, field):
    response = as_admin.get(f"/groups?{query}")
    assert response.status_code == 400
    assert response.json()["message"].startswith(f"{field}: ")


def test_too_many_open_groups_are_refused(admin_user, jobs):
    query = "&".join("expanded=" + quote(json.dumps([["queue", f"q{i}"]])) for i in range(21))
    with pytest.raises(FilterError) as refused:
        top_level(admin_user, f"group=queue&{query}")
    assert refused.value.field == "expanded"


def test_groups_need_a_login(client, jobs):
    response = client.get("/groups?group=queue&path=%5B%5D")
    assert response.status_code == 302 and "/login" in response["Location"]
    assert client.post("/groups?group=queue&path=%5B%5D").status_code in (302, 405)


def test_the_jobs_page_shows_the_top_level_in_the_grid(as_admin):
    response = as_admin.get("/", {"group": "queue,job_set"})
    assert response.status_code == 200
    body = response.content.decode()
    rows = body.split('<tbody id="job-rows">')[1].split("</tbody>")[0]
    assert [r["path"] for r in group_rows(rows)] == [[["queue", "demo"]], [["queue", "other"]]]
    assert "lookout/grid_groups.js" in body and "lookout/grid_groups.css" in body
    refused = as_admin.get("/", {"group": "queue", "expanded": "[[1]]"})
    assert refused.status_code == 400
    assert "expanded: level 1 is not a [column, value] pair" in refused.content.decode()


HOSTILE = {
    "nul": "%00",
    "surrogate-utf8": "%ED%A0%80",
    "invalid-utf8": "%FF%FEx",
    "long-text": "x" * 100_000,
    "deep-json": "%5B" * 5000,
    "json-nul": quote('[["queue","a\\u0000b"]]'),
    "json-surrogate": quote('[["queue","\\ud800"]]'),
    "json-number": quote('[["queue",1e309]]'),
    "json-object": quote('[{"queue":"demo"}]'),
    "not-json": "nope",
}


@pytest.mark.parametrize("label", sorted(HOSTILE))
def test_hostile_paths_and_open_groups_are_400s(as_admin, label):
    value = HOSTILE[label]
    for field, query in (("path", f"path={value}"), ("expanded", f"path=%5B%5D&expanded={value}")):
        response = as_admin.get("/groups", QUERY_STRING=f"group=queue,job_set&{query}")
        assert response.status_code == 400, (label, field)
        assert f"{field}: " in response.content.decode(), (label, field)
    page = as_admin.get("/", QUERY_STRING=f"group=queue&expanded={value}")
    assert page.status_code == 400
