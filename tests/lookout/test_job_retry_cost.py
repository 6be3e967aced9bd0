"""The job page, its side panel and the API's job detail say what a job's retries cost:
"its 2 retries used ... core-seconds (... GiB-seconds, 0 GPU-hours); the last attempt
succeeded" (each amount in the unit that fits its size), computed from the job's runs."""

from __future__ import annotations

import re

import pytest

from armada.models import Job, Run
from armada.services.retry_cost import cost_of
from tests.conftest import at
from tests.services.conftest import fresh_policy_cache, with_policy  # noqa: F401 (fixtures)
from tests.services.decision_world import configure, submit
from tests.services.retry_cost_world import OOM_THEN_OK, drive_until, resume, retried_then_succeeds

PER_HOUR = {"hours": 1.0, "minutes": 60.0, "seconds": 3600.0}
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_policy_cache", "with_policy")]


def _expected_core_hours(job_id: str) -> float:
    runs = list(Run.objects.filter(job_id=job_id).order_by("id"))
    return sum(cost_of(r).core_hours for r in runs[1:])


def test_the_job_page_and_panel_say_what_the_retries_used(client, settings, owner):
    job_id, _ = retried_then_succeeds(settings, owner)
    core = _expected_core_hours(job_id)
    client.force_login(owner)
    for url in (f"/jobs/{job_id}", f"/jobs/{job_id}/panel"):
        html = client.get(url).content.decode()
        assert "Cost of retries" in html, url
        line = html.split('class="retry-cost">')[1].split("</dd>")[0]
        used = re.match(
            r"Its 2 retries used ([0-9.,]+) core-(hours|minutes|seconds) "
            r"\(([0-9.,]+) GiB-(hours|minutes|seconds)",
            line,
        )
        assert used, (url, line)
        shown = float(used.group(1).replace(",", "")) / PER_HOUR[used.group(2)]
        assert shown == pytest.approx(core, rel=0.2, abs=0.05 / PER_HOUR[used.group(2)])
        assert line.endswith("GPU-hours); the last attempt succeeded"), line


def test_a_running_retry_is_costed_so_far(client, settings, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, OOM_THEN_OK)
    t = drive_until(agent, 1, lambda: Job.objects.get(id=job_id).retry_count >= 1)
    Job.objects.filter(id=job_id).update(annotations={"fake.armadaproject.io/duration": "1h"})
    drive_until(agent, resume(agent, t), lambda: Job.objects.get(id=job_id).state == "running")
    client.force_login(owner)
    html = client.get(f"/jobs/{job_id}").content.decode()
    line = html.split('class="retry-cost">')[1].split("</dd>")[0]
    assert line.startswith("Its 1 retry used ") and "so far; the last attempt is running" in line


def test_a_job_never_retried_has_no_line(client, settings, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"exitCode": "1"})
    drive_until(agent, 1, lambda: Job.objects.get(id=job_id).state == "failed")
    client.force_login(owner)
    assert "Cost of retries" not in client.get(f"/jobs/{job_id}").content.decode()
    assert client.get(f"/api/v1/jobs/{job_id}").json()["retryCost"] is None


def test_the_api_job_detail_has_the_retry_cost(client, settings, owner):
    job_id, _ = retried_then_succeeds(settings, owner)
    client.force_login(owner)
    body = client.get(f"/api/v1/jobs/{job_id}").json()
    assert body["retryCost"]["retries"] == 2
    assert body["retryCost"]["retriedAttempts"] == 2
    assert body["retryCost"]["lastAttempt"] == "succeeded"
    assert body["retryCost"]["cost"]["coreHours"] == pytest.approx(
        _expected_core_hours(job_id), abs=1e-6
    )
