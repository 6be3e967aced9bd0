"""Gangs in armada.core.scheduling: all members in one round, or none."""

from __future__ import annotations

import pytest

from armada.core.scheduling import (
    REASON_NO_MATCH,
    REASON_NO_RESOURCES,
    REASON_ROUND_LIMIT,
    REASON_TOO_BIG,
    QueuedJob,
    QueueState,
    RunningJob,
    reason_fair_share_preempted,
    reason_gang_incomplete,
    reason_gang_label_not_indexed,
    reason_gang_no_fit,
    reason_gang_no_uniform_fit,
    reason_gang_oversized,
    reason_urgency_preempted,
    schedule_round,
)
from tests.core.test_scheduling import (
    assert_every_job_accounted_for,
    job,
    nodes,
    per_queue,
    placed,
    queues,
    res,
    slots,
)


def gang(
    gang_id: str,
    n: int,
    cardinality: int | None = None,
    queue: str = "a",
    cpu: str = "1",
    memory: str = "4Gi",
    *,
    label: str = "",
    start: int = 0,
    **fields,
) -> list[QueuedJob]:
    return [
        job(
            f"{queue}-{gang_id}-{i}",
            queue,
            cpu,
            memory,
            gang_id=gang_id,
            gang_cardinality=n if cardinality is None else cardinality,
            gang_uniformity_label=label,
            **fields,
        )
        for i in range(start, start + n)
    ]


def run(node_list, job_list, max_leases=10_000, indexed=frozenset(), queue_list=None):
    job_list = list(job_list)
    if queue_list is None:
        queue_list = queues(*dict.fromkeys(j.queue for j in job_list))
    return schedule_round(
        nodes=node_list,
        queues=queue_list,
        jobs=job_list,
        max_leases=max_leases,
        indexed_node_labels=frozenset(indexed),
    )


def test_a_gang_job_defaults_to_no_gang():
    j = job()
    assert (j.gang_id, j.gang_cardinality, j.gang_uniformity_label) == ("", 1, "")


GANG_FIT_CASES = [
    # (id, nodes, members, member cpu, all placed?)
    ("fits-on-one-node", lambda: nodes(1), 4, "2", True),
    ("spans-two-nodes", lambda: nodes(2), 4, "4", True),
    ("exactly-full", lambda: slots(3), 3, "1", True),
    ("one-member-too-many", lambda: slots(3), 4, "1", False),
    ("members-do-not-fit-the-gaps", lambda: nodes(2, used=res("5", "1Gi")), 2, "4", False),
    ("single-member-gang", lambda: nodes(1), 1, "8", True),
]


@pytest.mark.parametrize(
    ("make_nodes", "members", "cpu", "all_placed"),
    [case[1:] for case in GANG_FIT_CASES],
    ids=[case[0] for case in GANG_FIT_CASES],
)
def test_all_or_nothing(make_nodes, members, cpu, all_placed):
    node_list = make_nodes()
    before = [n.allocated for n in node_list]
    job_list = gang("g", members, cpu=cpu)
    result = run(node_list, job_list)
    assert_every_job_accounted_for(result, job_list)
    if all_placed:
        assert set(placed(result)) == {j.id for j in job_list}
    else:
        assert result.leases == []
        assert len(set(result.unschedulable.values())) == 1
        assert set(result.unschedulable) == {j.id for j in job_list}
        # Nothing of the trial placement is left on the nodes.
        assert [n.allocated for n in node_list] == before


def test_failed_gang_reason_names_the_member_and_why():
    job_list = gang("g", 3)
    result = run(slots(2), job_list)
    reason = reason_gang_no_fit("g", "a-g-2", REASON_NO_RESOURCES)
    assert result.unschedulable == dict.fromkeys([j.id for j in job_list], reason)
    assert "a-g-2" in reason and REASON_NO_RESOURCES in reason


@pytest.mark.parametrize(
    ("fields", "why"),
    [({"cpu": "99"}, REASON_TOO_BIG), ({"node_selector": {"zone": "x"}}, REASON_NO_MATCH)],
    ids=["too-big", "no-match"],
)
def test_failed_gang_reason_kinds(fields, why):
    result = run(nodes(2), gang("g", 2, **fields))
    assert set(result.unschedulable.values()) == {reason_gang_no_fit("g", "a-g-0", why)}


@pytest.mark.parametrize(
    ("queued", "cardinality", "reason"),
    [
        (1, 3, reason_gang_incomplete(1, 3)),
        (2, 3, reason_gang_incomplete(2, 3)),
        (4, 3, reason_gang_oversized(4, 3)),
    ],
    ids=["one-of-three", "two-of-three", "more-than-cardinality"],
)
def test_gang_waits_until_every_member_is_queued(queued, cardinality, reason):
    job_list = gang("g", queued, cardinality)
    result = run(nodes(4), job_list)
    assert result.leases == []
    assert result.unschedulable == dict.fromkeys([j.id for j in job_list], reason)


def test_incomplete_reason_text():
    assert reason_gang_incomplete(2, 5) == "gang incomplete: 2 of 5 members queued"


def test_a_failed_gang_does_not_block_later_jobs():
    job_list = gang("g", 3, cpu="4") + [job("a-z", cpu="2")]
    result = run(nodes(1), job_list)
    assert placed(result) == {"a-z": "node-0"}
    assert set(result.unschedulable) == {"a-g-0", "a-g-1", "a-g-2"}


def test_gang_is_scheduled_when_its_first_member_comes_up():
    # Members of gang g sort between a-000 and a-z; the whole gang goes at a-g-0's turn and
    # so comes before a-z, which then finds no room.
    job_list = [job("a-000", cpu="4"), *gang("g", 2, cpu="2"), job("a-z", cpu="4")]
    result = run(nodes(1), job_list)
    assert [lease.job_id for lease in result.leases] == ["a-000", "a-g-0", "a-g-1"]
    assert result.unschedulable == {"a-z": REASON_NO_RESOURCES}


def test_gang_members_are_only_from_the_same_queue():
    # Queue b holds a job with the same gang id: it is not a member of a's gang.
    job_list = gang("g", 2, 3) + gang("g", 1, 3, queue="b", start=2)
    result = run(nodes(2), job_list)
    assert result.leases == []
    assert result.unschedulable["a-g-0"] == reason_gang_incomplete(2, 3)
    assert result.unschedulable["b-g-2"] == reason_gang_incomplete(1, 3)


def test_two_gangs_in_one_queue_are_separate_units():
    job_list = gang("g1", 2, cpu="4") + gang("g2", 2, cpu="4")
    result = run(nodes(1), job_list)
    assert set(placed(result)) == {"a-g1-0", "a-g1-1"}
    assert set(result.unschedulable) == {"a-g2-0", "a-g2-1"}


def test_gang_counts_toward_fair_share_as_a_whole():
    # a's gang of 4 goes first (name order on ties); then a's cost is that of all four
    # members, so b gets the next four turns.
    job_list = (
        gang("g", 4)
        + [job(f"a-x{i}", "a") for i in range(4)]
        + [job(f"b-{i}", "b") for i in range(8)]
    )
    result = run(slots(8), job_list)
    assert per_queue(result) == {"a": 4, "b": 4}
    assert [lease.job_id for lease in result.leases] == [
        "a-g-0",
        "a-g-1",
        "a-g-2",
        "a-g-3",
        "b-0",
        "b-1",
        "b-2",
        "b-3",
    ]


def test_gang_needs_room_under_the_round_limit_for_every_member():
    job_list = gang("g", 3) + [job("a-z")]
    result = run(nodes(1), job_list, max_leases=2)
    assert placed(result) == {"a-z": "node-0"}
    assert result.unschedulable == dict.fromkeys(["a-g-0", "a-g-1", "a-g-2"], REASON_ROUND_LIMIT)


# --- node uniformity ----------------------------------------------------------------------


def zoned(*spec: tuple[str, str]) -> list:
    """One 8-cpu node per (zone, used cpu)."""
    out = []
    for i, (zone, used) in enumerate(spec):
        out += nodes(
            1, start=i, labels={"zone": zone}, used=res(used, "0") if used != "0" else None
        )
    return out


UNIFORM_CASES = [
    # (id, nodes, members, cpu, expected zone or None)
    ("first-zone-fits", [("a", "0"), ("b", "0")], 2, "4", "a"),
    ("spans-nodes-of-one-zone", [("a", "0"), ("a", "0"), ("b", "0")], 4, "4", "a"),
    ("first-zone-too-small", [("a", "0"), ("b", "0"), ("b", "0")], 3, "4", "b"),
    ("first-zone-busy", [("a", "6"), ("b", "0"), ("a", "6")], 2, "4", "b"),
    # Together the zones have room for 4 members, but no single zone does.
    ("no-zone-big-enough", [("a", "0"), ("b", "0")], 3, "4", None),
]


@pytest.mark.parametrize(
    ("spec", "members", "cpu", "zone"),
    [case[1:] for case in UNIFORM_CASES],
    ids=[case[0] for case in UNIFORM_CASES],
)
def test_uniformity_label_keeps_members_in_one_zone(spec, members, cpu, zone):
    node_list = zoned(*spec)
    zone_of = {n.name: n.labels["zone"] for n in node_list}
    job_list = gang("g", members, cpu=cpu, label="zone")
    result = run(node_list, job_list, indexed={"zone"})
    if zone is None:
        assert result.leases == []
        reason = reason_gang_no_uniform_fit("g", "zone")
        assert result.unschedulable == dict.fromkeys([j.id for j in job_list], reason)
    else:
        assert len(result.leases) == members
        assert {zone_of[lease.node] for lease in result.leases} == {zone}


def test_without_uniformity_label_the_same_gang_spreads_over_zones():
    node_list = zoned(("a", "0"), ("b", "0"))
    result = run(node_list, gang("g", 3, cpu="4"))
    assert len(result.leases) == 3


def test_nodes_without_the_label_are_not_used():
    node_list = nodes(2) + nodes(1, start=2, labels={"zone": "a"})
    result = run(node_list, gang("g", 2, cpu="4", label="zone"), indexed={"zone"})
    assert {lease.node for lease in result.leases} == {"node-2"}


def test_uniformity_label_must_be_indexed():
    node_list = zoned(("a", "0"), ("a", "0"))
    job_list = gang("g", 2, label="zone")
    result = run(node_list, job_list, indexed={"rack"})
    assert result.leases == []
    reason = reason_gang_label_not_indexed("zone")
    assert result.unschedulable == dict.fromkeys([j.id for j in job_list], reason)
    assert "not indexed" in reason
    # Indexed, the same gang starts.
    assert len(run(zoned(("a", "0"), ("a", "0")), job_list, indexed={"zone"}).leases) == 2


# --- urgency preemption for a gang ----------------------------------------------------------


def _full_pool(preemptible=(True, True), urgency=0):
    """Two 8-cpu nodes, each full with one running 8-cpu job of queue ``low``."""
    node_list = nodes(2, used=res("8", "8Gi"))
    running = [
        RunningJob(
            f"low-r{i}",
            "low",
            f"ex/node-{i}",
            res("8", "8Gi"),
            urgency=urgency,
            preemptible=preemptible[i],
        )
        for i in range(2)
    ]
    queue_list = [QueueState("low", allocated=res("16", "16Gi")), QueueState("a")]
    return node_list, running, queue_list


@pytest.mark.parametrize(
    ("preemptible", "running_urgency", "placed_all"),
    [
        ((True, True), 0, True),
        ((True, False), 0, False),  # one member would have no room: nothing is evicted
        ((True, True), 5, False),  # equal urgency is never evicted
    ],
    ids=["both-nodes-evictable", "one-node-protected", "equal-urgency"],
)
def test_an_urgent_gang_evicts_for_all_members_or_none(preemptible, running_urgency, placed_all):
    node_list, running, queue_list = _full_pool(preemptible, running_urgency)
    job_list = gang("g", 2, cpu="6", urgency=5)
    result = schedule_round(
        nodes=node_list,
        queues=queue_list,
        jobs=job_list,
        max_leases=10,
        running=running,
        fair_share_preemption=False,
    )
    if placed_all:
        assert placed(result) == {"a-g-0": "node-0", "a-g-1": "node-1"}
        assert result.preempted == {
            "low-r0": reason_urgency_preempted("a-g-0", 5),
            "low-r1": reason_urgency_preempted("a-g-1", 5),
        }
        assert [n.allocated for n in node_list] == [res("6", "4Gi"), res("6", "4Gi")]
    else:
        assert result.leases == []
        assert result.preempted == {}
        assert set(result.unschedulable) == {"a-g-0", "a-g-1"}
        assert [n.allocated for n in node_list] == [res("8", "8Gi"), res("8", "8Gi")]


def test_gang_members_share_room_one_eviction_made():
    # One eviction on node-0 frees 8 cpu: both 4-cpu members fit there.
    node_list, running, queue_list = _full_pool()
    result = schedule_round(
        nodes=node_list,
        queues=queue_list,
        jobs=gang("g", 2, cpu="4", urgency=5),
        max_leases=10,
        running=running,
        fair_share_preemption=False,
    )
    assert set(result.preempted) == {"low-r0"}
    assert placed(result) == {"a-g-0": "node-0", "a-g-1": "node-0"}


# --- fair-share preemption for a gang -------------------------------------------------------


def _fair_pool(preemptible_on_node_1: int):
    """Two 8-cpu nodes full with queue a's 1-cpu jobs; node-0's are all protected, and the
    newest ``preemptible_on_node_1`` on node-1 may be preempted."""
    node_list = nodes(2, used=res("8", "8Gi"))
    running = [
        RunningJob(
            f"a-r{i:02d}",
            "a",
            f"ex/node-{i // 8}",
            res("1", "1Gi"),
            preemptible=i >= 16 - preemptible_on_node_1,
        )
        for i in range(16)
    ]
    queue_list = [QueueState("a", allocated=res("16", "16Gi")), QueueState("b")]
    return node_list, running, queue_list


@pytest.mark.parametrize(
    ("preemptible", "placed_all"),
    [(8, True), (5, False)],
    ids=["room-for-every-member", "room-for-one-member-only"],
)
def test_fair_share_preemption_places_a_gang_whole_or_not_at_all(preemptible, placed_all):
    node_list, running, queue_list = _fair_pool(preemptible)
    job_list = gang("g", 2, queue="b", cpu="4")
    result = schedule_round(
        nodes=node_list, queues=queue_list, jobs=job_list, max_leases=10, running=running
    )
    if placed_all:
        assert placed(result) == {"b-g-0": "node-1", "b-g-1": "node-1"}
        assert set(result.preempted) == {f"a-r{i:02d}" for i in range(8, 16)}
        assert result.preempted["a-r15"] == reason_fair_share_preempted("a", "b-g-0", "b")
        assert result.preempted["a-r08"] == reason_fair_share_preempted("a", "b-g-1", "b")
    else:
        assert result.leases == []
        assert result.preempted == {}
        assert set(result.unschedulable) == {"b-g-0", "b-g-1"}
        assert [n.allocated for n in node_list] == [res("8", "8Gi"), res("8", "8Gi")]


def test_a_gang_may_not_take_its_queue_above_its_share():
    # Three 4-cpu members would give b 12/16, above its half share: a keeps its jobs.
    node_list, running, queue_list = _fair_pool(8)
    result = schedule_round(
        nodes=node_list,
        queues=queue_list,
        jobs=gang("g", 3, queue="b", cpu="4"),
        max_leases=10,
        running=running,
    )
    assert result.preempted == {}
    assert result.leases == []


def test_an_urgent_gang_member_takes_the_node_needing_fewest_evictions():
    # node-0 is full of four 2-cpu jobs, node-1 holds one 8-cpu job: one eviction is enough
    # there for a 4-cpu member, two would be needed on node-0.
    node_list = nodes(2, used=res("8", "8Gi"))
    running = [
        RunningJob(f"low-a{i}", "low", "ex/node-0", res("2", "2Gi"), preemptible=True)
        for i in range(4)
    ] + [RunningJob("low-b", "low", "ex/node-1", res("8", "8Gi"), preemptible=True)]
    result = schedule_round(
        nodes=node_list,
        queues=[QueueState("low", allocated=res("16", "16Gi")), QueueState("a")],
        jobs=gang("g", 1, cpu="4", urgency=5),
        max_leases=10,
        running=running,
        fair_share_preemption=False,
    )
    assert set(result.preempted) == {"low-b"}
    assert placed(result) == {"a-g-0": "node-1"}
