"""Limits on a cycle's leases: jobs per round, the lease rate (a token bucket paced by the
clock passed in) and what a job that a limited round never reached is told; and Armada's
limits (``services.scheduler_limits``): a priority class's cap per queue, per-queue rate
buckets, the round's fraction and floating resources."""

from __future__ import annotations

import json

import pytest

from armada.core.snapshot import REASON_NO_NODES
from armada.models import Job
from armada.services.queues import queue_create
from armada.services.records import NOT_REACHED, pending_reason
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db


def setup(settings, **scheduling) -> None:
    setup_agent(settings, **scheduling)


def setup_agent(settings, **scheduling):
    return fake_agent(settings, cpu="64", memory="256Gi", scheduling=scheduling)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def leased() -> int:
    return Job.objects.filter(state="leased").count()


# (seconds after the previous cycle, leases that cycle may make): rate 2/s, burst 3.
RATE_STEPS = [(0.0, 3), (0.5, 1), (0.1, 0), (0.6, 1), (60.0, 3)]


def test_the_lease_rate_limit_paces_cycles_by_the_clock(settings, queue, owner):
    setup(settings, maximumSchedulingRate=2, maximumSchedulingBurst=3)
    job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(20)]), now=at(0))
    clock = Clock()
    total = 0
    for i, (wait, expected) in enumerate(RATE_STEPS):
        clock.now += wait
        report = scheduler_cycle(now=at(1 + i), clock=clock)
        total += expected
        assert (report.leased, leased()) == (expected, total), f"step {i}"


def test_without_a_rate_only_the_round_limit_applies(settings, queue, owner):
    setup(settings, maximumJobsPerRound=4)
    job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(10)]), now=at(0))
    clock = Clock()
    assert [scheduler_cycle(now=at(1 + i), clock=clock).leased for i in range(3)] == [4, 4, 2]


def test_a_job_the_limited_round_never_reached_is_told_so(settings, queue, owner):
    setup(settings, maximumJobsPerRound=2)
    ids = job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(5)]), now=at(0))
    before = Job.objects.get(id=ids[-1])
    assert pending_reason(before) is None  # no round has run since it was queued
    report = scheduler_cycle(now=at(1))
    assert report.leased == 2
    assert report.limit_reached
    last = Job.objects.get(id=ids[-1])
    assert pending_reason(last)["reason"] == NOT_REACHED
    assert pending_reason(Job.objects.get(id=ids[0])) is None  # leased: not pending


# --- Armada's limits (``core.limits``) through the cycle ------------------------------------

PREEMPTIBLE = {
    "armada-default": {"priority": 1000, "preemptible": False},
    "armada-preemptible": {
        "priority": 1000,
        "preemptible": True,
        "maximumResourceFractionPerQueue": {"cpu": 0.25},
    },
}


def submit(owner, n: int, queue: str = "demo", cpu: str = "1", pc: str = "") -> list[str]:
    jobs = [job(cpu=cpu) for _ in range(n)]
    for spec in jobs:
        if pc:
            spec["podSpec"]["priorityClassName"] = pc
    return job_submit(actor=owner, data=job_file(queue=queue, jobs=jobs), now=at(0))


def reason_of(job_id: str) -> str:
    found = pending_reason(Job.objects.get(id=job_id))
    return found["reason"] if found else ""


def test_a_priority_class_caps_what_one_queue_holds(settings, queue, owner):
    """64 cpu, a quarter per queue for armada-preemptible: four 4-cpu jobs, then the cap;
    the queue's armada-default jobs are not held by it."""
    setup(settings, priorityClasses=PREEMPTIBLE)
    capped = submit(owner, 6, cpu="4", pc="armada-preemptible")
    free = submit(owner, 2, cpu="4", pc="armada-default")
    scheduler_cycle(now=at(1))
    leased_ids = set(Job.objects.filter(state="leased").values_list("id", flat=True))
    assert leased_ids == set(capped[:4]) | set(free)
    assert reason_of(capped[4]) == (
        "queue demo at 25% of cpu for priority class armada-preemptible, limit 25%"
        " (this job would take it to 31.2%)"
    )
    # The next cycle changes nothing: the cap counts the leased runs.
    assert scheduler_cycle(now=at(2)).leased == 0


def test_each_queue_has_its_own_rate_bucket(settings, queue, owner, admin_user):
    """maximumPerQueueSchedulingRate 1/s, burst 2: each queue leases 2 at once, then 1 a
    second of the clock; the held job is told its queue's rate holds it."""
    setup(settings, maximumPerQueueSchedulingRate=1, maximumPerQueueSchedulingBurst=2)
    queue_create(actor=admin_user, data={"name": "other", "owners": [owner.username]}, now=at(0))
    mine = submit(owner, 5)
    others = submit(owner, 5, queue="other")
    clock = Clock()
    assert scheduler_cycle(now=at(1), clock=clock).leased == 4
    assert reason_of(mine[2]).startswith("queue demo scheduling rate limit exceeded")
    assert reason_of(others[2]).startswith("queue other scheduling rate limit exceeded")
    clock.now += 0.5
    assert scheduler_cycle(now=at(2), clock=clock).leased == 0
    clock.now += 0.5
    assert scheduler_cycle(now=at(3), clock=clock).leased == 2
    assert Job.objects.filter(id__in=[mine[2], others[2]], state="leased").count() == 2


def test_a_round_hands_out_at_most_its_fraction_plus_one_job(settings, queue, owner):
    """maximumResourceFractionToSchedule cpu 0.1 of 64 (6.4 cpu) with 1-cpu jobs: 7 a round
    (the seventh takes it over; then the round stops), as Armada's round does."""
    setup(settings, maximumResourceFractionToSchedule={"cpu": 0.1})
    ids = submit(owner, 20)
    assert scheduler_cycle(now=at(1)).leased == 7
    assert "limit 10% per round" in reason_of(ids[7])
    assert scheduler_cycle(now=at(2)).leased == 7


def test_a_pools_own_round_fraction_replaces_the_default(settings, queue, owner):
    setup(
        settings,
        maximumResourceFractionToSchedule={"cpu": 0.1},
        maximumResourceFractionToScheduleByPool={"default": {"memory": 0.5}},
    )
    submit(owner, 20)
    assert scheduler_cycle(now=at(1)).leased == 20


FLOATING = [{"name": "example.com/licences", "pools": [{"name": "default", "quantity": "2"}]}]


def licensed_job(n: str = "1") -> dict:
    spec = job()
    for part in ("requests", "limits"):
        spec["podSpec"]["containers"][0]["resources"][part]["example.com/licences"] = n
    return spec


def test_floating_resources_are_shared_by_the_pool_and_not_sent_to_nodes(settings, queue, owner):
    """Two licences in the pool: two jobs asking one each are leased, the third waits with
    the reason; the pods the executor is given do not ask for licences (no node has them)."""
    from armada.models import Run
    from armada.services.executor_rounds import _lease_rows

    setup(settings, floatingResources=FLOATING)
    ids = job_submit(actor=owner, data=job_file(jobs=[licensed_job() for _ in range(3)]), now=at(0))
    assert scheduler_cycle(now=at(1)).leased == 2
    assert reason_of(ids[2]) == (
        "floating resource example.com/licences: 2 of 2 in use in the pool, the job asks 1"
    )
    runs = list(Run.objects.values_list("id", flat=True))
    for row in _lease_rows(runs):
        resources = json.loads(row["pod_spec_json"])["containers"][0]["resources"]
        assert resources == {
            "requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {"cpu": "1", "memory": "1Gi"},
        }
    # The stored job keeps what it asked for.
    assert (
        Job.objects.get(id=ids[0]).pod_spec["containers"][0]["resources"]["requests"][
            "example.com/licences"
        ]
        == "1"
    )


def test_an_executor_behind_on_acknowledging_leases_sits_out(settings, queue, owner):
    """maxUnacknowledgedJobsPerExecutor 2: after a round leased 3 to the only executor, it
    gets nothing more until it has acknowledged them (its agent's tick)."""
    agent = setup_agent(settings, maxUnacknowledgedJobsPerExecutor=2)
    submit(owner, 3)
    assert scheduler_cycle(now=at(1)).leased == 3
    later = submit(owner, 2)
    report = scheduler_cycle(now=at(2))
    assert report.leased == 0
    assert reason_of(later[0]) == REASON_NO_NODES
    agent.tick(at(3))  # the executor takes its leases: they are no longer unacknowledged
    assert Job.objects.filter(state="leased").count() == 0
    assert scheduler_cycle(now=at(4)).leased == 2


# --- away node types (``core.away``) --------------------------------------------------------

AWAY_CLASSES = {
    "armada-default": {"priority": 1000, "preemptible": False},
    "research": {
        "priority": 1000,
        "preemptible": True,
        "awayNodeTypes": [{"priority": 500, "wellKnownNodeTypeName": "gpu"}],
    },
    "gpu-home": {"priority": 1000, "preemptible": False},
}
GPU_TOLERATION = {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}


def away_agent(settings):
    from armada.core.config import parse_config
    from tests.executor_api import api_agent

    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "priorityClasses": AWAY_CLASSES,
                "wellKnownNodeTypes": [{"name": "gpu", "taints": [GPU_TAINT]}],
            },
            "executors": [
                {
                    "id": "test",
                    "nodes": [
                        {"name": "cpu", "allocatable": {"cpu": "4", "memory": "16Gi"}},
                        {
                            "name": "gpu",
                            "allocatable": {"cpu": "4", "memory": "16Gi"},
                            "taints": [GPU_TAINT],
                        },
                    ],
                }
            ],
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(at(0))
    return agent


def test_a_job_goes_away_at_its_lower_priority_and_is_evicted_first(settings, queue, owner):
    """Home (the untainted node) full: the second research job runs on the gpu node at 500,
    its pod tolerating the taint; a gpu job of priority 1000 then takes the room back."""
    from armada.models import Run
    from armada.services.executor_rounds import _lease_rows

    away_agent(settings)
    first, second = submit(owner, 2, cpu="4", pc="research")
    assert scheduler_cycle(now=at(1)).leased == 2
    home = Run.objects.get(job_id=first)
    away = Run.objects.get(job_id=second)
    assert (home.node, home.away_node_type, home.scheduled_priority) == ("cpu", "", None)
    assert (away.node, away.away_node_type, away.scheduled_priority) == ("gpu", "gpu", 500)
    rows = {
        row["job_id"]: json.loads(row["pod_spec_json"]) for row in _lease_rows([home.id, away.id])
    }
    assert "tolerations" not in rows[first]
    assert rows[second]["tolerations"] == [GPU_TOLERATION]
    from armada.models import Event
    from armada.services.events import event_as_dict

    leased = event_as_dict(Event.objects.get(job_id=second, type="leased"))
    assert (leased["awayNodeType"], leased["scheduledAtPriority"]) == ("gpu", 500)

    gpu_job = job(cpu="4")
    gpu_job["podSpec"]["priorityClassName"] = "gpu-home"
    gpu_job["podSpec"]["tolerations"] = [GPU_TOLERATION]
    (owner_job,) = job_submit(actor=owner, data=job_file(jobs=[gpu_job]), now=at(2))
    scheduler_cycle(now=at(3))
    away.refresh_from_db()
    assert away.stop_kind == "preempt"
    assert f"to make room for job {owner_job}" in away.stop_reason
    home.refresh_from_db()
    assert home.stop_requested_at is None


def test_a_round_stops_taking_new_jobs_when_its_time_is_up(settings, queue, owner):
    """maxNewJobSchedulingDuration of a microsecond: any unit takes longer, so each round leases one job
    and the next is told the round's time ran out (the round is timed with the process's
    clock)."""
    setup(settings, maxNewJobSchedulingDuration="0.000001s")
    ids = submit(owner, 3)
    assert scheduler_cycle(now=at(1)).leased == 1
    assert reason_of(ids[1]).startswith("the round's time for new jobs ran out")
    assert scheduler_cycle(now=at(2)).leased == 1
