"""Cancelling jobs: queued jobs end at once, running ones after their pod is stopped."""

from __future__ import annotations

import pytest

from armada.models import Event, Job, Run
from armada.services.errors import NotFound, PermissionDenied
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"


@pytest.fixture
def agent(settings):
    return fake_agent(settings, cpu="1", memory="8Gi")


def types_for(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


def test_cancelling_a_job_set_ends_queued_and_running_jobs(agent, queue, owner):
    running, waiting = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={FAKE + "duration": "1h"}), job()]),
        now=at(0),
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    assert Job.objects.get(id=running).state == "running"
    assert sorted(
        jobs_cancel(actor=owner, queue="demo", job_set="set-1", job_ids=None, reason="", now=at(3))
    ) == sorted([running, waiting])
    assert Job.objects.get(id=waiting).state == "cancelled"
    assert types_for(waiting)[-2:] == ["cancelling", "cancelled"]
    assert Job.objects.get(id=running).state == "running"  # until its pod is gone
    agent.tick(at(4))
    agent.tick(at(5))
    job_row = Job.objects.get(id=running)
    assert (job_row.state, job_row.terminal_reason, job_row.terminal_message) == (
        "cancelled",
        "Cancelled",
        "cancelled by olive",
    )
    assert Run.objects.get(job_id=running).state == "cancelled"
    assert types_for(running)[-2:] == ["cancelling", "cancelled"]
    assert agent.backend.poll(at(5)) == []
    scheduler_cycle(now=at(6))
    assert Run.objects.filter(job_id=waiting).count() == 0  # never leased


def test_cancel_needs_the_verb_and_names_missing_jobs(agent, queue, owner, member):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    with pytest.raises(PermissionDenied, match="cancel"):
        jobs_cancel(
            actor=member, queue="demo", job_set="set-1", job_ids=[job_id], reason="", now=at(1)
        )
    with pytest.raises(NotFound, match="nope"):
        jobs_cancel(
            actor=owner,
            queue="demo",
            job_set="set-1",
            job_ids=[job_id, "nope"],
            reason="",
            now=at(1),
        )
    assert Job.objects.get(id=job_id).state == "queued"


def test_cancel_through_the_api(agent, queue, owner, api_as):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    client = api_as(owner)
    response = client.post(
        "/api/v1/jobs/cancel",
        {"queue": "demo", "jobSetId": "set-1", "jobIds": [job_id]},
        format="json",
    )
    assert response.status_code == 200 and response.json()["jobIds"] == [job_id]
    assert Job.objects.get(id=job_id).state == "cancelled"
    again = client.post(
        "/api/v1/jobs/cancel",
        {"queue": "demo", "jobSetId": "set-1", "jobIds": [job_id]},
        format="json",
    )
    assert again.status_code == 404
