"""On PostgreSQL, executor-wide cancels and preempts race the scheduler leasing onto that
executor, the executor reporting from it and submitters, each in its own thread and
connection; then an executor is deleted while it and the scheduler keep going. No deadlock,
no error; every job ends in one state with its events; no run is asked to stop twice, and no
job the answer named is lost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from django.db import connection
from django.utils import timezone

from armada.core.config import parse_config
from armada.models import Event, Executor, Job, Run
from armada.services.executor_actions import (
    executor_delete,
    executor_jobs_cancel,
    executor_jobs_preempt,
)
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from armada.services.submit import job_submit
from tests.conftest import container, job_file
from tests.executor_api import api_agent
from tests.racing import Race, deadlocks, each_more_than

FAKE = "fake.armadaproject.io/"
TERMINAL_EVENT = {
    "cancelled": "cancelled",
    "preempted": "preempted",
    "succeeded": "succeeded",
    "failed": "failed",
}


def hot_system(settings):
    settings.ARMADA = parse_config(
        {
            "scheduling": {"cyclePeriod": "100ms"},
            "executorTimeout": "1h",
            "executors": [
                {
                    "id": name,
                    "nodes": [
                        {"name": "n", "count": 2, "allocatable": {"cpu": "8", "memory": "64Gi"}}
                    ],
                }
                for name in ("hot", "cool")
            ],
        }
    )
    scheduler_state_reset()
    agents = [api_agent(e) for e in settings.ARMADA.executors]
    for agent in agents:
        agent.tick(timezone.now())
    return agents


def submitter(owner, race: Race):
    def submit_some(n: int) -> None:
        durations = ["0s", "300ms", "1h"]
        jobs = [
            {
                "annotations": {FAKE + "duration": durations[(n + i) % 3]},
                "podSpec": {"containers": [container("500m", "1Gi")]},
            }
            for i in range(10)
        ]
        job_submit(actor=owner, data=job_file(jobs=jobs), now=timezone.now())
        race.stop.wait(0.05)

    return submit_some


def check_every_job_is_consistent() -> None:
    for job in Job.objects.all():
        types = list(
            Event.objects.filter(job_id=job.id).order_by("id").values_list("type", flat=True)
        )
        assert types[0] == "submitted"
        if job.state in TERMINAL_EVENT:
            assert types.count(TERMINAL_EVENT[job.state]) == 1, (job.id, job.state, types)
            ended = [t for t in types if t in ("cancelled", "preempted", "succeeded")]
            assert len(ended) <= 1, (job.id, types)
        else:
            assert job.state in ("queued", "leased", "pending", "running"), job.state
            assert not any(t in types for t in TERMINAL_EVENT.values()), (job.id, types)
        runs = list(Run.objects.filter(job_id=job.id))
        assert sum(r.state in ("leased", "pending", "running") for r in runs) <= 1
    # A run is asked to stop once at most, whoever asked and however often.
    stops = Counter(
        Event.objects.filter(type__in=["cancelling", "preempting"])
        .exclude(run_id="")
        .values_list("run_id", flat=True)
    )
    assert not [run for run, count in stops.items() if count > 1]


def cycle_step(_: int) -> None:
    scheduler_cycle(now=timezone.now())


def ticks(agents: list) -> Callable[[int], None]:
    """A race step: every agent takes a round."""

    def tick(_: int) -> None:
        for agent in agents:
            agent.tick(timezone.now())

    return tick


@pytest.mark.django_db(transaction=True)
def test_executor_cancels_race_leases_and_reports_without_deadlock(
    settings, queue, owner, admin_user
):
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlock detection are PostgreSQL's")
    agents = hot_system(settings)
    before = deadlocks()
    race = Race()
    answered: list[str] = []

    cycle, tick = cycle_step, ticks(agents)

    def cancel(_: int) -> None:
        answered.extend(executor_jobs_cancel(actor=admin_user, executor="hot", now=timezone.now()))
        race.stop.wait(0.1)

    def preempt(n: int) -> None:
        executor_jobs_preempt(
            actor=admin_user,
            executor="hot",
            queues=["demo"],
            priority_classes=["armada-default"] if n % 2 else None,
            now=timezone.now(),
        )
        race.stop.wait(0.15)

    steps = {
        "submit": submitter(owner, race),
        "scheduler": cycle,
        "executor": tick,
        "cancel": cancel,
        "preempt": preempt,
    }
    race.run(steps, 6, until=each_more_than(3, steps))
    assert race.errors == []
    assert deadlocks() == before
    assert all(race.counts[name] > 3 for name in steps), dict(race.counts)
    assert answered, "the executor cancels found jobs on the executor"

    for _ in range(5):  # drain: the executor reports every stop
        scheduler_cycle(now=timezone.now())
        tick(0)
    check_every_job_is_consistent()
    cancelled = set(Job.objects.filter(state="cancelled").values_list("id", flat=True))
    assert cancelled and cancelled <= set(answered)
    # Nothing the answers named is lost: each such job was stopped, or ended on its own.
    for job in Job.objects.filter(id__in=set(answered)):
        assert job.state in ("cancelled", "preempted", "succeeded", "failed"), job.state
    # The other executor's runs were never asked to stop.
    assert not Run.objects.filter(executor="cool", stop_requested_at__isnull=False).exists()


@pytest.mark.django_db(transaction=True)
def test_deleting_an_executor_while_it_reports_and_the_scheduler_leases(
    settings, queue, owner, admin_user
):
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlock detection are PostgreSQL's")
    agents = hot_system(settings)
    before = deadlocks()
    race = Race()
    deleted: list[dict] = []

    cycle, tick = cycle_step, ticks(agents)

    def delete(n: int) -> None:
        # Let the executor run jobs for a while, then retire it, once.
        if n == 0:
            race.stop.wait(3)
            if not race.stop.is_set():
                deleted.append(
                    executor_delete(actor=admin_user, executor_id="hot", now=timezone.now())
                )
        race.stop.wait(0.2)

    steps = {"submit": submitter(owner, race), "scheduler": cycle, "executor": tick}
    steps["delete"] = delete
    race.run(steps, 10)
    assert race.errors == []
    assert deadlocks() == before
    assert len(deleted) == 1
    assert not Executor.objects.filter(id="hot").exists()

    for _ in range(3):
        scheduler_cycle(now=timezone.now())
        tick(0)
    check_every_job_is_consistent()
    # Its runs that were active ended: by lease expiry, or by a report batch that was already
    # being applied when the delete came (reports do not wait for the executor's row), so
    # the expired ones may be fewer than the runs the delete counted; nothing is left active.
    assert deleted[0]["activeRuns"] > 0
    assert Run.objects.filter(executor="hot", state="lease_expired").exists()
    assert not Run.objects.filter(executor="hot", state__in=["leased", "pending", "running"])
