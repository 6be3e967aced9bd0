"""Jobs that differ in every column the grid filters on (the `table` fixture), and helpers to
read the grid."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.http import QueryDict

from armada.services.queues import queue_create
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_run


@pytest.fixture
def table(admin_user, queue, owner):
    """Six jobs in two queues with runs that differ in every filtered column; returns the
    admin (who may watch both queues)."""
    queue_create(actor=admin_user, data={"name": "other", "owners": ["someone"]}, now=T0)
    make_job(
        "01a",
        job_set="train-1",
        state="failed",
        failure_category="oom",
        failure_subcategory="memory",
        failure_count=3,
        retry_count=2,
        run_count=2,
        priority=5,
        annotations={"team": "vision", "tier": "gold"},
        submitted_at=T0,
        last_transition_at=T0 + timedelta(hours=5),
    )
    make_job(
        "01b",
        job_set="train-2",
        state="running",
        owner="bob",
        priority_class="armada-preemptible",
        annotations={"team": "speech"},
        submitted_at=T0 + timedelta(hours=1),
        last_transition_at=T0 + timedelta(hours=1),
    )
    make_job(
        "01c",
        job_set="eval",
        state="queued",
        annotations={"team": ""},
        submitted_at=T0 + timedelta(hours=2),
    )
    make_job(
        "01d",
        job_set="train-1",
        state="failed",
        failure_category="user-error",
        failure_subcategory="exit-1",
        priority=5,
        submitted_at=T0 + timedelta(hours=3),
        last_transition_at=T0 + timedelta(hours=4),
    )
    make_job("01e", queue="other", job_set="train-9", state="succeeded")
    make_job("01f", job_set="eval", state="succeeded", owner="bobby", priority=9)
    # 01a: an earlier run on node-9 (retried), the latest on node-2 (decided fail).
    make_run(
        "r01a1",
        "01a",
        node="node-9",
        pool="gpu",
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
    make_run("r01d1", "01d", node="node-20", state="failed", exit_code=1)  # undecided
    make_run("r01e1", "01e", node="node-1", state="succeeded", exit_code=0)
    make_run(
        "r01f1",
        "01f",
        node="node-3",
        executor="cluster-b",
        pool="gpu",
        state="succeeded",
        retryable=None,
        exit_code=0,
    )
    return admin_user


def query(**params) -> str:
    """A query string; a list value repeats its parameter."""
    q = QueryDict(mutable=True)
    for key, value in params.items():
        if isinstance(value, list):
            q.setlist(key, value)
        else:
            q[key] = value
    return q.urlencode()


def ids(client, **params) -> list[str]:
    """The job ids of the grid page ``params`` asks for, in order."""
    response = client.get("/?" + query(**params))
    assert response.status_code == 200, response.content.decode()[:500]
    return [row.job.id for row in response.context["rows"]]
