"""Every filter of the grid narrows to exactly its jobs: text prefixes and exact values,
multi-valued columns (with "(none)"), numeric and time ranges, the latest run's columns
(node, cluster, pool, exit code, decision, retryable: only the latest run counts),
annotation filters, and older URLs; viewers see only queues they may watch."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.http import QueryDict

from lookout.grid.filters import JobFilters, apply_filters, jobs_visible
from tests.lookout.grid_jobs import ids

pytestmark = pytest.mark.django_db
EVERY = ["01f", "01e", "01d", "01c", "01b", "01a"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, EVERY),
        # text prefixes
        ({"job_id": "01c"}, ["01c"]),
        ({"job_id": "01C"}, ["01c"]),  # ids are lower case
        ({"job_set": "train"}, ["01e", "01d", "01b", "01a"]),
        ({"job_set": "train-1"}, ["01d", "01a"]),
        ({"job_set_exact": "train"}, []),
        ({"job_set_exact": "train-1"}, ["01d", "01a"]),
        ({"owner": "bob"}, ["01f", "01b"]),
        ({"owner_exact": "bob"}, ["01b"]),
        ({"node": "node-2"}, ["01d", "01a"]),
        ({"node_exact": "node-2"}, ["01a"]),
        ({"node": "node-9"}, []),  # only an earlier run was there: the latest run counts
        ({"node_exact": "(none)"}, ["01c"]),  # no run at all
        ({"cluster": "cluster-b"}, ["01f", "01a"]),
        ({"cluster_exact": "cluster-a"}, ["01e", "01d", "01b"]),
        ({"pool": "gp"}, ["01f"]),  # 01a's earlier run was in gpu, its latest is not
        ({"pool_exact": "default"}, ["01e", "01d", "01b", "01a"]),
        # multi-valued
        ({"queue": "other"}, ["01e"]),
        ({"queue": ["other", "demo"]}, EVERY),
        ({"state": "failed"}, ["01d", "01a"]),
        ({"state": ["queued", "running"]}, ["01c", "01b"]),
        ({"queue": "demo", "state": "succeeded"}, ["01f"]),
        ({"priority_class": "armada-preemptible"}, ["01b"]),
        ({"category": "oom"}, ["01a"]),
        ({"category": ["oom", "user-error"]}, ["01d", "01a"]),
        ({"category": "(none)", "queue": "demo"}, ["01f", "01c", "01b"]),
        ({"category": ["(none)", "oom"], "queue": "demo"}, ["01f", "01c", "01b", "01a"]),
        ({"category": "oom", "subcategory": "nope"}, []),
        ({"subcategory": "exit-1"}, ["01d"]),
        ({"retryable": "no"}, ["01a"]),
        ({"retryable": "yes"}, []),
        ({"retryable": "unknown"}, ["01f", "01e", "01d", "01c", "01b"]),
        ({"retryable": ["no", "unknown"]}, EVERY),
        ({"retryable": ["yes", "no"]}, ["01a"]),
        ({"decision": "fail_policy_limit"}, ["01a"]),
        ({"decision": "retry"}, []),  # an earlier run's decision
        ({"decision": "(none)"}, ["01f", "01e", "01d", "01c", "01b"]),
        ({"decision": ["fail_policy_limit", "(none)"], "queue": "demo"}, EVERY[:1] + EVERY[2:]),
        # ranges
        ({"priority_min": "5"}, ["01f", "01d", "01a"]),
        ({"priority_min": "5", "priority_max": "5"}, ["01d", "01a"]),
        ({"priority_max": "0"}, ["01e", "01c", "01b"]),
        ({"exit_code_min": "1"}, ["01d", "01a"]),
        ({"exit_code_min": "1", "exit_code_max": "100"}, ["01d"]),
        ({"exit_code_max": "0"}, ["01f", "01e"]),
        ({"exit_code": "137"}, ["01a"]),
        ({"exit_code": "(none)"}, ["01c", "01b"]),
        ({"exit_code_min": "-5", "exit_code_max": "0"}, ["01f", "01e"]),
        # counts: 01a ran twice and was retried twice; the others were never retried
        ({"retries_min": "1"}, ["01a"]),
        ({"retries": "2"}, ["01a"]),
        ({"retries": "1"}, []),
        ({"retries": "0"}, EVERY[:5]),
        ({"retries_max": "1"}, EVERY[:5]),
        ({"retries_min": "1", "retries_max": "1"}, []),
        ({"runs_min": "2"}, ["01a"]),
        ({"runs": "0", "queue": "demo"}, ["01f", "01d", "01c", "01b"]),
        ({"runs_max": "1"}, EVERY[:5]),
        ({"submitted_from": "2026-01-01T14:00"}, ["01d", "01c"]),
        (
            {"submitted_from": "2026-01-01T13:00", "submitted_to": "2026-01-01T14:00"},
            ["01c", "01b"],
        ),
        ({"submitted_to": "2026-01-01"}, EVERY),  # a date: to the end of that day
        ({"submitted_from": "2026-01-01T14:00:00+02:00"}, EVERY),  # 12:00 UTC
        ({"in_state_from": "2026-01-01T16:00"}, ["01d", "01a"]),
        ({"in_state_from": "2026-01-01T16:30", "in_state_to": "2026-01-01T18:00"}, ["01a"]),
        # annotations
        ({"ann": "team=vision"}, ["01a"]),
        ({"ann": "team"}, ["01c", "01b", "01a"]),
        ({"ann": "team="}, ["01c"]),
        ({"ann": "!team"}, ["01f", "01e", "01d"]),
        ({"ann": ["team", "tier=gold"]}, ["01a"]),
        ({"ann": "team=nobody"}, []),
        ({"ann_key": "team", "ann_value": "speech"}, ["01b"]),
        ({"ann_key": "tier", "ann_op": "exists"}, ["01a"]),
        # older URLs: one queue, one state, empty fields of a submitted form
        ({"queue": "demo", "owner": "", "node": "", "refresh": "10"}, EVERY[:1] + EVERY[2:]),
    ],
)
def test_each_filter_narrows_to_exactly_its_jobs(client, table, params, expected):
    client.force_login(table)
    if "ann_key" in params:
        # The "add" fields lead to the view's own URL, with the filter as ``ann``.
        from tests.lookout.grid_jobs import query

        response = client.get("/?" + query(**params))
        assert response.status_code == 302 and "ann=" in response["Location"]
        response = client.get(response["Location"])
        assert [r.job.id for r in response.context["rows"]] == expected
        return
    assert ids(client, **params) == expected


def test_the_service_functions_filter_like_the_page(table):
    filters = JobFilters.from_query(QueryDict("state=failed&ann=team"))
    found = apply_filters(jobs_visible(table), filters).order_by("id")
    assert [j.id for j in found] == ["01a"]


def test_with_exact_narrows_to_one_group_value(table):
    base = JobFilters.from_query(QueryDict("queue=demo"))
    cases = {
        ("state", "failed"): ["01a", "01d"],
        ("category", ""): ["01b", "01c", "01f"],
        ("job_set", "train-1"): ["01a", "01d"],
        ("owner", "bob"): ["01b"],
        ("node", "node-2"): ["01a"],
        ("node", ""): ["01c"],
        ("cluster", "cluster-b"): ["01a", "01f"],
        ("pool", "gpu"): ["01f"],
        ("exit_code", "137"): ["01a"],
        ("exit_code", ""): ["01b", "01c"],
        ("retries", "2"): ["01a"],
        ("runs", "0"): ["01b", "01c", "01d", "01f"],
        ("decision", ""): ["01b", "01c", "01d", "01f"],
        ("retryable", "unknown"): ["01b", "01c", "01d", "01f"],
        ("retryable", ""): ["01b", "01c", "01d", "01f"],
        ("priority_class", "armada-preemptible"): ["01b"],
        ("subcategory", "memory"): ["01a"],
        ("annotation:team", "vision"): ["01a"],
        ("annotation:team", ""): ["01d", "01f"],
        ("queue", "other"): ["01e"],  # a group value replaces the queue filter
    }
    for (column, value), expected in cases.items():
        narrowed = base.with_exact(column, value)
        found = sorted(apply_filters(jobs_visible(table), narrowed).values_list("id", flat=True))
        assert found == expected, (column, value)
        # The narrowed filters survive the URL.
        assert JobFilters.from_query(QueryDict(urlencode(narrowed.as_params()))) == narrowed


def test_viewers_see_only_jobs_of_queues_they_may_watch(client, table, owner, outsider):
    client.force_login(owner)
    assert "01e" not in ids(client)
    assert ids(client, queue="other") == []
    html = client.get("/").content.decode()
    assert 'value="other"' not in html  # not offered as a queue to filter on
    client.force_login(outsider)
    assert ids(client) == []
    assert ids(client, job_id="01e") == []


@pytest.mark.parametrize(
    ("value", "prefix", "matches"),
    [
        ("bob", "bo", True),
        ("bob", "bob", True),
        ("bob", "bobb", False),
        ("boc", "bob", False),
        ("bo\u00fc", "bo\u00fc", True),
        ("bo\u00fcx", "bo\u00fc", True),
        ("bo\u00fd", "bo\u00fc", False),
        ("b\U0001f600z", "b\U0001f600", True),
        ("a\ud7ffb", "a\ud7ff", True),
        ("a\ue000", "a\ud7ff", False),
    ],
)
def test_a_prefix_matches_exactly_its_values(admin_user, queue, value, prefix, matches):
    """The prefix test is also written as a range where text sorts by code point: the range
    neither adds nor loses a value, next to the last character (and past the surrogates)."""
    from lookout.grid.filters import starts_with
    from tests.lookout.builders import make_job

    make_job("01p", owner=value)
    found = jobs_visible(admin_user).filter(starts_with("owner", prefix)).exists()
    assert found == matches


def test_a_job_id_prefix_is_read_from_the_primary_key():
    """Where text sorts by code point the primary key's pattern twin is gone (migration
    0035): the id prefix filter must then be a range the primary key answers, not a scan."""
    from django.db import connection

    from armada.migration_ops import sorts_by_code_point
    from armada.models import Job

    if not sorts_by_code_point(connection):
        pytest.skip("the pattern twin answers the prefix here")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = apply_filters(Job.objects.all(), JobFilters(job_id="01AB")).explain()
    assert "armada_job_pkey" in plan, plan
    assert "Index Cond: (((id)::text >= '01ab'::text) AND ((id)::text < '01ac'::text))" in plan, (
        plan
    )


@pytest.mark.parametrize("label", ["not_retried", "gang_skipped", "retry_unschedulable"])
def test_every_decision_a_trail_records_can_be_filtered_on(client, table, label):
    """The decisions a run's trail records besides the engine's own (a failure not decided by
    a policy, a gang member's, a retry no node could take) are filters and groups too: the
    filter narrows to the job, and the grouped view's list link for that group works."""
    from tests.lookout.builders import make_job, make_run

    make_job("01g", state="failed")
    make_run("r01g1", "01g", state="failed", decision={"decision": label})
    client.force_login(table)
    assert ids(client, decision=label) == ["01g"]
    response = client.get("/", {"decision": label})
    assert response.status_code == 200
    grouped = client.get("/", {"group": "decision"})
    assert grouped.status_code == 200
    assert f"decision={label}" in grouped.content.decode()
