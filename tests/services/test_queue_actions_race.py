"""services.queue_actions on PostgreSQL with real parallel clients: cancels across queues while
submits, cordons, preemptions, scheduling cycles and an executor run at once never deadlock,
lose a job or cancel one twice."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from django.db import connection
from django.utils import timezone

from armada.core.config import parse_config
from armada.models import Event, Job
from armada.services.errors import ValidationFailed
from armada.services.queue_actions import (
    queues_cancel,
    queues_preempt,
    queues_set_cordoned,
)
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from armada.services.submit import job_submit
from tests.conftest import container, job_file
from tests.executor_api import api_agent
from tests.racing import Race, deadlocks, each_more_than
from tests.services.test_queue_actions import labelled

# --- at once, on PostgreSQL -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_cancels_across_queues_beside_submits_cordons_and_scheduling_never_deadlock_or_lose_a_job(
    settings, admin_user, owner
):
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlock detection are PostgreSQL's")
    settings.ARMADA = parse_config(
        {
            "scheduling": {"cyclePeriod": "100ms"},
            "executorTimeout": "1h",
            "executors": [
                {
                    "id": "busy",
                    "nodes": [
                        {"name": "n", "count": 4, "allocatable": {"cpu": "8", "memory": "32Gi"}}
                    ],
                }
            ],
        }
    )
    scheduler_state_reset()
    names_ = [f"team-{i}" for i in range(4)]
    for i, name in enumerate(names_):
        queue_create(
            actor=admin_user,
            data={"name": name, "owners": ["olive"], "labels": {"team": "x", "half": str(i % 2)}},
            now=timezone.now(),
        )
    agent = api_agent(settings.ARMADA.executors[0])
    before = deadlocks()
    race = Race()
    submitted: list[str] = []
    cancelled: dict[str, int] = {}

    def submitter(k: int) -> Callable[[int], None]:
        def step(n: int) -> None:
            jobs = [
                {
                    "priority": 0,
                    "annotations": {
                        "fake.armadaproject.io/duration": ["0s", "1s", "1h"][(n + i) % 3]
                    },
                    "podSpec": {"containers": [container("100m", "64Mi")]},
                }
                for i in range(10)
            ]
            data = job_file(queue=names_[(k + n) % 4], job_set=f"set-{k}", jobs=jobs)
            try:
                submitted.extend(job_submit(actor=owner, data=data, now=timezone.now()))
            except ValidationFailed as exc:
                assert "cordoned" in str(exc), exc  # the only refusal expected

        return step

    def cordoner(n: int) -> None:
        queues_set_cordoned(
            actor=admin_user,
            selection=labelled(f"half={n % 2}"),
            cordoned=n % 4 < 2,
            now=timezone.now(),
        )
        time.sleep(0.05)

    def canceller(n: int) -> None:
        states = [["queued"], ["running", "pending", "leased"], None][n % 3]
        result = queues_cancel(
            actor=owner, selection=labelled("team=x"), states=states, now=timezone.now()
        )
        for part in result:
            for job_id in part.job_ids:
                cancelled[job_id] = cancelled.get(job_id, 0) + 1
        time.sleep(0.1)

    def preempter(n: int) -> None:
        queues_preempt(actor=owner, selection=labelled(f"half={n % 2}"), now=timezone.now())
        time.sleep(0.3)

    steps = {f"submit-{k}": submitter(k) for k in range(2)} | {
        "cordon": cordoner,
        "cancel": canceller,
        "preempt": preempter,
        "scheduler": lambda _: scheduler_cycle(now=timezone.now()),
        "executor": lambda _: agent.tick(timezone.now()),
    }
    race.run(steps, seconds=15.0, until=each_more_than(3, steps))

    assert race.errors == []
    assert deadlocks() == before
    assert all(race.counts[name] > 3 for name in steps), sorted(race.counts.items())
    # Nothing lost: every job a submit answered with is stored, with its submitted event once.
    assert len(submitted) == len(set(submitted)) > 0
    assert Job.objects.filter(id__in=submitted).count() == len(submitted)
    assert Event.objects.filter(type="submitted").count() == len(submitted)
    # Every cancelled job was cancelled once, and was in a cancel's answer.
    final = queues_cancel(actor=owner, selection=labelled("team=x"), now=timezone.now())
    queued_left = [
        j for p in final for j in p.job_ids if Job.objects.get(id=j).state == "cancelled"
    ]
    done = set(Job.objects.filter(state="cancelled").values_list("id", flat=True))
    assert done <= set(cancelled) | set(queued_left)
    per_job = Event.objects.filter(type="cancelled").values_list("job_id", flat=True)
    assert len(list(per_job)) == len(set(per_job)) == len(done)
    assert len(done) > 0 and Event.objects.filter(type="cancelling").exists()
    assert not Job.objects.filter(state="queued").exists()
