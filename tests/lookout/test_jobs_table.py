"""The jobs table: every filter narrows to exactly the right jobs, groups count, keyset pages
walk every job once (with ties on the sort column), and viewers see only their queues."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from armada.services.queues import queue_create
from lookout.jobs_table import TableParams, decode_cursor, encode_cursor, jobs_page
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def table(admin_user, queue, owner):
    """Six jobs in two queues with runs that differ in every filtered column."""
    queue_create(actor=admin_user, data={"name": "other", "owners": ["someone"]}, now=T0)
    make_job(
        "01a",
        job_set="train-1",
        state="failed",
        failure_category="oom",
        failure_subcategory="memory",
        failure_count=2,
        priority=5,
    )
    make_job(
        "01b",
        job_set="train-2",
        state="running",
        owner="bob",
        priority_class="armada-preemptible",
        annotations={"team": "vision"},
    )
    make_job("01c", job_set="eval", state="queued")
    make_job(
        "01d",
        job_set="train-1",
        state="failed",
        failure_category="user-error",
        failure_subcategory="exit-1",
        priority=5,
    )
    make_job("01e", queue="other", job_set="train-9", state="succeeded")
    make_job("01f", job_set="eval", state="succeeded")
    # 01a: an earlier run on node-9 (retried), the latest on node-2 (decided fail).
    make_run(
        "r01a1",
        "01a",
        node="node-9",
        state="failed",
        retryable=True,
        decision={"decision": "retry"},
        exit_code=137,
    )
    make_run(
        "r01a2",
        "01a",
        node="node-2",
        executor="cluster-b",
        state="failed",
        retryable=False,
        decision={"decision": "fail_policy_limit"},
        exit_code=137,
    )
    make_run("r01b1", "01b", node="node-1", running_at=at(2))
    make_run("r01d1", "01d", node="node-2", state="failed", exit_code=1)  # undecided
    make_run("r01e1", "01e", node="node-1", state="succeeded", exit_code=0)
    make_run(
        "r01f1",
        "01f",
        node="node-3",
        executor="cluster-b",
        state="succeeded",
        retryable=None,
        exit_code=0,
    )
    return admin_user


def ids(client, **query) -> list[str]:
    params = QueryDict(mutable=True)
    for key, value in query.items():
        if isinstance(value, list):
            params.setlist(key, value)
        else:
            params[key] = value
    response = client.get("/?" + params.urlencode())
    assert response.status_code == 200
    return [row.job.id for row in response.context["page"].rows]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, ["01f", "01e", "01d", "01c", "01b", "01a"]),
        ({"job_id": "01c"}, ["01c"]),
        ({"queue": "other"}, ["01e"]),
        ({"job_set": "train"}, ["01e", "01d", "01b", "01a"]),
        ({"job_set": "train-1"}, ["01d", "01a"]),
        ({"state": "failed"}, ["01d", "01a"]),
        ({"state": ["queued", "running"]}, ["01c", "01b"]),
        ({"queue": "demo", "state": "succeeded"}, ["01f"]),
        ({"priority_class": "armada-preemptible"}, ["01b"]),
        ({"owner": "bob"}, ["01b"]),
        ({"node": "node-2"}, ["01d", "01a"]),
        ({"node": "node-9"}, []),  # only an earlier run was there: the latest run counts
        ({"cluster": "cluster-b"}, ["01f", "01a"]),
        ({"category": "oom"}, ["01a"]),
        ({"category": "oom", "subcategory": "nope"}, []),
        ({"subcategory": "exit-1"}, ["01d"]),
        ({"retryable": "no"}, ["01a"]),
        ({"retryable": "yes"}, []),
        ({"retryable": "unknown"}, ["01f", "01e", "01d", "01c", "01b"]),
        ({"decision": "fail_policy_limit"}, ["01a"]),
        ({"decision": "retry"}, []),
        ({"category": "(none)", "queue": "demo"}, ["01f", "01c", "01b"]),
    ],
)
def test_each_filter_narrows_to_exactly_its_jobs(client, table, query, expected):
    client.force_login(table)
    assert ids(client, **query) == expected


def test_rows_show_the_latest_runs_columns_and_chosen_annotations(client, table):
    client.force_login(table)
    html = client.get("/", {"job_id": "01a"}).content.decode()
    for text in ("node-2", "cluster-b", "137", "fail_policy_limit", "oom", "memory", "cpu 1"):
        assert text in html
    assert "node-9" not in html
    html = client.get("/", {"job_id": "01b", "annotations": "team,missing"}).content.decode()
    assert '<th scope="col" class="annotation">team</th>' in html and "vision" in html


def test_sorting_by_a_column_with_direction(client, table):
    client.force_login(table)
    assert ids(client, sort="job_set", dir="asc") == ["01c", "01f", "01a", "01d", "01b", "01e"]
    descending = ids(client, sort="retries")
    assert descending[0] == "01a"
    assert ids(client, sort="nonsense") == ["01f", "01e", "01d", "01c", "01b", "01a"]


def test_grouping_counts_and_links_to_the_filtered_list(client, table):
    client.force_login(table)
    response = client.get("/", {"group": "state"})
    groups = {g.value: g.count for g in response.context["groups"]}
    assert groups == {"failed": 2, "succeeded": 2, "queued": 1, "running": 1}
    failed = next(g for g in response.context["groups"] if g.value == "failed")
    assert ids(client, **dict(QueryDict(failed.url[1:]).items())) == ["01d", "01a"]
    by_category = client.get("/", {"group": "category", "queue": "demo"}).context["groups"]
    assert [(g.value, g.count) for g in by_category] == [
        ("(none)", 3),
        ("oom", 1),
        ("user-error", 1),
    ]
    by_set = client.get("/", {"group": "job_set", "job_set": "train"}).context["groups"]
    assert {g.value: g.count for g in by_set} == {"train-1": 2, "train-2": 1, "train-9": 1}
    target = next(g for g in by_set if g.value == "train-1").url
    assert "job_set_exact=train-1" in target
    assert client.get("/" + target).context["page"].rows[0].job.job_set == "train-1"


def walk(actor, query: str, page_size: int) -> list[str]:
    seen: list[str] = []
    params = TableParams.from_query(QueryDict(query))
    for _ in range(100):
        page = jobs_page(actor=actor, params=params, page_size=page_size)
        seen += [row.job.id for row in page.rows]
        if not page.next_cursor:
            return seen
        params = TableParams.from_query(QueryDict(f"{query}&after={page.next_cursor}"))
    raise AssertionError("pagination did not end")


@pytest.mark.parametrize("sort", ["id", "priority", "state", "submitted", "queue", "retries"])
@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_keyset_pages_have_no_duplicates_and_no_gaps_with_ties(admin_user, queue, sort, direction):
    # 23 jobs, only three priorities and two submission times: ties everywhere.
    for i in range(23):
        make_job(
            f"01k{i:02d}",
            priority=i % 3,
            submitted_at=at(i % 2),
            state=["queued", "failed"][i % 2],
            failure_count=i % 4,
        )
    everything = walk(admin_user, f"sort={sort}&dir={direction}", page_size=50)
    assert len(everything) == 23
    paged = walk(admin_user, f"sort={sort}&dir={direction}", page_size=4)
    assert paged == everything


def test_walking_back_with_before_returns_the_previous_page(admin_user, queue):
    for i in range(10):
        make_job(f"01p{i:02d}", priority=i % 2)
    query = "sort=priority"
    first = jobs_page(
        actor=admin_user, params=TableParams.from_query(QueryDict(query)), page_size=4
    )
    second = jobs_page(
        actor=admin_user,
        params=TableParams.from_query(QueryDict(f"{query}&after={first.next_cursor}")),
        page_size=4,
    )
    assert second.prev_cursor
    back = jobs_page(
        actor=admin_user,
        params=TableParams.from_query(QueryDict(f"{query}&before={second.prev_cursor}")),
        page_size=4,
    )
    assert [r.job.id for r in back.rows] == [r.job.id for r in first.rows]
    assert back.prev_cursor == ""  # the first page has nothing before it


def test_cursors_round_trip_and_junk_is_ignored(client, admin_user, queue):
    assert decode_cursor(encode_cursor(T0, "01x"), "submitted") == (T0, "01x")
    assert decode_cursor(encode_cursor(3, "01x"), "priority") == (3, "01x")
    assert decode_cursor("!!not-a-cursor", "id") is None
    make_job("01z")
    client.force_login(admin_user)
    assert ids(client, after="garbage") == ["01z"]


def test_the_url_keeps_every_setting_and_a_new_filter_starts_over():
    params = TableParams.from_query(
        QueryDict("queue=a&state=failed&state=queued&sort=priority&dir=asc&refresh=10&after=xyz")
    )
    url = params.url()
    for part in (
        "queue=a",
        "state=failed",
        "state=queued",
        "sort=priority",
        "dir=asc",
        "refresh=10",
    ):
        assert part in url
    assert "after=" not in url
    assert "after=abc" in params.url(after="abc")
    assert "refresh" not in TableParams.from_query(QueryDict("refresh=7")).url()


def test_auto_refresh_fragment_is_the_same_page_rows_only(client, table):
    client.force_login(table)
    first = client.get("/", {"state": "failed"})
    fragment = client.get("/", {"state": "failed", "fragment": "rows"})
    body = fragment.content.decode()
    assert "<html" not in body and "<tr>" in body
    assert [r.job.id for r in fragment.context["page"].rows] == ["01d", "01a"]
    assert [r.job.id for r in first.context["page"].rows] == ["01d", "01a"]
    page = first.content.decode()
    assert 'id="auto-refresh"' in page and "lookout/jobs.js" in page


def test_viewers_see_only_jobs_of_queues_they_may_watch(client, table, owner, outsider):
    client.force_login(owner)
    assert "01e" not in ids(client)
    assert ids(client, queue="other") == []
    assert {g.value for g in client.get("/", {"group": "queue"}).context["groups"]} == {"demo"}
    client.force_login(outsider)
    assert ids(client) == []
    assert client.get("/", {"group": "state"}).context["groups"] == []
