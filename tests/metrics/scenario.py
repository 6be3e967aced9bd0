"""A small scenario after which Armada's labelled series exist: two queues, jobs queued,
leased, running, succeeded, failed (and decided) and cancelled, scheduling cycles and
executor rounds."""

from __future__ import annotations

from django.utils import timezone

from armada.core.config import parse_config
from armada.models import Job, Queue
from armada.services.policies import policy_create
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from tests.conftest import container, job_file
from tests.executor_api import ApiAgent, api_agent
from tests.waiting import wait_until

FAKE = "fake.armadaproject.io/"


def configure(settings, cpu: str = "4") -> ApiAgent:
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
                "priorityClasses": {
                    "batch": {"priority": 100, "preemptible": True},
                    "armada-default": {"priority": 500, "preemptible": False},
                },
            },
            "executors": [
                {
                    "id": "test",
                    "nodes": [{"name": "n1", "allocatable": {"cpu": cpu, "memory": "64Gi"}}],
                }
            ],
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(timezone.now())
    return agent


def spec(cpu: str = "1", *, duration: str = "1h", exit_code: int | None = None) -> dict:
    annotations = {FAKE + "duration": duration}
    if exit_code is not None:
        annotations[FAKE + "exitCode"] = str(exit_code)
    return {
        "annotations": annotations,
        "podSpec": {"priorityClassName": "armada-default", "containers": [container(cpu, "1Gi")]},
    }


def submit(owner, *specs: dict, queue: str = "demo") -> list[str]:
    return job_submit(actor=owner, data=job_file(queue=queue, jobs=list(specs)), now=timezone.now())


def step(agent: ApiAgent) -> None:
    scheduler_cycle(now=timezone.now())
    agent.tick(timezone.now())


def run_scenario(settings, owner, admin_user) -> ApiAgent:
    """Needs the ``queue`` fixture's queue ``demo``; adds queue ``other``."""
    agent = configure(settings, cpu="4")
    queue_create(
        actor=admin_user,
        data={"name": "other", "owners": [owner.username], "priorityFactor": 2},
        now=timezone.now(),
    )
    policy = {"name": "ml", "retryLimit": 2, "defaultAction": "Fail", "rules": []}
    policy_create(
        actor=admin_user,
        data={"apiVersion": "armadaproject.io/v1beta1", "kind": "RetryPolicy", **policy},
        now=timezone.now(),
    )
    Queue.objects.filter(name="demo").update(retry_policies=["ml"], labels={"team": "ml"})
    submit(owner, spec("1"), spec("1", duration="0s"), spec("1", duration="0s", exit_code=1))
    submit(owner, spec("1"), spec("3"), queue="other")  # the 3-cpu job stays queued
    [to_cancel] = submit(owner, spec("1"), queue="other")

    def states() -> set[str]:
        step(agent)
        return set(Job.objects.values_list("state", flat=True))

    wait_until(
        "jobs in every state",
        lambda: (
            {"succeeded", "failed", "running", "queued"} <= states()
            and Job.objects.get(id=to_cancel).state == "running"
        ),
    )
    jobs_cancel(
        actor=owner,
        queue="other",
        job_set="set-1",
        job_ids=[to_cancel],
        reason="t",
        now=timezone.now(),
    )
    wait_until("the cancel", lambda: "cancelled" in states())
    step(agent)
    return agent
