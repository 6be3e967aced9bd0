"""A retried job is held by the scheduler's limits as a new job is: it waits, with the
limit's reason in its scheduling record and on its retry's decision trail (``waitingFor``),
and it is never failed for waiting; once room under the limit frees, it runs."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.models import Job
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from tests.conftest import at, container, job_file
from tests.executor_api import api_agent
from tests.services.decision_world import CATEGORIES, FAKE, runs

pytestmark = pytest.mark.django_db
CAP = "queue demo at 6.2% of cpu for priority class armada-default, limit 6.2%"


def configure(settings):
    """16 cpu; a queue may hold 1 cpu of armada-default (1/16)."""
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
                "priorityClasses": {
                    "armada-default": {
                        "priority": 1000,
                        "maximumResourceFractionPerQueue": {"cpu": 0.0625},
                    },
                    "armada-preemptible": {"priority": 1000, "preemptible": True},
                },
            },
            "executors": [
                {
                    "id": "test",
                    "nodes": [
                        {"name": "n", "count": 2, "allocatable": {"cpu": "8", "memory": "32Gi"}}
                    ],
                    "errorCategories": CATEGORIES,
                }
            ],
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(at(0))
    return agent


def submit(owner, priority: int, annotations: dict, now: float) -> str:
    spec = {
        "priority": priority,
        "annotations": {FAKE + k: v for k, v in annotations.items()},
        "podSpec": {"containers": [container("1", "1Gi")]},
    }
    return job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(now))[0]


def test_a_retry_waits_under_the_cap_and_runs_when_room_frees(
    settings, with_policy, owner, client, admin_user
):
    agent = configure(settings)
    flaky = submit(owner, 1, {"exitCode": "3", "duration": "0s"}, 0)
    scheduler_cycle(now=at(1))
    agent.tick(at(1.5))
    agent.tick(at(2))
    assert runs(flaky)[0].state == "failed"
    # A job of the same class, first in the queue's order (priority 0), takes the cap.
    long = submit(owner, 0, {"duration": "1h"}, 2)
    for t in range(3, 13):
        scheduler_cycle(now=at(t))
        agent.tick(at(t + 0.5))
    job = Job.objects.get(id=flaky)
    assert job.state == "queued"  # waiting, not failed
    assert [r.decision["decision"] for r in runs(flaky)] == ["retry"]
    client.force_login(admin_user)
    shown = client.get(f"/api/v1/jobs/{flaky}").json()
    assert shown["schedulingReason"]["reason"].startswith(CAP)
    [run] = shown["runs"]
    assert run["decision"]["decision"] == "retry"
    assert run["decision"]["waitingFor"]["reason"].startswith(CAP)
    html = client.get(f"/jobs/{flaky}/panel/runs").content.decode()
    assert "<dt>Waiting for</dt>" in html and CAP in html

    jobs_cancel(actor=owner, queue="demo", job_set="set-1", job_ids=[long], reason="", now=at(13))
    for t in range(14, 20):
        scheduler_cycle(now=at(t))
        agent.tick(at(t + 0.5))
    assert len(runs(flaky)) >= 2  # its retry ran once the cap had room
    assert "waitingFor" not in client.get(f"/api/v1/jobs/{flaky}").json()["runs"][0]["decision"]
