"""armada.core.limits in a round: per queue and priority class, per round, per queue rate,
floating resources, and how they meet gangs, preemption and fair share.

Every case is a small pool of 1-cpu slots: ``pool(n)`` is n nodes of 1 cpu and 4Gi, so a
fraction f of cpu is f x n jobs of 1 cpu.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from armada.core.limits import (
    SCOPE_QUEUE,
    SCOPE_ROUND,
    SCOPE_UNIT,
    LimitState,
    RoundLimits,
    class_fractions,
    percent,
)
from armada.core.quantity import Resources
from armada.core.scheduling import (
    REASON_NO_RESOURCES,
    NodeState,
    QueuedJob,
    QueueState,
    RunningJob,
    schedule_round,
)

ONE = Resources.parse({"cpu": "1", "memory": "1Gi"})
PRE, DEF, HIGH = "armada-preemptible", "armada-default", "urgent"
URGENCY = {PRE: 1000, DEF: 1000, HIGH: 2000}


def pool(n: int) -> list[NodeState]:
    return [
        NodeState(
            id=f"ex/n{i}",
            executor="ex",
            name=f"n{i}",
            allocatable=Resources.parse({"cpu": "1", "memory": "4Gi"}),
        )
        for i in range(n)
    ]


def job(
    queue: str, i: int, pc: str = PRE, *, gang: str = "", of: int = 1, floating: int = 0
) -> QueuedJob:
    return QueuedJob(
        id=f"{queue}-{pc[:3]}-{i:03d}",
        queue=queue,
        requests=ONE,
        urgency=URGENCY[pc],
        priority_class=pc,
        gang_id=gang,
        gang_cardinality=of,
        floating={"licences": floating * 1000} if floating else {},
    )


def running(queue: str, i: int, node: str, pc: str = PRE, floating: int = 0) -> RunningJob:
    return RunningJob(
        id=f"run-{queue}-{i}",
        queue=queue,
        node_id=f"ex/{node}",
        requests=ONE,
        urgency=URGENCY[pc],
        preemptible=pc == PRE,
        priority_class=pc,
        floating={"licences": floating * 1000} if floating else {},
    )


@dataclass
class Case:
    name: str
    jobs: list[QueuedJob]
    limits: RoundLimits
    leased: dict[str, int]  # queue -> leases
    nodes: int = 10
    running: list[RunningJob] = field(default_factory=list)
    held: dict[str, str] = field(default_factory=dict)  # job id -> a part of its reason
    queues: tuple[str, ...] = ("a", "b")
    stopped_by: str = ""
    preempted: int = 0


CASES = [
    Case(
        "a class's fraction caps the queue: 3 of 10 cpu",
        [job("a", i) for i in range(5)],
        RoundLimits(class_fractions={"a": {PRE: {"cpu": 0.3}}}),
        {"a": 3},
        held={
            "a-arm-003": "queue a at 30% of cpu for priority class armada-preemptible, limit 30%"
            " (this job would take it to 40%)"
        },
    ),
    Case(
        "the cap is per class: the queue's other class is not held",
        [job("a", i) for i in range(5)] + [job("a", i, DEF) for i in range(4)],
        RoundLimits(class_fractions={"a": {PRE: {"cpu": 0.3}}}),
        {"a": 7},
    ),
    Case(
        "the cap is per queue: another queue has its own",
        [job("a", i) for i in range(5)] + [job("b", i) for i in range(5)],
        RoundLimits(class_fractions={"a": {PRE: {"cpu": 0.3}}, "b": {PRE: {"cpu": 0.2}}}),
        {"a": 3, "b": 2},
    ),
    Case(
        "running jobs of the class count",
        [job("a", i) for i in range(5)],
        RoundLimits(class_fractions={"a": {PRE: {"cpu": 0.3}}}),
        {"a": 1},
        running=[running("a", 0, "n0"), running("a", 1, "n1"), running("a", 2, "n2", DEF)],
    ),
    Case(
        "a queue already over its cap (the pool shrank) takes no more of the class",
        [job("a", 0)],
        RoundLimits(class_fractions={"a": {PRE: {"memory": 0.1}}}),
        {},
        nodes=2,
        running=[running("a", 0, "n0")],
        held={"a-arm-000": "queue a at 12.5% of memory"},
    ),
    Case(
        "a gang is held as a whole when it would take the queue past its cap",
        [job("a", i, gang="g", of=4) for i in range(4)] + [job("a", 10 + i) for i in range(3)],
        RoundLimits(class_fractions={"a": {PRE: {"cpu": 0.3}}}),
        {"a": 3},
        held={f"a-arm-00{i}": "limit 30%" for i in range(4)},
    ),
    Case(
        "a gang that fits under the cap goes whole",
        [job("a", i, gang="g", of=3) for i in range(3)] + [job("a", 10)],
        RoundLimits(class_fractions={"a": {PRE: {"cpu": 0.3}}}),
        {"a": 3},
        held={"a-arm-010": "limit 30%"},
    ),
    Case(
        "the round stops once it has handed out more than its fraction",
        [job("a", i) for i in range(5)] + [job("b", i) for i in range(5)],
        RoundLimits(to_schedule={"cpu": 0.2}),
        {"a": 2, "b": 1},
        stopped_by="limit 20% per round",
    ),
    Case(
        "the round limit counts only this round's leases",
        [job("a", i) for i in range(5)],
        RoundLimits(to_schedule={"cpu": 0.2}),
        {"a": 3},
        running=[running("b", i, f"n{i}") for i in range(4)],
        stopped_by="already handed out 30% of the pool's cpu",
    ),
    Case(
        "a queue out of rate tokens gets no more turns; others go on",
        [job("a", i) for i in range(5)] + [job("b", i) for i in range(3)],
        RoundLimits(queue_tokens={"a": 2, "b": 5}, queue_burst=5),
        {"a": 2, "b": 3},
        held={"a-arm-002": "queue a scheduling rate limit exceeded"},
    ),
    Case(
        "a gang needing more tokens than are left waits; the queue's next job goes",
        [job("a", i, gang="g", of=3) for i in range(3)] + [job("a", 10)],
        RoundLimits(queue_tokens={"a": 2}, queue_burst=5),
        {"a": 1},
        held={"a-arm-000": "gang of 3 would exceed queue a's scheduling rate limit"},
    ),
    Case(
        "a gang bigger than the queue's burst can never start",
        [job("a", i, gang="g", of=3) for i in range(3)],
        RoundLimits(queue_tokens={"a": 2}, queue_burst=2),
        {},
        held={"a-arm-001": "exceeds queue a's maximum burst of 2"},
    ),
    Case(
        "floating resources: the pool's amount is shared by its jobs",
        [job("a", i, floating=1) for i in range(5)] + [job("b", i) for i in range(2)],
        RoundLimits(floating={"licences": 3000}),
        {"a": 3, "b": 2},
        held={"a-arm-003": "floating resource licences: 3 of 3 in use in the pool, the job asks 1"},
    ),
    Case(
        "floating resources held by running jobs count",
        [job("a", i, floating=1) for i in range(3)],
        RoundLimits(floating={"licences": 3000}),
        {"a": 1},
        running=[running("b", 0, "n0", floating=2)],
    ),
    Case(
        "a floating resource the pool does not have holds its jobs",
        [job("a", 0, floating=1)],
        RoundLimits(floating={"licences": 0}),
        {},
        held={"a-arm-000": "floating resource licences: the pool has none of it"},
    ),
    Case(
        "a class's cap counts the floating resources its jobs hold",
        [job("a", i, floating=1) for i in range(4)],
        RoundLimits(class_fractions={"a": {PRE: {"licences": 0.5}}}, floating={"licences": 4000}),
        {"a": 2},
    ),
    Case(
        "held by its cap, a job of a queue below its share evicts nobody",
        [job("b", i) for i in range(3)],
        RoundLimits(class_fractions={"b": {PRE: {"cpu": 0.0}}}),
        {},
        nodes=4,
        running=[running("a", i, f"n{i}") for i in range(4)],
        held={"b-arm-000": "limit 0%"},
    ),
    Case(
        "without the cap the same job takes its fair share by preemption",
        [job("b", i) for i in range(3)],
        RoundLimits(),
        {"b": 2},
        nodes=4,
        running=[running("a", i, f"n{i}") for i in range(4)],
        preempted=2,
    ),
    Case(
        "fair-share preemption stops at the waiting queue's cap",
        [job("b", i) for i in range(3)],
        RoundLimits(class_fractions={"b": {PRE: {"cpu": 0.25}}}),
        {"b": 1},
        nodes=4,
        running=[running("a", i, f"n{i}") for i in range(4)],
        preempted=1,
    ),
    Case(
        "an urgent job held by its class's cap evicts nobody",
        [job("b", 0, HIGH)],
        RoundLimits(class_fractions={"b": {HIGH: {"cpu": 0.0}}}),
        {},
        nodes=2,
        running=[running("a", i, f"n{i}") for i in range(2)],
    ),
    Case(
        "an urgent job under its cap evicts as before",
        [job("b", 0, HIGH)],
        RoundLimits(class_fractions={"b": {HIGH: {"cpu": 0.5}}}),
        {"b": 1},
        nodes=2,
        running=[running("a", i, f"n{i}") for i in range(2)],
        preempted=1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_limits_in_a_round(case: Case) -> None:
    nodes = pool(case.nodes)
    for r in case.running:
        node = next(n for n in nodes if n.id == r.node_id)
        node.allocated = node.allocated + r.requests
    used: dict[str, Resources] = {}
    for r in case.running:
        used[r.queue] = used.get(r.queue, Resources()) + r.requests
    queues = [QueueState(name=q, allocated=used.get(q, Resources())) for q in case.queues]
    result = schedule_round(
        nodes=nodes,
        queues=queues,
        jobs=case.jobs,
        max_leases=100,
        running=case.running,
        limits=case.limits,
    )
    got: dict[str, int] = {}
    for lease in result.leases:
        got[lease.queue] = got.get(lease.queue, 0) + 1
    assert got == case.leased, result.unschedulable
    for job_id, part in case.held.items():
        assert part in result.unschedulable.get(job_id, ""), (job_id, result.unschedulable)
    assert case.stopped_by in result.stopped_by
    assert bool(result.stopped_by) == bool(case.stopped_by)
    assert len(result.preempted) == case.preempted, result.preempted


def test_held_jobs_are_not_retried_for_room() -> None:
    """A job held by a limit keeps the limit's reason, not "no room", after fair share."""
    nodes = pool(2)
    for n in nodes:
        n.allocated = ONE
    run = [running("a", 0, "n0"), running("a", 1, "n1")]
    result = schedule_round(
        nodes=nodes,
        queues=[QueueState("a", allocated=ONE + ONE), QueueState("b")],
        jobs=[job("b", 0), job("b", 1, DEF)],
        max_leases=10,
        running=run,
        limits=RoundLimits(class_fractions={"b": {PRE: {"cpu": 0.0}}}),
    )
    assert "limit 0%" in result.unschedulable["b-arm-000"]
    assert [lease.job_id for lease in result.leases] == ["b-arm-001"]


def test_by_class_given_by_the_queue_counts_runs_off_the_nodes() -> None:
    """A queue's ``by_class`` (runs on nodes not schedulable now included) replaces what the
    round would sum from its running jobs."""
    result = schedule_round(
        nodes=pool(10),
        queues=[QueueState("a", by_class={PRE: {"cpu": 2000}})],
        jobs=[job("a", i) for i in range(3)],
        max_leases=10,
        limits=RoundLimits(class_fractions={"a": {PRE: {"cpu": 0.3}}}),
    )
    assert len(result.leases) == 1


MERGES = [
    ({}, {}, None, "gpu", {}),
    ({"cpu": 0.5}, {}, None, "gpu", {"cpu": 0.5}),
    ({"cpu": 0.5}, {"gpu": {"cpu": 0.2}}, None, "gpu", {"cpu": 0.2}),
    ({"cpu": 0.5}, {"gpu": {"cpu": 0.2}}, None, "cpu-pool", {"cpu": 0.5}),
    (
        {"cpu": 0.5, "memory": 0.5},
        {"gpu": {"cpu": 0.2}},
        {"maximumResourceFraction": {"memory": 0.9}},
        "gpu",
        {"cpu": 0.2, "memory": 0.9},
    ),
    (
        {"cpu": 0.5},
        {"gpu": {"cpu": 0.2}},
        {
            "maximumResourceFraction": {"cpu": 0.7},
            "maximumResourceFractionByPool": {"gpu": {"maximumResourceFraction": {"cpu": 0.1}}},
        },
        "gpu",
        {"cpu": 0.1},
    ),
    (
        {},
        {},
        {"maximumResourceFractionByPool": {"gpu": {"maximumResourceFraction": {"cpu": 0.1}}}},
        "default",
        {},
    ),
]


@pytest.mark.parametrize("default,by_pool,queue,pool_name,expected", MERGES)
def test_class_fractions_merge_in_order(default, by_pool, queue, pool_name, expected) -> None:
    got = class_fractions(
        pool=pool_name, class_default=default, class_by_pool=by_pool, queue_limits=queue
    )
    assert got == expected


@pytest.mark.parametrize(
    "value,text", [(0.3, "30%"), (0.125, "12.5%"), (1 / 3, "33.3%"), (0.0, "0%"), (1.0, "100%")]
)
def test_percent(value: float, text: str) -> None:
    assert percent(value) == text


SCOPES = [
    (RoundLimits(to_schedule={"cpu": 0.0}), {"cpu": 1}, SCOPE_ROUND),
    (RoundLimits(queue_tokens={"a": 0}, queue_burst=3), {}, SCOPE_QUEUE),
    (RoundLimits(class_fractions={"a": {PRE: {"cpu": 0.0}}}), {}, SCOPE_UNIT),
    (RoundLimits(floating={"licences": 0}), {}, SCOPE_UNIT),
]


@pytest.mark.parametrize("limits,scheduled,scope", SCOPES)
def test_what_a_hold_ends(limits: RoundLimits, scheduled: dict, scope: str) -> None:
    state = LimitState(limits, {"cpu": 10_000}, {})
    state.scheduled = dict(scheduled)
    found = state.hold([job("a", 0, floating=1)])
    assert found is not None and found[1] == scope


def test_no_limits_hold_nothing() -> None:
    state = LimitState(RoundLimits(), {"cpu": 1000}, {})
    assert not state.active
    assert state.hold([job("a", 0, floating=5)]) is None


def test_no_room_is_still_no_room_under_a_loose_limit() -> None:
    result = schedule_round(
        nodes=pool(1),
        queues=[QueueState("a")],
        jobs=[job("a", i) for i in range(2)],
        max_leases=10,
        limits=RoundLimits(class_fractions={"a": {PRE: {"memory": 1.0}}}),
    )
    assert len(result.leases) == 1
    assert result.unschedulable["a-arm-001"] == REASON_NO_RESOURCES


def test_evictions_free_what_the_limits_count() -> None:
    """What preempted jobs held is free again for their queue's cap and the floating
    amounts (the round calls ``evicted`` for every job it takes off a node)."""
    limits = RoundLimits(class_fractions={"a": {PRE: {"cpu": 0.5}}}, floating={"licences": 1000})
    held = {("a", PRE): {"cpu": 1000, "licences": 1000}}
    state = LimitState(limits, {"cpu": 2000}, held)
    assert state.hold([job("a", 1)]) is not None
    assert state.hold([job("b", 1, floating=1)]) is not None
    state.evicted([running("a", 0, "n0", floating=1)])
    assert state.hold([job("a", 1)]) is None
    assert state.hold([job("b", 1, floating=1)]) is None
