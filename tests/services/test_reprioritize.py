"""Reprioritizing changes the order in which a queue's waiting jobs are leased."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.models import Event, Job
from armada.services.errors import NotFound, PermissionDenied
from armada.services.reprioritize import jobs_reprioritize
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import api_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_slot(settings):
    settings.ARMADA = parse_config(
        {
            "executors": [
                {
                    "id": "test",
                    "nodes": [{"name": "n", "allocatable": {"cpu": "1", "memory": "8Gi"}}],
                }
            ]
        }
    )
    api_agent(settings.ARMADA.executors[0]).tick(at(0))


def test_a_reprioritized_job_goes_first(one_slot, queue, owner):
    first, second = job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=at(0))
    assert jobs_reprioritize(
        actor=owner, queue="demo", job_set="set-1", priority=5, job_ids=[first], now=at(0)
    ) == [first]
    scheduler_cycle(now=at(1))
    assert Job.objects.get(id=second).state == "leased"
    assert Job.objects.get(id=first).state == "queued"
    types = list(Event.objects.filter(job_id=first).values_list("type", flat=True))
    assert types[-2:] == ["reprioritizing", "reprioritized"]


def test_a_whole_job_set_and_its_refusals(one_slot, queue, owner, member):
    ids = job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=at(0))
    assert sorted(
        jobs_reprioritize(
            actor=owner, queue="demo", job_set="set-1", priority=3, job_ids=None, now=at(0)
        )
    ) == sorted(ids)
    assert set(Job.objects.values_list("priority", flat=True)) == {3}
    with pytest.raises(PermissionDenied, match="reprioritize"):
        jobs_reprioritize(
            actor=member, queue="demo", job_set="set-1", priority=1, job_ids=None, now=at(0)
        )
    with pytest.raises(NotFound, match="nope"):
        jobs_reprioritize(
            actor=owner, queue="demo", job_set="set-1", priority=1, job_ids=["nope"], now=at(0)
        )
    assert set(Job.objects.values_list("priority", flat=True)) == {3}


def test_reprioritize_through_the_api(one_slot, queue, owner, api_as):
    ids = job_submit(actor=owner, data=job_file(jobs=[job()]), now=at(0))
    client = api_as(owner)
    response = client.post(
        "/api/v1/jobs/reprioritize",
        {"queue": "demo", "jobSetId": "set-1", "priority": 7},
        format="json",
    )
    assert response.status_code == 200 and response.json()["jobIds"] == ids
    bad = client.post(
        "/api/v1/jobs/reprioritize",
        {"queue": "demo", "jobSetId": "set-1", "priority": -1},
        format="json",
    )
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "priority"
    assert Job.objects.get().priority == 7
