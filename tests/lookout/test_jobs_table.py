"""The jobs grid still answers the jobs table's URLs: every filter of the former table
narrows to exactly the same jobs, rows show their latest run's columns and the chosen
annotation columns, and a page costs the same few queries however many rows it shows.
(Each filter, sort and page of the grid itself: tests/lookout/grid/.)"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.lookout.builders import make_job, make_run
from tests.lookout.grid_jobs import ids, table  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, ["01f", "01e", "01d", "01c", "01b", "01a"]),
        ({"job_id": "01c"}, ["01c"]),
        ({"queue": "other"}, ["01e"]),
        ({"job_set": "train"}, ["01e", "01d", "01b", "01a"]),
        ({"job_set": "train-1"}, ["01d", "01a"]),
        ({"job_set_exact": "train-1"}, ["01d", "01a"]),
        ({"state": "failed"}, ["01d", "01a"]),
        ({"state": ["queued", "running"]}, ["01c", "01b"]),
        ({"queue": "demo", "state": "succeeded"}, ["01f"]),
        ({"priority_class": "armada-preemptible"}, ["01b"]),
        ({"owner": "bob"}, ["01f", "01b"]),  # now a prefix: bob and bobby
        ({"node": "node-2"}, ["01d", "01a"]),  # now a prefix: node-2 and node-20
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
        ({"state": "failed", "refresh": "10"}, ["01d", "01a"]),  # the old auto refresh: ignored
    ],
)
def test_the_former_tables_urls_still_filter(client, table, params, expected):  # noqa: F811
    client.force_login(table)
    assert ids(client, **params) == expected


def test_rows_show_the_latest_runs_columns_and_chosen_annotations(client, table):  # noqa: F811
    client.force_login(table)
    columns = "id,node,cluster,exit_code,decision,retryable,category,subcategory,resources,retries"
    html = client.get("/", {"job_id": "01a", "columns": columns}).content.decode()
    for text in ("node-2", "cluster-b", "137", "fail_policy_limit", "oom", "memory", "cpu 1"):
        assert text in html
    assert "node-9" not in html
    assert '<td data-col="retries" class="num">2</td>' in html  # retry_count, not failures
    assert '<span class="verdict verdict-no">no</span>' in html
    html = client.get("/", {"job_id": "01b", "annotations": "team,missing"}).content.decode()
    assert 'data-col="annotation:team"' in html and "speech" in html
    assert 'data-col="annotation:missing"' in html


def test_a_page_costs_the_same_queries_however_many_rows(client, admin_user, queue):
    client.force_login(admin_user)
    make_job("01n00", state="failed")
    make_run("r0", "01n00", state="failed", exit_code=1)
    # The session and the user are read once, and how this filter's page is read is kept.
    client.get("/", {"state": "failed", "node": "node"})
    with CaptureQueriesContext(connection) as few:
        assert client.get("/", {"state": "failed", "node": "node"}).status_code == 200
    for i in range(1, 40):
        make_job(f"01n{i:02d}", state="failed")
        make_run(f"r{i}", f"01n{i:02d}", state="failed", exit_code=1)
    with CaptureQueriesContext(connection) as many:
        response = client.get("/", {"state": "failed", "node": "node"})
    assert len(response.context["rows"]) == 40
    assert len(many) == len(few)
    # The page never reads the pod spec, and never uses OFFSET.
    page_query = next(q["sql"] for q in many if "armada_job" in q["sql"] and "LIMIT" in q["sql"])
    assert "pod_spec" not in page_query and "OFFSET" not in page_query
