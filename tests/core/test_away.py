"""armada.core.away in a round: jobs of a class with away node types run on other types'
nodes at a lower priority when home is full, and are the first to go when home jobs need
the room back.

The pool: ``cpu`` nodes (no taint) and ``gpu`` nodes (tainted ``gpu=true:NoSchedule``), each
of 4 cpu. Class ``research`` (priority 1000, preemptible) may go away to ``gpu`` at 500 when
it asks for less than 4 cpu; class ``gpu-home`` (priority 1000) tolerates the taint itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from armada.core.away import (
    TOLERATE_ALL,
    AwayEntry,
    AwayPlanner,
    AwayTarget,
    Condition,
    away_options,
    node_type_of,
)
from armada.core.limits import RoundLimits
from armada.core.quantity import Resources
from armada.core.scheduling import (
    REASON_NO_RESOURCES,
    NodeState,
    QueuedJob,
    QueueState,
    RunningJob,
    Taint,
    Toleration,
    schedule_round,
)

GPU_TAINT = Taint("gpu", "true", "NoSchedule")
BIG_TAINT = Taint("big", "yes", "NoSchedule")
NODE_TYPES = {"gpu": (GPU_TAINT,), "big": (BIG_TAINT,)}
GPU_TOLERATION = Toleration(key="gpu", operator="Equal", value="true", effect="NoSchedule")
AWAY = {
    "research": [AwayEntry(500, (AwayTarget("gpu", (Condition("cpu", "<", 4000),)),))],
    "anywhere": [AwayEntry(100, (AwayTarget("*"),))],
    "ordered": [AwayEntry(700, (AwayTarget("big"),)), AwayEntry(300, (AwayTarget("gpu"),))],
}
URGENCY = {"research": 1000, "gpu-home": 1000, "anywhere": 1000, "ordered": 1000, "low": 200}


def cpu(n: int = 1) -> Resources:
    return Resources.parse({"cpu": str(n), "memory": "1Gi"})


def node(name: str, taint: Taint | None = None, used: int = 0) -> NodeState:
    return NodeState(
        id=f"ex/{name}",
        executor="ex",
        name=name,
        allocatable=Resources.parse({"cpu": "4", "memory": "16Gi"}),
        allocated=cpu(used) if used else Resources(),
        taints=(taint,) if taint else (),
    )


def job(i: int, pc: str = "research", n: int = 1, queue: str = "a") -> QueuedJob:
    return QueuedJob(
        id=f"{queue}-{pc}-{i}",
        queue=queue,
        requests=cpu(n),
        urgency=URGENCY[pc],
        priority_class=pc,
        tolerations=(GPU_TOLERATION,) if pc == "gpu-home" else (),
    )


def running(i: int, on: str, urgency: int, n: int = 4, queue: str = "b") -> RunningJob:
    return RunningJob(
        id=f"run-{i}",
        queue=queue,
        node_id=f"ex/{on}",
        requests=cpu(n),
        urgency=urgency,
        preemptible=True,
    )


@dataclass
class Case:
    name: str
    nodes: list[NodeState]
    jobs: list[QueuedJob]
    placed: dict[str, str]  # job id -> node
    away: dict[str, int] = field(default_factory=dict)  # job id -> priority it runs at
    running: list[RunningJob] = field(default_factory=list)
    preempted: set[str] = field(default_factory=set)
    reasons: dict[str, str] = field(default_factory=dict)
    limits: RoundLimits = field(default_factory=RoundLimits)


CASES = [
    Case(
        "home first while home has room",
        [node("gpu0", GPU_TAINT), node("cpu0")],
        [job(0)],
        {"a-research-0": "cpu0"},
    ),
    Case(
        "home full: away to the gpu node at the away priority",
        [node("cpu0", used=4), node("gpu0", GPU_TAINT)],
        [job(0), job(1)],
        {"a-research-0": "gpu0", "a-research-1": "gpu0"},
        away={"a-research-0": 500, "a-research-1": 500},
    ),
    Case(
        "the condition keeps a 4-cpu job home",
        [node("cpu0", used=4), node("gpu0", GPU_TAINT)],
        [job(0, n=4)],
        {},
        reasons={"a-research-0": REASON_NO_RESOURCES},
    ),
    Case(
        "a class without away node types stays home",
        [node("cpu0", used=4), node("gpu0", GPU_TAINT)],
        [job(0, "low")],
        {},
    ),
    Case(
        "away, a job evicts only jobs below its away priority",
        [node("cpu0", used=4), node("gpu0", GPU_TAINT, used=4)],
        [job(0)],
        {},
        running=[running(0, "cpu0", 1000), running(1, "gpu0", 600)],
        reasons={"a-research-0": REASON_NO_RESOURCES},
    ),
    Case(
        "away, a job evicts a job of lower priority there",
        [node("cpu0", used=4), node("gpu0", GPU_TAINT, used=4)],
        [job(0)],
        {"a-research-0": "gpu0"},
        away={"a-research-0": 500},
        running=[running(0, "cpu0", 1000), running(1, "gpu0", 400)],
        preempted={"run-1"},
    ),
    Case(
        "home preemption comes before going away",
        [node("cpu0", used=4), node("gpu0", GPU_TAINT)],
        [job(0)],
        {"a-research-0": "cpu0"},
        running=[running(0, "cpu0", 200)],
        preempted={"run-0"},
    ),
    Case(
        "a home job takes the room back: the away job (priority 500) is evicted",
        [node("gpu0", GPU_TAINT, used=4)],
        [job(0, "gpu-home", n=4)],
        {"a-gpu-home-0": "gpu0"},
        running=[running(0, "gpu0", 500)],
        preempted={"run-0"},
    ),
    Case(
        "away jobs count against their queue's class cap (2 of 8 cpu)",
        [node("cpu0", used=4), node("gpu0", GPU_TAINT)],
        [job(0), job(1), job(2)],
        {"a-research-0": "gpu0", "a-research-1": "gpu0"},
        away={"a-research-0": 500, "a-research-1": 500},
        reasons={
            "a-research-2": "queue a at 25% of cpu for priority class research, limit 25%"
            " (this job would take it to 37.5%)"
        },
        limits=RoundLimits(class_fractions={"a": {"research": {"cpu": 0.25}}}),
    ),
    Case(
        "a job held by its cap is not placed away either",
        [node("cpu0", used=4), node("gpu0", GPU_TAINT)],
        [job(0)],
        {},
        reasons={
            "a-research-0": "queue a at 0% of cpu for priority class research, limit 0%"
            " (this job would take it to 12.5%)"
        },
        limits=RoundLimits(class_fractions={"a": {"research": {"cpu": 0.0}}}),
    ),
    Case(
        "the wildcard tolerates every taint",
        [node("cpu0", used=4), node("big0", BIG_TAINT)],
        [job(0, "anywhere")],
        {"a-anywhere-0": "big0"},
        away={"a-anywhere-0": 100},
    ),
    Case(
        "entries are tried in order: big (700) before gpu (300)",
        [node("cpu0", used=4), node("gpu0", GPU_TAINT), node("big0", BIG_TAINT, used=3)],
        [job(0, "ordered"), job(1, "ordered")],
        {"a-ordered-0": "big0", "a-ordered-1": "gpu0"},
        away={"a-ordered-0": 700, "a-ordered-1": 300},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_away_node_types(case: Case) -> None:
    queues = {j.queue for j in case.jobs} | {r.queue for r in case.running}
    result = schedule_round(
        nodes=case.nodes,
        queues=[QueueState(q) for q in sorted(queues)],
        jobs=case.jobs,
        max_leases=100,
        running=case.running,
        fair_share_preemption=False,
        away=AwayPlanner(AWAY, NODE_TYPES),
        limits=case.limits,
    )
    assert {lease.job_id: lease.node for lease in result.leases} == case.placed
    assert {j: o.priority for j, o in result.away.items()} == case.away
    assert set(result.preempted) == case.preempted
    for job_id, reason in case.reasons.items():
        assert result.unschedulable[job_id] == reason


OPTIONS = [
    ("research", {"cpu": 1000}, [(500, (GPU_TOLERATION,), ("gpu",))]),
    ("research", {"cpu": 4000}, []),
    ("anywhere", {"cpu": 1000}, [(100, (TOLERATE_ALL,), ("*",))]),
    (
        "ordered",
        {"cpu": 1000},
        [
            (700, (Toleration("big", "Equal", "yes", "NoSchedule"),), ("big",)),
            (300, (GPU_TOLERATION,), ("gpu",)),
        ],
    ),
]


@pytest.mark.parametrize("pc,requests,expected", OPTIONS)
def test_away_options(pc, requests, expected) -> None:
    got = away_options(AWAY[pc], NODE_TYPES, requests)
    assert [(o.priority, o.tolerations, o.node_types) for o in got] == expected


CONDITIONS = [
    (Condition("cpu", ">", 2000), {"cpu": 3000}, True),
    (Condition("cpu", ">", 2000), {"cpu": 2000}, False),
    (Condition("cpu", "<", 2000), {"cpu": 1999}, True),
    (Condition("cpu", "==", 500), {"cpu": 500}, True),
    (Condition("nvidia.com/gpu", "==", 0), {"cpu": 500}, True),
    (Condition("nvidia.com/gpu", ">", 0), {"cpu": 500}, False),
]


@pytest.mark.parametrize("condition,requests,holds", CONDITIONS)
def test_conditions(condition: Condition, requests: dict, holds: bool) -> None:
    assert condition.holds(requests) is holds


def test_every_condition_of_a_type_must_hold() -> None:
    entry = AwayEntry(
        1, (AwayTarget("gpu", (Condition("cpu", ">", 0), Condition("cpu", "<", 2000))),)
    )
    assert away_options([entry], NODE_TYPES, {"cpu": 1000})
    assert not away_options([entry], NODE_TYPES, {"cpu": 3000})


def test_node_type_of() -> None:
    assert node_type_of((GPU_TAINT, BIG_TAINT), NODE_TYPES) == "big"
    assert node_type_of((GPU_TAINT,), NODE_TYPES) == "gpu"
    assert node_type_of((), NODE_TYPES) == ""
