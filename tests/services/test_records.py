"""Scheduling records: why a queued job is pending, kept per job and per round."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.models import SchedulingReason, SchedulingRound
from armada.services import records
from armada.services.queues import queue_set_cordoned
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import api_agent

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh():
    records.forget_written()
    yield
    records.forget_written()


@pytest.fixture
def agent(settings):
    settings.ARMADA = parse_config(
        {
            "executors": [
                {
                    "id": "test",
                    "nodes": [{"name": "n", "allocatable": {"cpu": "2", "memory": "8Gi"}}],
                }
            ]
        }
    )
    a = api_agent(settings.ARMADA.executors[0])
    a.tick(at(0))
    return a


def test_a_job_that_does_not_fit_says_why_and_the_reason_goes_when_it_is_leased(
    agent, queue, owner, api
):
    big, small = job_submit(
        actor=owner, data=job_file(jobs=[job(cpu="4"), job(cpu="2")]), now=at(0)
    )
    scheduler_cycle(now=at(1))
    assert (
        SchedulingReason.objects.get(job_id=big).reason
        == "the job requests more than any node in the pool can offer"
    )
    assert not SchedulingReason.objects.filter(job_id=small).exists()
    body = api.get(f"/api/v1/jobs/{big}").json()
    assert body["schedulingReason"]["reason"].startswith("the job requests more")
    assert api.get(f"/api/v1/jobs/{small}").json()["schedulingReason"] is None

    [waiting] = job_submit(actor=owner, data=job_file(jobs=[job(cpu="2")]), now=at(1))
    scheduler_cycle(now=at(2))
    assert (
        SchedulingReason.objects.get(job_id=waiting).reason == "no node has enough free resources"
    )


def test_a_cordoned_queue_is_the_reason(agent, queue, owner, admin_user, client):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    queue_set_cordoned(actor=admin_user, name="demo", cordoned=True, now=at(0))
    scheduler_cycle(now=at(1))
    assert SchedulingReason.objects.get(job_id=job_id).reason == "queue is cordoned"
    client.force_login(admin_user)
    assert "queue is cordoned" in client.get(f"/jobs/{job_id}").content.decode()


def test_unchanged_reasons_are_not_rewritten_and_rounds_are_kept_for_a_while(agent, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[job(cpu="4")]), now=at(0))
    scheduler_cycle(now=at(1))
    first = SchedulingReason.objects.get(job_id=job_id)
    scheduler_cycle(now=at(2))
    assert SchedulingReason.objects.get(job_id=job_id).updated_at == first.updated_at
    for t in range(3, 3 + records.KEEP_ROUNDS + 5):
        scheduler_cycle(now=at(t))
    assert SchedulingRound.objects.count() == records.KEEP_ROUNDS
    latest = SchedulingRound.objects.first()
    assert (latest.considered, latest.leased, latest.unschedulable) == (1, 0, 1)
