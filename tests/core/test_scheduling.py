"""armada.core.scheduling: one pure scheduling round.

Builders make small snapshots: ``nodes(2, cpu="8")`` -> node-0, node-1 of executor ``ex``;
``jobs("a", 3)`` -> a-000, a-001, a-002 in queue ``a``; ``slots(n)`` -> one node that holds
exactly ``n`` default-sized jobs.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from armada.core.quantity import Resources
from armada.core.scheduling import (
    REASON_CORDONED,
    REASON_NO_MATCH,
    REASON_NO_NODES,
    REASON_NO_RESOURCES,
    REASON_TOO_BIG,
    Lease,
    NodeState,
    QueuedJob,
    QueueState,
    RoundResult,
    Taint,
    Toleration,
    node_matches,
    schedule_round,
)

GPU = "nvidia.com/gpu"


def res(cpu: str = "1", memory: str = "4Gi", gpu: str | None = None) -> Resources:
    values = {"cpu": cpu, "memory": memory}
    if gpu is not None:
        values[GPU] = gpu
    return Resources.parse(values)


def nodes(
    n: int,
    cpu: str = "8",
    memory: str = "32Gi",
    *,
    gpu: str | None = None,
    executor: str = "ex",
    prefix: str = "node",
    start: int = 0,
    used: Resources | None = None,
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    unschedulable: bool = False,
) -> list[NodeState]:
    out = []
    for i in range(start, start + n):
        name = f"{prefix}-{i}"
        out.append(
            NodeState(
                id=f"{executor}/{name}",
                executor=executor,
                name=name,
                allocatable=res(cpu, memory, gpu),
                allocated=used or Resources(),
                labels=dict(labels or {}),
                taints=taints,
                unschedulable=unschedulable,
            )
        )
    return out


def slots(n: int) -> list[NodeState]:
    """One node with room for exactly ``n`` jobs of the default size (1 cpu, 4Gi)."""
    return nodes(1, cpu=str(n), memory=f"{4 * n}Gi")


def jobs(
    queue: str, n: int, cpu: str = "1", memory: str = "4Gi", *, start: int = 0, **fields
) -> list[QueuedJob]:
    gpu = fields.pop("gpu", None)
    return [
        QueuedJob(id=f"{queue}-{i:03d}", queue=queue, requests=res(cpu, memory, gpu), **fields)
        for i in range(start, start + n)
    ]


def job(
    id_: str = "a-000", queue: str = "a", cpu: str = "1", memory: str = "4Gi", **fields
) -> QueuedJob:
    gpu = fields.pop("gpu", None)
    return QueuedJob(id=id_, queue=queue, requests=res(cpu, memory, gpu), **fields)


def queues(*names: str, **fields) -> list[QueueState]:
    return [QueueState(name=name, **fields) for name in names]


def schedule(node_list, job_list, queue_list=None, max_leases: int = 10_000) -> RoundResult:
    job_list = list(job_list)
    if queue_list is None:
        queue_list = queues(*dict.fromkeys(j.queue for j in job_list))
    return schedule_round(nodes=node_list, queues=queue_list, jobs=job_list, max_leases=max_leases)


def placed(result: RoundResult) -> dict[str, str]:
    """job id -> node name."""
    return {lease.job_id: lease.node for lease in result.leases}


def per_queue(result: RoundResult) -> dict[str, int]:
    return dict(Counter(lease.queue for lease in result.leases))


def assert_every_job_accounted_for(result: RoundResult, job_list) -> None:
    """Every job the round examined has a lease or a reason; when the round limit stopped it
    early, the jobs it never reached have neither."""
    leased = [lease.job_id for lease in result.leases]
    assert len(leased) == len(set(leased)), "a job was leased twice"
    assert not set(leased) & set(result.unschedulable), "a job was both leased and unschedulable"
    accounted = set(leased) | set(result.unschedulable)
    assert accounted <= {j.id for j in job_list}
    assert len(accounted) == result.considered
    if not result.limit_reached:
        assert accounted == {j.id for j in job_list}


# --- basic placement --------------------------------------------------------------------------


def test_a_job_fits_on_one_node():
    result = schedule(nodes(1, executor="cluster-1"), [job("a-000", "a")])
    assert result.leases == [
        Lease(
            job_id="a-000",
            queue="a",
            executor="cluster-1",
            node="node-0",
            node_id="cluster-1/node-0",
        )
    ]
    assert result.unschedulable == {}


def test_nothing_to_schedule():
    result = schedule(nodes(2), [], queues("a"))
    assert (result.leases, result.unschedulable) == ([], {})


@pytest.mark.parametrize(
    ("node_count", "node_cpu", "node_memory", "job_count", "job_cpu", "job_memory", "expected"),
    [
        (1, "8", "32Gi", 10, "1", "4Gi", 8),
        (2, "8", "32Gi", 20, "1", "4Gi", 16),
        (3, "4", "16Gi", 5, "1", "4Gi", 5),
        (2, "2", "64Gi", 5, "1", "1Gi", 4),
        (2, "8", "32Gi", 10, "1", "16Gi", 4),
        (4, "8", "32Gi", 10, "3", "1Gi", 8),
        (1, "1", "4Gi", 3, "500m", "2Gi", 2),
    ],
    ids=[
        "one-node-cpu-bound",
        "two-nodes",
        "all-fit",
        "cpu-bound-on-each-node",
        "memory-bound",
        "fragmentation-2-per-node",
        "milli-cpu",
    ],
)
def test_more_jobs_than_capacity(
    node_count, node_cpu, node_memory, job_count, job_cpu, job_memory, expected
):
    job_list = jobs("a", job_count, job_cpu, job_memory)
    result = schedule(nodes(node_count, node_cpu, node_memory), job_list)
    assert len(result.leases) == expected
    # Submission order within the queue: the first jobs are the ones placed.
    assert [lease.job_id for lease in result.leases] == [j.id for j in job_list[:expected]]
    assert result.unschedulable == {j.id: REASON_NO_RESOURCES for j in job_list[expected:]}
    assert_every_job_accounted_for(result, job_list)


def test_existing_allocations_on_nodes_are_respected():
    node_list = nodes(1, used=res("7", "4Gi"))
    result = schedule(node_list, jobs("a", 3))
    assert [lease.job_id for lease in result.leases] == ["a-000"]
    assert result.unschedulable == {"a-001": REASON_NO_RESOURCES, "a-002": REASON_NO_RESOURCES}


def test_resources_the_job_does_not_ask_for_do_not_matter():
    # The node's GPUs are all taken, but a CPU job still fits.
    node_list = nodes(1, gpu="4", used=Resources.parse({GPU: "4"}))
    assert placed(schedule(node_list, [job()])) == {"a-000": "node-0"}


# --- why a job was not placed -----------------------------------------------------------------


def _mixed_pool() -> list[NodeState]:
    return nodes(1, "4", "16Gi", labels={"zone": "a"}) + nodes(
        1, "32", "128Gi", start=1, labels={"zone": "b"}
    )


REASON_CASES = [
    # (id, nodes, job, reason)
    ("cpu-larger-than-any-node", nodes(3), job(cpu="9"), REASON_TOO_BIG),
    ("memory-larger-than-any-node", nodes(3), job(memory="33Gi"), REASON_TOO_BIG),
    ("resource-no-node-has", nodes(3), job(gpu="1"), REASON_TOO_BIG),
    ("more-gpus-than-any-node", nodes(2, gpu="2"), job(gpu="4"), REASON_TOO_BIG),
    ("big-enough-but-full", nodes(2, used=res("8", "1Gi")), job(), REASON_NO_RESOURCES),
    (
        "big-enough-but-memory-full",
        nodes(1, used=res("1", "30Gi")),
        job(memory="4Gi"),
        REASON_NO_RESOURCES,
    ),
    ("no-nodes", [], job(), REASON_NO_NODES),
    (
        "selector-value-mismatch",
        nodes(2, labels={"zone": "a"}),
        job(node_selector={"zone": "b"}),
        REASON_NO_MATCH,
    ),
    ("selector-key-absent", nodes(2), job(node_selector={"zone": "a"}), REASON_NO_MATCH),
    (
        "selector-partly-matches",
        nodes(2, labels={"zone": "a", "disk": "hdd"}),
        job(node_selector={"zone": "a", "disk": "ssd"}),
        REASON_NO_MATCH,
    ),
    ("all-nodes-unschedulable", nodes(2, unschedulable=True), job(), REASON_NO_NODES),
    ("all-nodes-tainted", nodes(2, taints=(Taint("gpu", "true"),)), job(), REASON_NO_MATCH),
    (
        "all-nodes-avoided",
        nodes(2),
        job(avoid_nodes=frozenset({"node-0", "node-1"})),
        REASON_NO_MATCH,
    ),
    # Size is judged only against the nodes the job may use.
    (
        "too-big-for-the-matching-node",
        _mixed_pool(),
        job(cpu="8", node_selector={"zone": "a"}),
        REASON_TOO_BIG,
    ),
    (
        "matching-node-full-other-node-free",
        nodes(1, labels={"zone": "a"}, used=res("8", "1Gi"))
        + nodes(1, start=1, labels={"zone": "b"}),
        job(node_selector={"zone": "a"}),
        REASON_NO_RESOURCES,
    ),
    (
        "too-big-for-the-schedulable-node",
        nodes(1, "2", "8Gi") + nodes(1, "32", "128Gi", start=1, unschedulable=True),
        job(cpu="4"),
        REASON_TOO_BIG,
    ),
]


@pytest.mark.parametrize(
    ("node_list", "the_job", "reason"),
    [case[1:] for case in REASON_CASES],
    ids=[case[0] for case in REASON_CASES],
)
def test_unschedulable_reason(node_list, the_job, reason):
    result = schedule(node_list, [the_job])
    assert result.leases == []
    assert result.unschedulable == {the_job.id: reason}


def test_a_job_that_cannot_be_placed_does_not_block_the_next():
    job_list = [job("a-000", cpu="64"), job("a-001", node_selector={"zone": "x"}), job("a-002")]
    result = schedule(nodes(1), job_list)
    assert placed(result) == {"a-002": "node-0"}
    assert result.unschedulable == {"a-000": REASON_TOO_BIG, "a-001": REASON_NO_MATCH}


# --- node selectors, taints, avoided and unschedulable nodes ---------------------------------


def test_node_selector_picks_the_labelled_node():
    node_list = (
        nodes(1, labels={"zone": "a"}, used=res("6", "1Gi"))  # fullest: bin packing would pick it
        + nodes(1, start=1, labels={"zone": "b", "disk": "ssd"})
        + nodes(1, start=2, labels={"zone": "b", "disk": "hdd"})
    )
    result = schedule(node_list, [job(node_selector={"zone": "b", "disk": "ssd"})])
    assert placed(result) == {"a-000": "node-1"}


def test_empty_node_selector_matches_any_node():
    assert placed(schedule(nodes(1, labels={"zone": "a"}), [job(node_selector={})])) == {
        "a-000": "node-0"
    }


TAINT_CASES = [
    # (id, taints, tolerations, placed)
    ("no-taint-no-toleration", (), (), True),
    ("no-schedule-untolerated", (Taint("gpu", "true", "NoSchedule"),), (), False),
    ("no-execute-untolerated", (Taint("gpu", "true", "NoExecute"),), (), False),
    ("prefer-no-schedule-is-ignored", (Taint("gpu", "true", "PreferNoSchedule"),), (), True),
    ("equal-matches", (Taint("gpu", "true"),), (Toleration("gpu", "Equal", "true"),), True),
    ("equal-wrong-value", (Taint("gpu", "true"),), (Toleration("gpu", "Equal", "false"),), False),
    ("equal-wrong-key", (Taint("gpu", "true"),), (Toleration("tpu", "Equal", "true"),), False),
    ("equal-empty-value", (Taint("dedicated"),), (Toleration("dedicated", "Equal", ""),), True),
    ("exists-matches-any-value", (Taint("gpu", "whatever"),), (Toleration("gpu", "Exists"),), True),
    ("exists-ignores-value", (Taint("gpu", "a"),), (Toleration("gpu", "Exists", "b"),), True),
    ("exists-wrong-key", (Taint("gpu", "true"),), (Toleration("tpu", "Exists"),), False),
    (
        "exists-empty-key-tolerates-all",
        (Taint("gpu", "x"), Taint("spot", "y", "NoExecute")),
        (Toleration("", "Exists"),),
        True,
    ),
    (
        "effect-matches",
        (Taint("gpu", "true", "NoExecute"),),
        (Toleration("gpu", "Equal", "true", "NoExecute"),),
        True,
    ),
    (
        "effect-mismatch",
        (Taint("gpu", "true", "NoExecute"),),
        (Toleration("gpu", "Equal", "true", "NoSchedule"),),
        False,
    ),
    (
        "empty-effect-tolerates-every-effect",
        (Taint("gpu", "true", "NoExecute"),),
        (Toleration("gpu", "Exists"),),
        True,
    ),
    (
        "two-taints-one-tolerated",
        (Taint("gpu", "true"), Taint("spot", "true")),
        (Toleration("gpu", "Exists"),),
        False,
    ),
    (
        "two-taints-both-tolerated",
        (Taint("gpu", "true"), Taint("spot", "true")),
        (Toleration("gpu", "Exists"), Toleration("spot", "Equal", "true")),
        True,
    ),
    (
        "untolerated-prefer-beside-tolerated",
        (Taint("gpu", "true"), Taint("spot", "true", "PreferNoSchedule")),
        (Toleration("gpu", "Exists"),),
        True,
    ),
    ("extra-tolerations-are-harmless", (), (Toleration("gpu", "Exists"),), True),
]


@pytest.mark.parametrize(
    ("taints", "tolerations", "is_placed"),
    [case[1:] for case in TAINT_CASES],
    ids=[case[0] for case in TAINT_CASES],
)
def test_taints_need_tolerations(taints, tolerations, is_placed):
    result = schedule(nodes(1, taints=taints), [job(tolerations=tolerations)])
    if is_placed:
        assert placed(result) == {"a-000": "node-0"}
    else:
        assert result.unschedulable == {"a-000": REASON_NO_MATCH}
    node = nodes(1, taints=taints)[0]
    assert node_matches(job(tolerations=tolerations), node) is is_placed


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerates"),
    [
        (Toleration("k", "Equal", "v"), Taint("k", "v", "NoSchedule"), True),
        (Toleration("k", "Equal", "v"), Taint("k", "w", "NoSchedule"), False),
        (Toleration("k"), Taint("k", "", "NoSchedule"), True),
        (Toleration("k"), Taint("k", "v", "NoSchedule"), False),
        (Toleration("k", "Exists"), Taint("k", "v", "NoExecute"), True),
        (Toleration("", "Exists"), Taint("any", "v", "NoSchedule"), True),
        (Toleration("", "Exists", effect="NoSchedule"), Taint("any", "v", "NoExecute"), False),
        (Toleration("k", "Exists", effect="NoExecute"), Taint("k", "v", "NoExecute"), True),
        (Toleration("k", "Equal", "v", "PreferNoSchedule"), Taint("k", "v", "NoSchedule"), False),
    ],
    ids=[
        "equal",
        "equal-other-value",
        "default-operator-is-equal-empty-value",
        "default-operator-needs-value",
        "exists",
        "exists-no-key",
        "exists-no-key-other-effect",
        "exists-same-effect",
        "equal-other-effect",
    ],
)
def test_toleration_tolerates(toleration, taint, tolerates):
    assert toleration.tolerates(taint) is tolerates


def test_avoided_nodes_are_not_used():
    node_list = nodes(1, used=res("6", "1Gi")) + nodes(2, start=1)
    # node-0 is the fullest that fits, so it would be chosen were it not avoided.
    assert placed(schedule(node_list, [job()])) == {"a-000": "node-0"}
    node_list = nodes(1, used=res("6", "1Gi")) + nodes(2, start=1)
    result = schedule(node_list, [job(avoid_nodes=frozenset({"node-0"}))])
    assert placed(result) == {"a-000": "node-1"}


def test_avoided_nodes_are_per_job():
    node_list = nodes(2)
    job_list = [job("a-000", avoid_nodes=frozenset({"node-0"})), job("a-001")]
    # a-001 may use node-0 (the avoidance is a-000's alone), and node-0 comes first.
    assert placed(schedule(node_list, job_list)) == {"a-000": "node-1", "a-001": "node-0"}


def test_unschedulable_nodes_are_skipped():
    node_list = nodes(1, used=res("6", "1Gi"), unschedulable=True) + nodes(1, start=1)
    result = schedule(node_list, jobs("a", 10))
    assert set(placed(result).values()) == {"node-1"}
    assert len(result.leases) == 8
    assert node_list[0].allocated == res("6", "1Gi")


def test_unschedulable_nodes_do_not_count_towards_the_pool_capacity():
    # The pool is the 4-cpu/16Gi node: a's 2 cpu is half of it, b's 4Gi a quarter, so b goes
    # first. Counting the cordoned 100-cpu node would make a's share tiny and let a go first.
    node_list = nodes(1, "4", "16Gi") + nodes(1, "100", "16Gi", start=1, unschedulable=True)
    queue_list = [
        QueueState("a", allocated=res("2", "0")),
        QueueState("b", allocated=res("0", "4Gi")),
    ]
    result = schedule(
        node_list, jobs("a", 1, "1", "1Gi") + jobs("b", 1, "1", "1Gi"), queue_list, max_leases=1
    )
    assert [lease.job_id for lease in result.leases] == ["b-000"]
    # a-000 was never reached: no reason for it, but the round says it stopped early.
    assert result.unschedulable == {}
    assert (result.limit_reached, result.considered) == (True, 1)


# --- queues -----------------------------------------------------------------------------------


def test_cordoned_queue_gets_nothing():
    job_list = jobs("a", 3) + jobs("b", 2)
    result = schedule(nodes(1), job_list, [QueueState("a", cordoned=True), QueueState("b")])
    assert per_queue(result) == {"b": 2}
    assert result.unschedulable == {
        "a-000": REASON_CORDONED,
        "a-001": REASON_CORDONED,
        "a-002": REASON_CORDONED,
    }


def test_cordoned_beats_every_other_reason():
    job_list = [job("a-000", cpu="99"), job("a-001", node_selector={"zone": "x"}), job("a-002")]
    result = schedule(nodes(1), job_list, [QueueState("a", cordoned=True)], max_leases=0)
    assert result.unschedulable == dict.fromkeys(["a-000", "a-001", "a-002"], REASON_CORDONED)


def test_cordoned_queue_leaves_capacity_to_others():
    job_list = jobs("a", 4) + jobs("b", 4)
    result = schedule(slots(4), job_list, [QueueState("a", cordoned=True), QueueState("b")])
    assert per_queue(result) == {"b": 4}


ORDER_CASES = [
    # (id, [(id, urgency, priority)], expected order)
    ("by-id", [("j3", 0, 0), ("j1", 0, 0), ("j2", 0, 0)], ["j1", "j2", "j3"]),
    ("lower-priority-first", [("j1", 0, 5), ("j2", 0, 1), ("j3", 0, 3)], ["j2", "j3", "j1"]),
    ("higher-urgency-first", [("j1", 0, 0), ("j2", 2000, 0), ("j3", 1000, 0)], ["j2", "j3", "j1"]),
    ("urgency-beats-priority", [("j1", 1000, 0), ("j2", 2000, 9)], ["j2", "j1"]),
    ("priority-beats-id", [("j1", 0, 2), ("j2", 0, 1)], ["j2", "j1"]),
    (
        "all-three",
        [("j5", 1000, 1), ("j4", 1000, 0), ("j3", 2000, 7), ("j2", 1000, 0), ("j1", 0, 0)],
        ["j3", "j2", "j4", "j5", "j1"],
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [case[1:] for case in ORDER_CASES],
    ids=[case[0] for case in ORDER_CASES],
)
def test_order_inside_a_queue(spec, expected):
    job_list = [job(id_, urgency=u, priority=p) for id_, u, p in spec]
    result = schedule(nodes(1, "64", "256Gi"), job_list)
    assert [lease.job_id for lease in result.leases] == expected
    # With room for one job only, the first in that order gets it.
    result = schedule(slots(1), job_list)
    assert [lease.job_id for lease in result.leases] == expected[:1]
    assert set(result.unschedulable) == set(expected[1:])


def test_queued_job_order_key():
    assert job("x", urgency=5, priority=2).order_key() == (-5, 2, "x")


@pytest.mark.parametrize(
    ("slot_count", "queue_names", "jobs_each", "expected"),
    [
        (4, "ab", 10, {"a": 2, "b": 2}),
        (6, "abc", 10, {"a": 2, "b": 2, "c": 2}),
        (9, "abc", 5, {"a": 3, "b": 3, "c": 3}),
        (20, "ab", 10, {"a": 10, "b": 10}),
        (100, "abcd", 40, {"a": 25, "b": 25, "c": 25, "d": 25}),
        (5, "ab", 10, {"a": 3, "b": 2}),  # the odd slot goes to the first name
    ],
    ids=[
        "4-slots-2-queues",
        "6-slots-3-queues",
        "9-slots-3-queues",
        "room-for-all",
        "100-slots-4-queues",
        "odd-slot",
    ],
)
def test_equal_queues_share_a_scarce_pool_equally(slot_count, queue_names, jobs_each, expected):
    job_list = [j for q in queue_names for j in jobs(q, jobs_each)]
    result = schedule(slots(slot_count), job_list)
    assert per_queue(result) == expected
    assert_every_job_accounted_for(result, job_list)
    assert set(result.unschedulable.values()) <= {REASON_NO_RESOURCES}


def test_share_unused_by_one_queue_goes_to_the_other():
    job_list = jobs("a", 1) + jobs("b", 10)
    assert per_queue(schedule(slots(4), job_list)) == {"a": 1, "b": 3}


def test_equal_queues_alternate():
    job_list = jobs("b", 3) + jobs("a", 3)
    result = schedule(slots(6), job_list)
    assert [lease.job_id for lease in result.leases] == [
        "a-000",
        "b-000",
        "a-001",
        "b-001",
        "a-002",
        "b-002",
    ]


def test_ties_between_queues_go_by_name_not_job_id():
    job_list = [job("0-first-id", queue="zulu"), job("z-last-id", queue="alpha")]
    result = schedule(slots(1), job_list)
    assert [lease.job_id for lease in result.leases] == ["z-last-id"]


@pytest.mark.parametrize(
    ("slot_count", "factors", "expected"),
    [
        (12, {"a": 1.0, "b": 2.0}, {"a": 8, "b": 4}),
        (12, {"a": 2.0, "b": 1.0}, {"a": 4, "b": 8}),
        (6, {"a": 1.0, "b": 2.0}, {"a": 4, "b": 2}),
        (14, {"a": 1.0, "b": 2.0, "c": 4.0}, {"a": 8, "b": 4, "c": 2}),
        (10, {"a": 3.0, "b": 3.0}, {"a": 5, "b": 5}),
    ],
    ids=["a1-b2", "a2-b1", "6-slots", "three-factors", "equal-factors-above-one"],
)
def test_priority_factor_divides_the_share(slot_count, factors, expected):
    job_list = [j for q in factors for j in jobs(q, 20)]
    result = schedule(
        slots(slot_count), job_list, [QueueState(q, priority_factor=f) for q, f in factors.items()]
    )
    assert per_queue(result) == expected


def test_priority_factor_two_gets_about_half_in_a_large_pool():
    job_list = jobs("a", 400) + jobs("b", 400)
    result = schedule(slots(300), job_list, [QueueState("a", 1.0), QueueState("b", 2.0)])
    counts = per_queue(result)
    assert counts["a"] + counts["b"] == 300
    assert abs(counts["a"] - 2 * counts["b"]) <= 2


@pytest.mark.parametrize(
    ("a_uses", "b_uses", "winner"),
    [
        (res("1", "1Gi"), Resources(), "b"),
        (Resources(), res("1", "1Gi"), "a"),
        (res("2"), res("1"), "b"),
        (res("1", "1Gi"), res("1", "1Gi"), "a"),
        (Resources.parse({"memory": "16Gi"}), res("1", "1Gi"), "b"),  # dominant resource counts
    ],
    ids=["a-busy", "b-busy", "a-busier", "equal-use-name-decides", "memory-dominant"],
)
def test_a_queue_already_using_resources_goes_after(a_uses, b_uses, winner):
    job_list = jobs("a", 2) + jobs("b", 2)
    queue_list = [QueueState("a", allocated=a_uses), QueueState("b", allocated=b_uses)]
    result = schedule(slots(1), job_list, queue_list)
    assert per_queue(result) == {winner: 1}


def test_existing_use_counts_towards_the_share():
    # 8 slots, a already runs 4 jobs on them: the 4 free slots all go to the idle queue.
    node_list = nodes(1, used=res("4", "16Gi"))
    queue_list = [QueueState("a", allocated=res("4", "16Gi")), QueueState("b")]
    result = schedule(node_list, jobs("a", 10) + jobs("b", 10), queue_list)
    assert per_queue(result) == {"b": 4}


def test_failed_placements_do_not_cost_a_queue_its_turn():
    # a's first job fits nowhere; a still gets half of the pool.
    job_list = [job("a-000", cpu="99", urgency=1)] + jobs("a", 5, start=1) + jobs("b", 5)
    result = schedule(slots(4), job_list)
    assert per_queue(result) == {"a": 2, "b": 2}
    assert result.unschedulable["a-000"] == REASON_TOO_BIG


# --- the round limit --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_leases", "expected"),
    [(0, 0), (1, 1), (3, 3), (9, 9), (10, 10), (50, 10)],
    ids=["zero", "one", "three", "all-but-one", "exact", "above"],
)
def test_max_leases_limits_the_round(max_leases, expected):
    # Jobs the round never reached get no reason; ``limit_reached`` says some were left.
    job_list = jobs("a", 10)
    result = schedule(nodes(2), job_list, max_leases=max_leases)
    assert [lease.job_id for lease in result.leases] == [j.id for j in job_list[:expected]]
    assert result.unschedulable == {}
    assert result.limit_reached == (expected < 10)
    assert result.considered == expected


def test_round_limit_is_shared_fairly():
    job_list = jobs("a", 5) + jobs("b", 5) + jobs("c", 5)
    result = schedule(nodes(4), job_list, max_leases=6)
    assert per_queue(result) == {"a": 2, "b": 2, "c": 2}
    assert result.unschedulable == {}
    assert (result.limit_reached, result.considered) == (True, 6)


def test_round_limit_counts_leases_and_keeps_earlier_reasons():
    job_list = [job("a-000", cpu="99", urgency=1), *jobs("a", 4, start=1)]
    result = schedule(nodes(1), job_list, max_leases=2)
    assert [lease.job_id for lease in result.leases] == ["a-001", "a-002"]
    assert result.unschedulable == {"a-000": REASON_TOO_BIG}
    assert (result.limit_reached, result.considered) == (True, 3)


def test_a_round_that_considers_everything_has_not_reached_its_limit():
    result = schedule(nodes(2), jobs("a", 4), max_leases=4)
    assert len(result.leases) == 4
    assert (result.limit_reached, result.considered) == (False, 4)


def test_jobs_over_capacity_before_the_limit_are_no_resources():
    job_list = jobs("a", 5)
    result = schedule(slots(2), job_list, max_leases=3)
    assert len(result.leases) == 2
    assert result.unschedulable == dict.fromkeys(["a-002", "a-003", "a-004"], REASON_NO_RESOURCES)


# --- bin packing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used_cpu", "job_cpu", "expected"),
    [
        (["6", "2", "0"], "2", "node-0"),
        (["6", "2", "0"], "3", "node-1"),
        (["6", "2", "0"], "6", "node-1"),
        (["6", "2", "0"], "7", "node-2"),
        (["0", "2", "6"], "2", "node-2"),
        (["0", "0", "0"], "1", "node-0"),
        (["4", "4", "0"], "4", "node-0"),
        (["8", "7", "0"], "1", "node-1"),
    ],
    ids=[
        "fullest-fits",
        "fullest-too-full",
        "second-fullest-exactly",
        "only-empty-fits",
        "order-of-nodes-irrelevant",
        "tie-lowest-id",
        "tie-between-two-full-nodes",
        "full-node-skipped",
    ],
)
def test_bin_packing_picks_the_fullest_node_that_fits(used_cpu, job_cpu, expected):
    node_list = [
        n
        for i, cpu in enumerate(used_cpu)
        for n in nodes(1, start=i, used=res(cpu, "1Gi") if cpu != "0" else None)
    ]
    assert placed(schedule(node_list, [job(cpu=job_cpu)])) == {"a-000": expected}


def test_bin_packing_weighs_every_resource():
    # node-0 has less cpu free, node-1 much less memory free: node-1 is fuller overall.
    node_list = nodes(1, used=res("4", "0")) + nodes(1, start=1, used=res("2", "28Gi"))
    assert placed(schedule(node_list, [job(cpu="1", memory="1Gi")])) == {"a-000": "node-1"}


def test_bin_packing_fills_one_node_before_the_next():
    result = schedule(nodes(3), jobs("a", 10))
    assert Counter(placed(result).values()) == {"node-0": 8, "node-1": 2}


def test_bin_packing_keeps_big_holes_for_big_jobs():
    # Four 2-cpu jobs go first; packed onto one node they leave a whole node for the 8-cpu job.
    job_list = jobs("a", 4, "2", "1Gi") + [job("a-999", cpu="8", memory="1Gi")]
    result = schedule(nodes(2), job_list)
    assert result.unschedulable == {}
    assert placed(result)["a-999"] == "node-1"


def test_leases_name_the_node_and_its_executor():
    node_list = nodes(1, "1", "4Gi", executor="east") + nodes(1, "8", "32Gi", executor="west")
    result = schedule(node_list, jobs("a", 2))
    assert result.leases == [
        Lease(job_id="a-000", queue="a", executor="east", node="node-0", node_id="east/node-0"),
        Lease(job_id="a-001", queue="a", executor="west", node="node-0", node_id="west/node-0"),
    ]


# --- effects on the inputs and determinism ----------------------------------------------------


def test_input_nodes_allocated_is_updated():
    node_list = nodes(1, used=res("2", "2Gi")) + nodes(2, start=1)
    job_list = jobs("a", 3, "2", "8Gi") + jobs("b", 2, "1", "1Gi")
    result = schedule(node_list, job_list)
    by_node: dict[str, Resources] = {}
    for lease in result.leases:
        request = next(j.requests for j in job_list if j.id == lease.job_id)
        by_node[lease.node] = by_node.get(lease.node, Resources()) + request
    assert by_node  # something was placed
    initial = {"node-0": res("2", "2Gi"), "node-1": Resources(), "node-2": Resources()}
    for node in node_list:
        assert node.allocated == initial[node.name] + by_node.get(node.name, Resources())
        assert node.free == node.allocatable - node.allocated


def test_node_free():
    node = nodes(1, used=res("3", "5Gi"))[0]
    assert node.free == res("5", "27Gi")


def test_queue_state_is_not_changed():
    queue_list = [QueueState("a", allocated=res("1", "1Gi"))]
    schedule(nodes(1), jobs("a", 2), queue_list)
    assert queue_list[0].allocated == res("1", "1Gi")


def _scenario():
    node_list = (
        nodes(2, labels={"zone": "a"})
        + nodes(2, "16", "64Gi", start=2, labels={"zone": "b"}, taints=(Taint("spot", "true"),))
        + nodes(1, "4", "16Gi", start=4, used=res("1", "1Gi"))
    )
    job_list = (
        jobs("a", 12, "2", "4Gi")
        + jobs("b", 12, "1", "8Gi", start=0, tolerations=(Toleration("spot", "Exists"),))
        + jobs(
            "c", 6, "3", "1Gi", node_selector={"zone": "b"}, tolerations=(Toleration("", "Exists"),)
        )
        + [job("a-100", cpu="40"), job("b-100", queue="b", urgency=5, cpu="1")]
        + jobs("d", 3)
    )
    queue_list = [
        QueueState("a"),
        QueueState("b", priority_factor=2.0),
        QueueState("c", allocated=res("2", "2Gi")),
        QueueState("d", cordoned=True),
    ]
    return node_list, job_list, queue_list


def test_every_job_gets_a_lease_or_a_reason():
    node_list, job_list, queue_list = _scenario()
    result = schedule(node_list, job_list, queue_list, max_leases=25)
    assert_every_job_accounted_for(result, job_list)
    assert len(result.leases) <= 25
    for node in node_list:
        assert node.allocated.fits_in(node.allocatable)


@pytest.mark.parametrize("seed", range(5))
def test_results_are_deterministic(seed):
    node_list, job_list, queue_list = _scenario()
    expected = schedule(node_list, job_list, queue_list, max_leases=25)
    assert expected.leases and expected.unschedulable

    node_list, job_list, queue_list = _scenario()
    rng = random.Random(seed)
    rng.shuffle(node_list)
    rng.shuffle(job_list)
    rng.shuffle(queue_list)
    result = schedule(node_list, job_list, queue_list, max_leases=25)
    assert result.leases == expected.leases
    assert result.unschedulable == expected.unschedulable


def test_jobs_may_be_any_iterable():
    result = schedule_round(
        nodes=nodes(1), queues=queues("a"), jobs=iter(jobs("a", 2)), max_leases=10
    )
    assert len(result.leases) == 2


def test_a_shape_that_found_no_room_does_not_stop_smaller_shapes():
    # Jobs in id order: two 6-cpu jobs, then four 2-cpu jobs, on two 8-cpu nodes. The second
    # 6-cpu job finds no room once both nodes hold one; the 2-cpu jobs still fill the gaps.
    node_list = nodes(2, "8", "32Gi")
    job_list = jobs("a", 3, "6", "4Gi") + jobs("a", 4, "2", "4Gi", start=3)
    result = schedule(node_list, job_list)
    assert sorted(placed(result)) == ["a-000", "a-001", "a-003", "a-004"]
    assert result.unschedulable == {
        "a-002": REASON_NO_RESOURCES,
        "a-005": REASON_NO_RESOURCES,
        "a-006": REASON_NO_RESOURCES,
    }
    assert [n.allocated for n in node_list] == [res("8", "8Gi"), res("8", "8Gi")]


def test_jobs_of_one_shape_fill_nodes_in_order_without_skipping_room():
    # 3 nodes with room for 2 jobs each: six jobs of one shape take every slot, in node order.
    node_list = nodes(3, "2", "8Gi")
    result = schedule(node_list, jobs("a", 7, "1", "4Gi"))
    assert [lease.node for lease in result.leases] == [
        "node-0",
        "node-0",
        "node-1",
        "node-1",
        "node-2",
        "node-2",
    ]
    assert result.unschedulable == {"a-006": REASON_NO_RESOURCES}


def test_busier_nodes_are_filled_first():
    node_list = nodes(1, "8", "32Gi") + nodes(1, "8", "32Gi", start=1, used=res("4", "4Gi"))
    result = schedule(node_list, jobs("a", 1, "1", "1Gi"))
    assert placed(result) == {"a-000": "node-1"}
