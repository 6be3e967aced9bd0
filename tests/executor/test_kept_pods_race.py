"""Kept pods under parallel writers, on PostgreSQL: executors deleting kept pods (and
recording them: run rows locked, then the counter under the event-log lock) while others
report failures, two deciders decide them and the scheduler leases retries whose pods
collide with kept ones. No deadlock, no failed transaction, every deletion at the end of a
retention counted once, and no run left saying its pod is kept once it is gone."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from armada.core.config import parse_config
from armada.executor import pod_steps as agent_module
from armada.models import MetricCounter, Run
from armada.services.decisions import failures_decide
from armada.services.kept_pods import KEPT_PODS_DELETED_COUNTER
from armada.services.policies import policy_create
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from armada.services.submit import job_submit
from tests.conftest import job_file
from tests.executor_api import ApiAgent, api_agent
from tests.racing import (
    Race,
    deadlocks,
    each_more_than,
    exit_code_categories,
    fake_jobs,
    flaky_policy,
)

pytestmark = pytest.mark.django_db(transaction=True)

SECONDS = 12.0
ROUNDS = 4
EXECUTORS = ("east", "west")
# East keeps its pods longer than the race: its retried jobs' pods collide with them.
RETENTION = {"east": "1h", "west": "300ms"}
POLICY = flaky_policy("keeper")
# Both kept: a retried ``flaky`` failure's retry collides with its kept pod (deleted sooner,
# not counted); a ``user-error`` pod is kept until its retention ends (deleted, counted).
CATEGORIES = exit_code_categories("Retain")


def collided() -> bool:
    """A retry's pod creation met the pod kept for an earlier run, and its lease was
    returned saying so."""
    return Run.objects.filter(state="lease_returned", reason="PodCreationFailed").exists()


def _jobs(n: int) -> list[dict]:
    return fake_jobs(n, [{"exitCode": "3"}, {"exitCode": "1"}, {}, {"exitCode": "1"}])


def test_kept_pod_deletions_race_reports_and_decisions_without_deadlock(
    settings, queue, owner, admin_user, monkeypatch
):
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlock detection are PostgreSQL's")
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "cyclePeriod": "100ms",
                "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
            },
            "executorTimeout": "1h",
            "executors": [
                {
                    "id": name,
                    "keptPodRetention": RETENTION[name],
                    "trackedNodeLabels": ["zone"],
                    "nodes": [
                        {  # east is small: the jobs it cannot take go west
                            "name": f"{name}-n",
                            "count": 1 if name == "east" else 4,
                            "labels": {"zone": name},
                            "allocatable": {
                                "cpu": "1" if name == "east" else "8",
                                "memory": "32Gi",
                            },
                        }
                    ],
                    "errorCategories": CATEGORIES,
                }
                for name in EXECUTORS
            ],
        }
    )
    policy_cache.__init__()
    scheduler_state_reset()
    now = timezone.now()
    policy_create(actor=admin_user, data=POLICY, now=now)
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["keeper"]}, now=now)
    agents = [api_agent(config) for config in settings.ARMADA.executors]

    # Count what the agents found expired, to compare with the counter afterwards.
    expired_total = {name: 0 for name in EXECUTORS}
    guard = threading.Lock()
    real = agent_module.expired_kept_pods

    def counting(pods, active, retention, at):
        pods = list(pods)
        names = real(pods, active, retention, at)
        if names:  # an agent's pods are all its own: the first one's run names the executor
            run_id = next(p.run_id for p in pods if p.name == names[0])
            executor = Run.objects.values_list("executor", flat=True).get(id=run_id)
            with guard:
                expired_total[executor] += len(names)
        return names

    monkeypatch.setattr(agent_module, "expired_kept_pods", counting)
    # Flaky jobs held to east (its node's zone), whose kept pods outlive the race: each of
    # their retries meets its kept pod there.
    pinned = fake_jobs(0, [{"exitCode": "3"}], count=2)
    for item in pinned:
        item["podSpec"]["nodeSelector"] = {"zone": "east"}
    job_submit(actor=owner, data=job_file(jobs=pinned), now=timezone.now())
    before = deadlocks()

    def submitter(n: int) -> None:
        job_submit(actor=owner, data=job_file(jobs=_jobs(n)), now=timezone.now())

    def executor(a: ApiAgent) -> Callable[[int], None]:
        return lambda _: a.tick(timezone.now())

    def decide(_: int) -> None:
        failures_decide(now=timezone.now())

    def cycle(_: int) -> None:
        scheduler_cycle(now=timezone.now())

    steps = {
        "submit": submitter,
        **{f"executor-{a.config.id}": executor(a) for a in agents},
        "decide-1": decide,
        "decide-2": decide,
        "scheduler": cycle,
    }
    # Race until a retry has met its kept pod (the pinned jobs' first retries do, given a few
    # cycles; a busy machine fits fewer in a round), at most ROUNDS rounds.
    for _ in range(ROUNDS):
        race = Race()
        race.run(steps, SECONDS, until=each_more_than(3, steps))
        assert race.errors == []
        assert deadlocks() == before
        assert all(race.counts[name] > 3 for name in steps), sorted(race.counts.items())
        if collided():
            break

    # Let every kept pod outlive its retention, then tick once more: none is left.
    failures_decide(now=timezone.now())
    after = timezone.now() + timedelta(seconds=1)  # past every retention (the ticks' clock)
    for a in agents:
        a.tick(after)
    present = {(a.config.id, s.run_id) for a in agents for s in a.backend.poll(after)}
    kept_runs = list(Run.objects.filter(pod_kept_until__isnull=False))
    assert len(kept_runs) > 5
    for run in kept_runs:  # a run says its pod is kept exactly while the pod is there
        assert ((run.executor, run.id) in present) is (run.pod_kept_until > after), run.id
    counted = {
        row.labels["cluster"]: row.value
        for row in MetricCounter.objects.filter(name=KEPT_PODS_DELETED_COUNTER)
    }
    assert sum(expired_total.values()) > 0
    # Some retries met their kept pod (deleted sooner, not counted), and said so.
    assert collided()
    assert counted == {k: v for k, v in expired_total.items() if v}
