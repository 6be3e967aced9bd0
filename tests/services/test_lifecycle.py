"""Scheduler cycle and executor ticks with the fake backend, with time passed in."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.models import Event, Job, Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import api_agent

pytestmark = pytest.mark.django_db

FAKE = "fake.armadaproject.io/"


def executor_config(nodes: int = 1, cpu: str = "4", memory: str = "8Gi", executor_id: str = "test"):
    data = {
        "executors": [
            {
                "id": executor_id,
                "nodes": [
                    {"name": "n", "count": nodes, "allocatable": {"cpu": cpu, "memory": memory}}
                ],
            }
        ]
    }
    return parse_config(data).executors[0]


def types_for(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


def test_a_job_travels_from_queued_to_succeeded(queue, owner):
    agent = api_agent(executor_config())
    agent.tick(at(0))  # registers the executor and its node
    [job_id] = job_submit(
        actor=owner, data=job_file(jobs=[job(annotations={FAKE + "duration": "5s"})]), now=at(0)
    )

    report = scheduler_cycle(now=at(1))
    assert report.leased == 1
    run = Run.objects.get(job_id=job_id)
    assert (run.executor, run.node, run.state, run.pod_name) == (
        "test",
        "n",
        "leased",
        f"armada-{job_id}-0",
    )
    assert Job.objects.get(id=job_id).state == "leased"

    agent.tick(at(2))  # creates the pod: pending and (with no pending delay) running
    assert Job.objects.get(id=job_id).state == "running"
    agent.tick(at(4))  # still running: nothing new
    assert types_for(job_id) == ["submitted", "queued", "leased", "pending", "running"]

    agent.tick(at(8))
    job_row = Job.objects.get(id=job_id)
    run.refresh_from_db()
    assert job_row.state == "succeeded"
    assert run.state == "succeeded" and run.exit_code == 0
    assert run.finished_at == at(7)
    assert types_for(job_id) == ["submitted", "queued", "leased", "pending", "running", "succeeded"]


def test_exit_code_one_fails_the_job_with_the_exit_code_in_the_event(queue, owner):
    agent = api_agent(executor_config())
    agent.tick(at(0))
    annotations = {
        FAKE + "duration": "1s",
        FAKE + "exitCode": "1",
        FAKE + "terminationMessage": "boom",
    }
    [job_id] = job_submit(
        actor=owner, data=job_file(jobs=[job(annotations=annotations)]), now=at(0)
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    agent.tick(at(10))
    scheduler_cycle(now=at(11))  # the scheduler decides what the failure means

    job_row = Job.objects.get(id=job_id)
    assert job_row.state == "failed"
    assert job_row.failure_count == 1
    failed = Event.objects.get(job_id=job_id, type="failed")
    assert failed.payload["exitCode"] == 1
    assert failed.payload["exitCodes"] == {"main": 1}
    assert failed.payload["retryable"] is False
    assert failed.payload["message"] == "boom"
    assert failed.payload["nodeName"] == "n" and failed.payload["clusterId"] == "test"
    assert failed.payload["podName"] == f"armada-{job_id}-0"


def test_pod_that_starts_and_ends_between_ticks_reports_every_phase(queue, owner):
    agent = api_agent(executor_config())
    agent.tick(at(0))
    annotations = {FAKE + "pendingDuration": "1s", FAKE + "duration": "1s"}
    [job_id] = job_submit(
        actor=owner, data=job_file(jobs=[job(annotations=annotations)]), now=at(0)
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    assert Job.objects.get(id=job_id).state == "pending"
    agent.tick(at(30))
    assert types_for(job_id) == ["submitted", "queued", "leased", "pending", "running", "succeeded"]
    created = list(
        Event.objects.filter(job_id=job_id).order_by("id").values_list("created", flat=True)
    )
    assert created[-2:] == [at(3), at(4)]


def test_oom_killed_pod_reports_the_condition(queue, owner):
    agent = api_agent(executor_config())
    agent.tick(at(0))
    [job_id] = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={FAKE + "condition": "OOMKilled"})]),
        now=at(0),
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    agent.tick(at(10))
    run = Run.objects.get(job_id=job_id)
    assert (run.state, run.reason, run.exit_code) == ("failed", "OOMKilled", 137)


def test_jobs_beyond_capacity_wait_and_start_when_room_frees(queue, owner):
    agent = api_agent(executor_config(nodes=1, cpu="2", memory="4Gi"))
    agent.tick(at(0))
    ids = job_submit(
        actor=owner,
        data=job_file(jobs=[job(cpu="1", annotations={FAKE + "duration": "2s"}) for _ in range(3)]),
        now=at(0),
    )
    assert scheduler_cycle(now=at(1)).leased == 2
    assert Job.objects.get(id=ids[2]).state == "queued"
    assert scheduler_cycle(now=at(1.5)).leased == 0  # still no room
    agent.tick(at(2))
    agent.tick(at(5))  # both finished, resources released
    assert scheduler_cycle(now=at(6)).leased == 1
    assert Job.objects.get(id=ids[2]).state == "leased"


def test_no_leases_on_an_executor_whose_heartbeat_is_stale(queue, owner, settings):
    agent = api_agent(executor_config())
    agent.tick(at(0))
    job_submit(actor=owner, data=job_file(), now=at(0))
    timeout = settings.ARMADA.executor_timeout
    assert scheduler_cycle(now=at(timeout + 1)).leased == 0
    agent.tick(at(timeout + 2))
    assert scheduler_cycle(now=at(timeout + 3)).leased == 1


def test_repeated_reports_are_ignored(queue, owner):
    from armada.core.reports import RunReport
    from armada.core.states import RunState
    from armada.services.run_reports import runs_apply_reports

    agent = api_agent(executor_config())
    agent.tick(at(0))
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    scheduler_cycle(now=at(1))
    run = Run.objects.get(job_id=job_id)
    reports = [
        RunReport(run.id, RunState.PENDING, at(2)),
        RunReport(run.id, RunState.SUCCEEDED, at(3), exit_code=0),
    ]
    assert runs_apply_reports(executor_id="test", reports=reports, now=at(3)) == 2
    assert runs_apply_reports(executor_id="test", reports=reports, now=at(4)) == 0
    assert runs_apply_reports(executor_id="other", reports=reports, now=at(4)) == 0
    assert types_for(job_id).count("succeeded") == 1


def test_a_run_whose_pod_a_restarted_executor_does_not_have_expires_after_the_timeout(queue, owner):
    """A fake cluster dies with its executor: the new process holds nothing, so the run it
    had reported running is missing from its rounds, and is expired (a genuine failure)
    once it has been missing for executorTimeout, not before."""
    agent = api_agent(executor_config())
    agent.tick(at(0))
    [job_id] = job_submit(
        actor=owner, data=job_file(jobs=[job(annotations={FAKE + "duration": "600s"})]), now=at(0)
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    assert Run.objects.get(job_id=job_id).state == "running"
    restarted = api_agent(executor_config())  # a new process: the fake cluster is gone
    restarted.tick(at(3))
    restarted.tick(at(62))  # missing for 59 s: not yet
    assert Run.objects.get(job_id=job_id).state == "running"
    restarted.tick(at(64))
    scheduler_cycle(now=at(65))
    run = Run.objects.filter(job_id=job_id).order_by("leased_at").first()
    assert (run.state, run.failure_category, run.failure_subcategory) == (
        "lease_expired",
        "internal",
        "lease-expired",
    )
    assert "did not hold run" in run.message
    assert types_for(job_id).count("lease_expired") == 1
