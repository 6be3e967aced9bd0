"""The scheduler service with the full round: urgency and fair-share preemption carried out
on the executor, gangs leased whole, and gangs whose uniformity label is not indexed."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.models import Event, Job, SchedulingReason
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, container, job_file
from tests.executor_api import api_agent

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"


def setup(
    settings,
    *,
    nodes: int = 1,
    cpu: str = "4",
    labels: dict | None = None,
    indexed: list[str] | None = None,
):
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "priorityClasses": {
                    "batch": {"priority": 100, "preemptible": True},
                    "urgent": {"priority": 1000, "preemptible": False},
                    "armada-default": {"priority": 500, "preemptible": False},
                },
                "indexedNodeLabels": indexed or [],
            },
            "executors": [
                {
                    "id": "test",
                    "trackedNodeLabels": ["kubernetes.io/hostname", "rack"],
                    "nodes": [
                        {
                            "name": "n",
                            "count": nodes,
                            "labels": labels or {},
                            "allocatable": {"cpu": cpu, "memory": "64Gi"},
                        }
                    ],
                }
            ],
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(at(0))
    return agent


def spec(cpu: str = "1", pc: str = "armada-default", annotations: dict | None = None) -> dict:
    return {
        "annotations": {FAKE + "duration": "1h", **(annotations or {})},
        "podSpec": {"priorityClassName": pc, "containers": [container(cpu, "1Gi")]},
    }


def states(ids) -> list[str]:
    return [Job.objects.get(id=i).state for i in ids]


def test_an_urgent_job_preempts_preemptible_work_it_needs_room_from(settings, queue, owner):
    agent = setup(settings, nodes=1, cpu="4")
    batch = job_submit(
        actor=owner, data=job_file(jobs=[spec("2", "batch"), spec("2", "batch")]), now=at(0)
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    assert states(batch) == ["running", "running"]
    [urgent] = job_submit(
        actor=owner, data=job_file(job_set="urgent", jobs=[spec("2", "urgent")]), now=at(3)
    )
    report = scheduler_cycle(now=at(4))
    assert report.preempted == 1
    agent.tick(at(5))
    agent.tick(at(6))
    final = states(batch)
    assert sorted(final) == ["preempted", "running"]
    victim = batch[final.index("preempted")]
    types = list(Event.objects.filter(job_id=victim).values_list("type", flat=True))
    assert types[-3:] == ["preempting", "preempted", "failed"]
    assert Job.objects.get(id=urgent).state in ("leased", "pending", "running")


def test_non_preemptible_work_is_never_preempted(settings, queue, owner):
    agent = setup(settings, nodes=1, cpu="2")
    [steady] = job_submit(actor=owner, data=job_file(jobs=[spec("2")]), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    [urgent] = job_submit(
        actor=owner, data=job_file(job_set="urgent", jobs=[spec("2", "urgent")]), now=at(3)
    )
    assert scheduler_cycle(now=at(4)).preempted == 0
    assert states([steady, urgent]) == ["running", "queued"]


def test_a_gang_that_only_fits_whole_starts_whole(settings, queue, owner):
    agent = setup(settings, nodes=3, cpu="2")
    gang = {"armadaproject.io/gangId": "g1", "armadaproject.io/gangCardinality": "3"}
    members = job_submit(
        actor=owner, data=job_file(jobs=[spec("2", annotations=gang) for _ in range(3)]), now=at(0)
    )
    report = scheduler_cycle(now=at(1))
    assert report.leased == 3
    agent.tick(at(2))
    assert states(members) == ["running"] * 3


def test_an_incomplete_gang_waits_and_says_why(settings, queue, owner):
    setup(settings, nodes=3, cpu="2")
    gang = {"armadaproject.io/gangId": "g2", "armadaproject.io/gangCardinality": "3"}
    members = job_submit(
        actor=owner, data=job_file(jobs=[spec("2", annotations=gang) for _ in range(2)]), now=at(0)
    )
    assert scheduler_cycle(now=at(1)).leased == 0
    assert "gang incomplete" in SchedulingReason.objects.get(job_id=members[0]).reason


def test_a_gang_whose_uniformity_label_is_not_indexed_never_starts_and_says_why(
    settings, queue, owner
):
    setup(settings, nodes=2, cpu="8", labels={"rack": "r1"}, indexed=[])
    gang = {
        "armadaproject.io/gangId": "g3",
        "armadaproject.io/gangCardinality": "2",
        "armadaproject.io/gangNodeUniformityLabel": "rack",
    }
    members = job_submit(
        actor=owner, data=job_file(jobs=[spec("1", annotations=gang) for _ in range(2)]), now=at(0)
    )
    assert scheduler_cycle(now=at(1)).leased == 0
    assert "not indexed" in SchedulingReason.objects.get(job_id=members[0]).reason
    assert states(members) == ["queued", "queued"]


def test_a_gang_with_an_indexed_uniformity_label_starts(settings, queue, owner):
    setup(settings, nodes=2, cpu="8", labels={"rack": "r1"}, indexed=["rack"])
    gang = {
        "armadaproject.io/gangId": "g4",
        "armadaproject.io/gangCardinality": "2",
        "armadaproject.io/gangNodeUniformityLabel": "rack",
    }
    job_submit(
        actor=owner, data=job_file(jobs=[spec("1", annotations=gang) for _ in range(2)]), now=at(0)
    )
    assert scheduler_cycle(now=at(1)).leased == 2


def test_a_queue_over_its_fair_share_loses_preemptible_jobs_to_a_waiting_queue(
    settings, queue, owner, admin_user
):
    agent = setup(settings, nodes=1, cpu="8")
    queue_create(actor=admin_user, data={"name": "other", "owners": [owner.username]}, now=at(0))
    greedy = job_submit(
        actor=owner, data=job_file(jobs=[spec("1", "batch") for _ in range(8)]), now=at(0)
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    assert states(greedy).count("running") == 8
    waiting = job_submit(
        actor=owner,
        data=job_file(queue="other", jobs=[spec("1", "batch") for _ in range(8)]),
        now=at(3),
    )
    report = scheduler_cycle(now=at(4))
    assert report.preempted >= 1
    agent.tick(at(5))
    agent.tick(at(6))
    assert states(greedy).count("preempted") == report.preempted
    reasons = {
        Event.objects.filter(job_id=j, type="preempting").first().payload["reason"]
        for j in greedy
        if Job.objects.get(id=j).state == "preempted"
    }
    assert all("over its fair share" in r for r in reasons)
    assert sum(1 for s in states(waiting) if s != "queued") >= 1


def test_one_queues_backlog_does_not_hide_another_queue_from_the_round(
    settings, queue, owner, admin_user
):
    agent = setup(settings, nodes=1, cpu="4")
    settings.ARMADA = settings.ARMADA.model_copy(
        update={
            "scheduling": settings.ARMADA.scheduling.model_copy(update={"max_queue_lookback": 3})
        }
    )
    queue_create(actor=admin_user, data={"name": "other", "owners": [owner.username]}, now=at(0))
    job_submit(actor=owner, data=job_file(jobs=[spec("1") for _ in range(10)]), now=at(0))
    [late] = job_submit(actor=owner, data=job_file(queue="other", jobs=[spec("1")]), now=at(1))
    report = scheduler_cycle(now=at(2))
    assert report.considered == 4  # 3 of demo's backlog and other's job
    assert Job.objects.get(id=late).state == "leased"
    agent.tick(at(3))


@pytest.mark.parametrize(
    ("cutoff", "first_leased"), [("0s", "demo"), ("60s", "other")], ids=["off", "on"]
)
def test_short_job_penalty_charges_a_queue_for_jobs_that_ended_early(
    settings, queue, owner, admin_user, cutoff, first_leased
):
    agent = setup(settings, nodes=1, cpu="4")
    pools = [
        settings.ARMADA.scheduling.pools[0].model_copy(
            update={"short_job_penalty_cutoff": float(cutoff[:-1])}
        )
    ]
    settings.ARMADA = settings.ARMADA.model_copy(
        update={"scheduling": settings.ARMADA.scheduling.model_copy(update={"pools": pools})}
    )
    queue_create(actor=admin_user, data={"name": "other", "owners": [owner.username]}, now=at(0))
    quick = {
        "annotations": {FAKE + "duration": "1s"},
        "podSpec": {"containers": [container("4", "1Gi")]},
    }
    job_submit(actor=owner, data=job_file(jobs=[quick]), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    agent.tick(at(5))  # demo's 4-cpu job ran 1s and ended
    demo_next = job_submit(actor=owner, data=job_file(jobs=[spec("4")]), now=at(6))[0]
    other_next = job_submit(actor=owner, data=job_file(queue="other", jobs=[spec("4")]), now=at(6))[
        0
    ]
    scheduler_cycle(now=at(10))
    leased = {
        "demo": Job.objects.get(id=demo_next).state,
        "other": Job.objects.get(id=other_next).state,
    }
    assert leased[first_leased] == "leased"
    assert list(leased.values()).count("leased") == 1
