"""Group counts of the jobs grid: every groupable column counts each group's jobs and their
states right (latest-run columns by the latest run only), each group narrows to exactly its
jobs, nested paths narrow, filters and groups combine, and viewers count only the queues they
may watch."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from lookout.grid.filters import FilterError, JobFilters, apply_filters, jobs_visible
from lookout.grid.groups import (
    GROUPABLE,
    MAX_GROUPS,
    count_groups,
    level_counts,
    narrowed,
    parse_path,
)
from tests.lookout.builders import make_job
from tests.lookout.grid.test_groups_data import EXPECTED, grouped_jobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(admin_user, queue):
    grouped_jobs(admin_user)


def counted(actor, key: str, filters: JobFilters | None = None, path=()) -> dict:
    level = level_counts(actor, filters or JobFilters(), (*[k for k, _ in path], key), path)
    assert level.as_of is None  # few jobs: counted now, exactly
    return {g.value: (g.total, dict(g.states)) for g in level.groups}


def expected(key: str) -> dict:
    return {value: (sum(states.values()), states) for value, states in EXPECTED[key].items()}


def test_every_column_the_grid_groups_by_is_offered_with_its_label():
    assert GROUPABLE == {
        "queue": "Queue",
        "job_set": "Job set",
        "state": "State",
        "priority_class": "Priority class",
        "owner": "Owner",
        "node": "Node",
        "cluster": "Cluster",
        "pool": "Pool",
        "exit_code": "Exit code",
        "category": "Failure category",
        "subcategory": "Subcategory",
        "decision": "Decision",
        "retryable": "Retryable",
        "runs": "Runs",
        "retries": "Retries",
    }


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_each_column_counts_its_groups_and_their_states(admin_user, jobs, key):
    assert counted(admin_user, key) == expected(key)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_each_group_narrows_to_exactly_the_jobs_it_counts(admin_user, jobs, key):
    """What expanding a group shows (the filters narrowed to its value) is what it counted."""
    for value, (total, states) in counted(admin_user, key).items():
        qs = apply_filters(jobs_visible(admin_user), JobFilters().with_exact(key, value))
        found = list(qs.values_list("state", flat=True))
        assert len(found) == total, (key, value)
        assert {s: found.count(s) for s in set(found)} == states, (key, value)


def test_groups_come_largest_first_with_their_states_in_state_order(admin_user, jobs):
    level = level_counts(admin_user, JobFilters(), ("exit_code",), ())
    assert [(g.value, g.total) for g in level.groups] == [("0", 2), ("", 2), ("1", 1), ("137", 1)]
    demo = level_counts(admin_user, JobFilters(), ("queue",), ()).groups[0]
    assert demo.value == "demo"
    assert [s for s, _ in demo.states] == ["queued", "running", "succeeded", "failed"]


def test_jobs_without_the_annotation_form_their_own_group(admin_user, jobs):
    make_job("07", job_set="s3", state="queued", annotations={"other": "x"})
    groups = counted(admin_user, "annotation:team")
    assert groups[""] == (4, {"queued": 2, "failed": 1, "succeeded": 1})
    missing = JobFilters().with_exact("annotation:team", "")
    ids = set(apply_filters(jobs_visible(admin_user), missing).values_list("id", flat=True))
    assert ids == {"03", "04", "05", "07"}


def test_a_path_narrows_each_level_to_its_parent_group(admin_user, jobs):
    assert counted(admin_user, "job_set", path=(("queue", "demo"),)) == {
        "s1": (3, {"failed": 1, "running": 1, "succeeded": 1}),
        "s2": (2, {"queued": 1, "failed": 1}),
    }
    path = (("queue", "demo"), ("job_set", "s1"))
    assert counted(admin_user, "node", path=path) == {
        "node-1": (2, {"running": 1, "succeeded": 1}),
        "node-2": (1, {"failed": 1}),
    }
    # The children of every group add up to the group.
    for queue, (total, _) in counted(admin_user, "queue").items():
        children = counted(admin_user, "decision", path=(("queue", queue),))
        assert sum(n for n, _ in children.values()) == total


def test_filters_and_groups_together(admin_user, jobs):
    failed = JobFilters.from_query(QueryDict("state=failed"))
    assert counted(admin_user, "queue", failed) == {"demo": (2, {"failed": 2})}
    by_prefix = JobFilters.from_query(QueryDict("job_set=s&node=node-1"))
    assert counted(admin_user, "job_set", by_prefix) == {
        "s1": (2, {"running": 1, "succeeded": 1}),
        "s9": (1, {"succeeded": 1}),
    }
    # A path below a prefix filter keeps the other filters.
    assert counted(admin_user, "state", by_prefix, path=(("job_set", "s1"),)) == {
        "running": (1, {"running": 1}),
        "succeeded": (1, {"succeeded": 1}),
    }
    annotated = JobFilters.from_query(QueryDict("ann=team"))
    assert counted(admin_user, "annotation:team", annotated) == {
        "vision": (2, {"failed": 1, "running": 1}),
        "nlp": (1, {"succeeded": 1}),
    }


def test_viewers_never_count_jobs_of_queues_they_may_not_watch(admin_user, owner, outsider, jobs):
    for key in EXPECTED:
        groups = counted(owner, key)
        assert sum(total for total, _ in groups.values()) == 5, key
    assert "other" not in counted(owner, "queue")
    assert "nlp" not in counted(owner, "annotation:team")
    assert counted(owner, "job_set", path=(("queue", "other"),)) == {}
    assert counted(outsider, "state") == {}


def test_more_groups_than_shown_are_counted_as_hidden(admin_user, jobs, monkeypatch):
    from lookout.grid import groups

    monkeypatch.setattr(groups, "MAX_GROUPS", 2)
    qs = jobs_visible(admin_user)
    shown, hidden = count_groups(qs, "exit_code")
    assert [g.value for g in shown] == ["0", ""] and hidden == 2
    assert count_groups(qs, "queue") == (count_groups(qs, "queue")[0], 0)
    assert MAX_GROUPS >= 100


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("not json", "is not JSON"),
        ('{"queue": "demo"}', "must be a list"),
        ('[["queue"]]', "level 1 is not a [column, value] pair"),
        ('[["queue", 1]]', "level 1 is not a [column, value] pair"),
        ('[["job_set", "s1"]]', "level 1 is 'job_set' but the view groups by 'queue'"),
        ('[["queue", "demo"], ["state", "failed"], ["x", "y"]]', "is 3 levels deep"),
        ('[["queue", "demo"], ["state", "finished"]]', "'finished' is not a job state"),
        ('[["queue", "' + "q" * 1025 + '"]]', "at most 1024 characters"),
        ('[["queue", "a\\u0000b"]]', ""),
        ("[" * 5000, "is longer than"),
    ],
)
def test_a_bad_path_is_refused_naming_it(raw, problem):
    with pytest.raises(FilterError) as refused:
        parse_path(raw, ("queue", "state"))
    assert refused.value.field == "path"
    assert problem in refused.value.message


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("exit_code", "137", True),
        ("exit_code", "-1", True),
        ("exit_code", "", True),
        ("exit_code", "x", False),
        ("exit_code", "01", False),
        ("exit_code", str(2**40), False),
        ("retries", "2", True),
        ("runs", "0", True),
        ("retries", "", False),
        ("retries", "-1", False),
        ("retries", "02", False),
        ("runs", "abc", False),
        ("runs", "²", False),
        ("runs", str(2**40), False),
        ("retryable", "unknown", True),
        ("retryable", "", False),
        ("retryable", "maybe", False),
        ("state", "", False),
        ("annotation:team", "", True),
        ("node", "", True),
        ("annotation:team", " spaced ", True),
    ],
)
def test_path_values_are_those_the_column_can_hold(key, value, ok):
    raw = f'[["{key}", "{value}"]]'
    if ok:
        assert parse_path(raw, (key,)) == ((key, value),)
        narrowed(JobFilters(), ((key, value),))
    else:
        with pytest.raises(FilterError, match="path"):
            parse_path(raw, (key,))
