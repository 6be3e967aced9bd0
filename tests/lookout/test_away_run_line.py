"""A run placed away from home (``core.away``) says so on the job page and the panel's Runs
tab, with the node type and the priority it runs at; the API's run detail carries the same
as ``awayNodeType`` and ``scheduledAtPriority``."""

from __future__ import annotations

import pytest

from armada.models import Run
from armada.services.submit import job_submit
from tests.conftest import T0, at, job_file
from tests.lookout.builders import make_run, run_fact

pytestmark = pytest.mark.django_db


def away_line(html: str, run_id: str) -> str:
    return run_fact(html, run_id, "Away from home", "away")


@pytest.fixture
def job_with_runs(queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    make_run("home", job_id, leased_at=at(1), state="preempted")
    make_run("away", job_id, leased_at=at(2), state="running")
    Run.objects.filter(id="away").update(away_node_type="gpu", scheduled_priority=500)
    return job_id


@pytest.mark.parametrize("path", ["/jobs/{}", "/jobs/{}/panel/runs"])
def test_an_away_run_says_where_and_at_which_priority(client, admin_user, job_with_runs, path):
    client.force_login(admin_user)
    html = client.get(path.format(job_with_runs)).content.decode()
    assert away_line(html, "away") == (
        "on node type gpu, at priority 500 (evicted first when home jobs need the room)"
    )
    assert away_line(html, "home") == ""


def test_the_api_run_detail_carries_it(client, admin_user, job_with_runs):
    client.force_login(admin_user)
    runs = {r["id"]: r for r in client.get(f"/api/v1/jobs/{job_with_runs}").json()["runs"]}
    assert (runs["away"]["awayNodeType"], runs["away"]["scheduledAtPriority"]) == ("gpu", 500)
    assert (runs["home"]["awayNodeType"], runs["home"]["scheduledAtPriority"]) == ("", None)
