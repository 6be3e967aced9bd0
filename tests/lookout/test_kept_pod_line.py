"""The job page (and the side panel's Runs tab) says whether a failed run's pod is still kept
on its cluster and until when, or that it was kept until a time now past; the API's run
detail carries the same time as ``podKeptUntil``."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from armada.models import Run
from armada.services.submit import job_submit
from tests.conftest import T0, at, job_file
from tests.lookout.builders import make_run, run_fact

pytestmark = pytest.mark.django_db


def kept_line(html: str, run_id: str) -> str:
    """The text of the run's "Kept pod" fact; "" when it has none."""
    return run_fact(html, run_id, "Kept pod", "pod-kept")


@pytest.fixture
def job_with_runs(queue, owner):
    """A job with three failed runs: one whose pod is still kept, one whose pod was kept
    and is gone, one whose pod was deleted at once (a Delete category)."""
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    now = timezone.now()
    common = {"state": "failed", "failure_category": "user-error", "finished_at": at(5)}
    make_run("r1", job_id, leased_at=at(1), pod_name="armada-x-0", **common)
    make_run("r2", job_id, leased_at=at(2), pod_name="armada-x-0", **common)
    make_run("r3", job_id, leased_at=at(3), pod_name="armada-x-0", **common)
    Run.objects.filter(id="r1").update(pod_kept_until=now - timedelta(hours=1))
    Run.objects.filter(id="r2").update(pod_kept_until=now + timedelta(hours=5))
    return job_id, now


def test_the_job_page_says_which_pods_are_kept_and_until_when(client, admin_user, job_with_runs):
    job_id, now = job_with_runs
    client.force_login(admin_user)
    html = client.get(f"/jobs/{job_id}").content.decode()
    until = timezone.localtime(now + timedelta(hours=5)).strftime("%Y-%m-%d %H:%M:%S")
    before = timezone.localtime(now - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    assert kept_line(html, "r2") == f"armada-x-0 is kept until {until}"
    assert kept_line(html, "r1") == f"armada-x-0 was kept until {before} (deleted)"
    assert kept_line(html, "r3") == ""  # never kept: no line
    iso = timezone.localtime(now + timedelta(hours=5)).isoformat()
    assert f'<time datetime="{iso}">' in html


def test_the_panel_runs_tab_says_it_too(client, admin_user, job_with_runs):
    job_id, _ = job_with_runs
    client.force_login(admin_user)
    html = client.get(f"/jobs/{job_id}/panel/runs").content.decode()
    assert kept_line(html, "r2").startswith("armada-x-0 is kept until ")


def test_the_api_run_detail_has_pod_kept_until(api, job_with_runs):
    job_id, now = job_with_runs
    body = api.get(f"/api/v1/jobs/{job_id}").json()
    kept = {run["id"]: run["podKeptUntil"] for run in body["runs"]}
    assert kept["r3"] is None
    assert kept["r2"] is not None
    assert abs(
        datetime.fromisoformat(kept["r2"].replace("Z", "+00:00")) - (now + timedelta(hours=5))
    ) < timedelta(seconds=1)
