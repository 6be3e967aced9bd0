"""On PostgreSQL, the scheduler leases under its limits while submitters add jobs, the
executor runs and ends them and users cancel them, each in its own thread and connection.
At no moment (read in one snapshot by a watcher thread, and after every cycle) does the
queue hold more of its capped priority class than the cap, nor the pool more of its
floating resource than it has; no deadlock, no error; and the limits did hold jobs back."""

from __future__ import annotations

import random

import pytest
from django.db import connection, transaction
from django.utils import timezone

from armada.core.config import parse_config
from armada.models import Job, Run, SchedulingReason
from armada.services.errors import NotFound
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from tests.conftest import container, job_file
from tests.executor_api import api_agent
from tests.racing import FAKE, Race, deadlocks, each_more_than

LICENCE = "example.com/licence"
CAP_MILLI_CPU = 16_000  # a quarter of 64 cpu
LICENCES = 3_000  # 3, in milli-units
ACTIVE = ["leased", "pending", "running"]


def capped_system(settings) -> list:
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "priorityClasses": {
                    "armada-default": {
                        "priority": 1000,
                        "maximumResourceFractionPerQueue": {"cpu": 0.25},
                    },
                    "armada-preemptible": {"priority": 1000, "preemptible": True},
                },
                "floatingResources": [
                    {"name": LICENCE, "pools": [{"name": "default", "quantity": "3"}]}
                ],
            },
            "executorTimeout": "1h",
            "executors": [
                {
                    "id": "farm",
                    "nodes": [
                        {"name": "n", "count": 2, "allocatable": {"cpu": "32", "memory": "256Gi"}}
                    ],
                }
            ],
        }
    )
    scheduler_state_reset()
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(timezone.now())
    return [agent]


def held_now() -> tuple[int, int]:
    """(cpu of the queue's active armada-default runs, licences of all active runs), read
    in one snapshot."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        rows = list(
            Run.objects.filter(state__in=ACTIVE).values_list(
                "requests", "job__queue_id", "job__priority_class"
            )
        )
    cpu = sum(
        r.get("cpu", 0) for r, queue, pc in rows if queue == "demo" and pc == "armada-default"
    )
    return cpu, sum(r.get(LICENCE, 0) for r, _, _ in rows)


def check_limits() -> None:
    cpu, licences = held_now()
    assert cpu <= CAP_MILLI_CPU, f"the queue holds {cpu} milli-cpu of its capped class"
    assert licences <= LICENCES, f"active runs hold {licences} milli-licences"


@pytest.mark.django_db(transaction=True)
def test_limits_hold_while_jobs_come_go_and_are_cancelled(settings, queue, owner):
    if connection.vendor != "postgresql":
        pytest.skip("parallel clients and snapshots are PostgreSQL's")
    agents = capped_system(settings)
    before = deadlocks()
    # A job may end between being read and being cancelled: the cancel then finds none.
    race = Race(tolerated=(NotFound,))
    rng = random.Random(7)

    def submit(n: int) -> None:
        jobs = []
        for i in range(8):
            spec = container("2" if (n + i) % 4 == 0 else "1", "1Gi")
            if (n + i) % 3 == 0:
                for part in ("requests", "limits"):
                    spec["resources"][part][LICENCE] = "1"
            pod = {"containers": [spec]}
            if (n + i) % 5 == 0:
                pod["priorityClassName"] = "armada-preemptible"  # not capped
            duration = ["0s", "200ms", "1s"][(n + i) % 3]
            jobs.append({"annotations": {FAKE + "duration": duration}, "podSpec": pod})
        job_submit(actor=owner, data=job_file(jobs=jobs), now=timezone.now())
        race.stop.wait(0.05)

    def cycle(_: int) -> None:
        scheduler_cycle(now=timezone.now())
        check_limits()

    def tick(_: int) -> None:
        for agent in agents:
            agent.tick(timezone.now())

    def cancel(_: int) -> None:
        live = list(
            Job.objects.filter(state__in=["queued", "leased", "running"]).values_list(
                "id", flat=True
            )[:50]
        )
        if live:
            jobs_cancel(
                actor=owner,
                queue="demo",
                job_set="set-1",
                job_ids=rng.sample(live, min(3, len(live))),
                reason="",
                now=timezone.now(),
            )
        race.stop.wait(0.2)

    def watch(_: int) -> None:
        check_limits()
        race.stop.wait(0.02)

    steps = {"submit": submit, "scheduler": cycle, "executor": tick, "cancel": cancel}
    steps["watch"] = watch
    race.run(steps, 8, until=each_more_than(3, steps))
    assert race.errors == []
    assert deadlocks() == before
    assert all(race.counts[name] > 3 for name in steps), dict(race.counts)
    check_limits()
    reasons = set(SchedulingReason.objects.values_list("reason", flat=True))
    assert any("for priority class armada-default, limit 25%" in r for r in reasons) or any(
        r.startswith(f"floating resource {LICENCE}") for r in reasons
    ), reasons
    assert Run.objects.filter(job__priority_class="armada-preemptible").exists()
