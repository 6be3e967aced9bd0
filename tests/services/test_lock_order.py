"""Every writer at once, on PostgreSQL: no deadlock and no failed transaction.

Four submitters post batches of failing and succeeding jobs to one queue while, in other
threads, the scheduler runs its cycles (leases, lease expiry, retry decisions), an executor
reports its pods, a user cancels and reprioritizes job sets and preempts running jobs, and
the decision counters are reset. Each thread uses its own connection, as the web, scheduler
and executor processes do. The lock order that makes this safe is in docs/concurrency.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection
from django.utils import timezone

from armada.core.config import parse_config
from armada.models import Job, SchedulingRound
from armada.services import latest_run
from armada.services.counters import counters_reset_if_due
from armada.services.decisions import DECISIONS_COUNTER
from armada.services.errors import Conflict, NotFound
from armada.services.lease_pipeline import lease_pipeline_drain
from armada.services.policies import policy_create
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from armada.services.records import KEEP_ROUNDS
from armada.services.reprioritize import jobs_reprioritize
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from armada.services.stopping import job_preempt, jobs_cancel, jobs_cancel_by_state
from armada.services.submit import job_submit
from tests.conftest import container, job_file
from tests.executor_api import api_agent
from tests.racing import FAKE, Race, deadlocks, each_more_than, exit_code_categories, flaky_policy

pytestmark = pytest.mark.django_db(transaction=True)

SECONDS = 20.0
JOB_SETS = [f"set-{i}" for i in range(4)]
POLICY = flaky_policy("busy")
CATEGORIES = exit_code_categories("Delete")


def _batch(n: int) -> list[dict]:
    outcomes = [{"exitCode": "3"}, {"exitCode": "1"}, {}, {"duration": "2s"}]
    return [
        {
            "priority": i % 3,
            "annotations": {FAKE + k: v for k, v in outcomes[(n + i) % 4].items()}
            | {FAKE + "duration": outcomes[(n + i) % 4].get("duration", "0s")},
            "podSpec": {
                "priorityClassName": "armada-preemptible",
                "containers": [container("100m", "64Mi")],
            },
        }
        for i in range(20)
    ]


@pytest.mark.parametrize("write_behind", [False, True], ids=["in-cycle", "write-behind"])
def test_submits_decisions_cancels_and_reprioritizes_at_once_never_deadlock(
    settings, queue, owner, admin_user, caplog, write_behind
):
    """With ``write_behind`` the scheduler's writer and recorder threads (each with its own
    connection) write beside the cycle's own: the cycles must all run (a failed write makes
    the next one report it did not) and no write or record fail."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlock detection are PostgreSQL's")
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "cyclePeriod": "100ms",
                "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
            },
            "executorTimeout": "1h",
            "metrics": {"jobStateMetricsResetInterval": "1s"},
            "executors": [
                {
                    "id": "busy",
                    "nodes": [
                        {"name": "n", "count": 8, "allocatable": {"cpu": "8", "memory": "32Gi"}}
                    ],
                    "errorCategories": CATEGORIES,
                }
            ],
        }
    )
    policy_cache.__init__()
    scheduler_state_reset()
    policy_create(actor=admin_user, data=POLICY, now=timezone.now())
    queue_update(
        actor=admin_user, name="demo", data={"retryPolicies": ["busy"]}, now=timezone.now()
    )
    agent = api_agent(settings.ARMADA.executors[0])
    before = deadlocks()
    # NotFound, Conflict: nothing left to cancel or preempt in that set, not a lock problem.
    race = Race(tolerated=(NotFound, Conflict))

    def submitter(k: int) -> Callable[[int], None]:
        def step(n: int) -> None:
            data = job_file(job_set=JOB_SETS[(k + n) % len(JOB_SETS)], jobs=_batch(n))
            job_submit(actor=owner, data=data, now=timezone.now())

        return step

    def cycle(_: int) -> None:
        report = scheduler_cycle(now=timezone.now(), write_behind=write_behind)
        assert report.ran, "a cycle did not run: the writes before it failed"

    def tick(_: int) -> None:
        agent.tick(timezone.now())

    def cancel(n: int) -> None:
        if n % 5 == 4:
            jobs_cancel_by_state(
                actor=admin_user, queue="demo", states=["queued"], reason="", now=timezone.now()
            )
        else:
            jobs_cancel(
                actor=admin_user,
                queue="demo",
                job_set=JOB_SETS[n % len(JOB_SETS)],
                job_ids=None,
                reason="",
                now=timezone.now(),
            )
        time.sleep(0.3)

    def reprioritize(n: int) -> None:
        jobs_reprioritize(
            actor=admin_user,
            queue="demo",
            job_set=JOB_SETS[(n + 1) % len(JOB_SETS)],
            job_ids=None,
            priority=n % 5,
            now=timezone.now(),
        )

    def preempt(_: int) -> None:
        running = list(Job.objects.filter(state="running").values_list("id", flat=True)[:3])
        for job_id in running:
            job_preempt(actor=admin_user, job_id=job_id, reason="", now=timezone.now())
        time.sleep(0.2)

    def reset(_: int) -> None:
        counters_reset_if_due(names=[DECISIONS_COUNTER], now=timezone.now(), interval_seconds=1)
        time.sleep(0.5)

    steps = {f"submit-{k}": submitter(k) for k in range(4)} | {
        "scheduler": cycle,
        "executor": tick,
        "cancel": cancel,
        "reprioritize": reprioritize,
        "preempt": preempt,
        "reset": reset,
    }
    race.run(steps, SECONDS, until=each_more_than(3, steps))
    lease_pipeline_drain()

    assert race.errors == []
    failed = [r.getMessage() for r in caplog.records if "scheduling cycle's" in r.getMessage()]
    assert failed == []
    # Every cycle's round was recorded (the last KEEP_ROUNDS of them are kept).
    assert SchedulingRound.objects.count() >= min(race.counts["scheduler"], KEEP_ROUNDS)
    assert deadlocks() == before
    # Every kind of work really ran, and ran often.
    assert all(race.counts[name] > 3 for name in steps), sorted(race.counts.items())
    assert Job.objects.filter(failure_count__gt=0).exists()  # failures were decided
    assert Job.objects.filter(state="cancelled").exists()
    # Every job's copy of its latest run is that run's, however the writers interleaved.
    assert latest_run.drifted() == []
    assert Job.objects.exclude(latest_decision="").exists()


def test_the_counter_reset_mark_is_made_once_when_processes_race(settings):
    from armada.models import LeaderLease

    if connection.vendor != "postgresql":
        pytest.skip("needs concurrent writers")
    barrier = threading.Barrier(6)  # the pool holds 8: the test keeps one
    errors: list[BaseException] = []

    def race() -> None:
        try:
            connection.ensure_connection()  # so that all six start their check together
            barrier.wait(timeout=30)
            counters_reset_if_due(
                names=[DECISIONS_COUNTER], now=timezone.now(), interval_seconds=60
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=race) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert LeaderLease.objects.filter(name="metrics-reset").count() == 1
