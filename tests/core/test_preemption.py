"""Urgency and fair-share preemption in armada.core.scheduling."""

from __future__ import annotations

import pytest

from armada.core.quantity import Resources
from armada.core.scheduling import (
    REASON_NO_RESOURCES,
    QueueState,
    RunningJob,
    reason_fair_share_preempted,
    reason_urgency_preempted,
    schedule_round,
    synthetic_snapshot,
)
from tests.core.test_scheduling import job, jobs, nodes, per_queue, placed, res


def rj(
    id_: str,
    queue: str = "low",
    node: int = 0,
    cpu: str = "1",
    urgency: int = 0,
    preemptible: bool = True,
    gang_id: str = "",
) -> RunningJob:
    return RunningJob(
        id=id_,
        queue=queue,
        node_id=f"ex/node-{node}",
        requests=res(cpu, "1Gi"),
        urgency=urgency,
        preemptible=preemptible,
        gang_id=gang_id,
    )


def run(node_count, running, queued, node_cpu="8", queue_names=(), **kwargs):
    """Nodes and queues whose allocations include the running jobs."""
    node_list = nodes(node_count, node_cpu, "64Gi")
    by_id = {n.id: n for n in node_list}
    used: dict[str, Resources] = {}
    for r in running:
        by_id[r.node_id].allocated = by_id[r.node_id].allocated + r.requests
        used[r.queue] = used.get(r.queue, Resources()) + r.requests
    names = dict.fromkeys([*queue_names, *used, *(j.queue for j in queued)])
    queue_list = [QueueState(q, allocated=used.get(q, Resources())) for q in names]
    result = schedule_round(
        nodes=node_list,
        queues=queue_list,
        jobs=list(queued),
        max_leases=kwargs.pop("max_leases", 10_000),
        running=running,
        **kwargs,
    )
    for node in node_list:
        assert node.allocated.fits_in(node.allocatable)
    return result, node_list


def test_running_job_defaults():
    r = RunningJob("r", "q", "ex/node-0", res())
    assert (r.urgency, r.preemptible, r.gang_id) == (0, False, "")


def test_no_running_jobs_no_preemption():
    result, _ = run(1, [], [job(urgency=9, cpu="9")])
    assert result.preempted == {}


# --- urgency preemption ---------------------------------------------------------------------

URGENCY_CASES = [
    # (id, running on one 8-cpu node, queued job cpu, expected evictions)
    ("evicts-lower-urgency", [rj("r1", cpu="8")], "4", {"r1"}),
    ("equal-urgency-is-safe", [rj("r1", cpu="8", urgency=5)], "4", set()),
    ("higher-urgency-is-safe", [rj("r1", cpu="8", urgency=9)], "4", set()),
    ("non-preemptible-is-safe", [rj("r1", cpu="8", preemptible=False)], "4", set()),
    (
        "lowest-urgency-first",
        [rj("r1", cpu="4", urgency=1), rj("r2", cpu="4", urgency=0)],
        "4",
        {"r2"},
    ),
    ("newest-first-on-equal-urgency", [rj("r1", cpu="4"), rj("r2", cpu="4")], "4", {"r2"}),
    ("only-as-many-as-needed", [rj(f"r{i}", cpu="1") for i in range(8)], "3", {"r5", "r6", "r7"}),
    (
        "skips-protected-jobs",
        [rj("r1", cpu="4"), rj("r2", cpu="4", preemptible=False)],
        "4",
        {"r1"},
    ),
    (
        "not-enough-evictable-room",
        [rj("r1", cpu="4"), rj("r2", cpu="4", urgency=5)],
        "6",
        set(),
    ),
]


@pytest.mark.parametrize(
    ("running", "cpu", "evicted"),
    [case[1:] for case in URGENCY_CASES],
    ids=[case[0] for case in URGENCY_CASES],
)
def test_urgency_preemption(running, cpu, evicted):
    urgent = job("hi-000", "hi", cpu=cpu, urgency=5)
    result, node_list = run(1, running, [urgent], fair_share_preemption=False)
    assert set(result.preempted) == evicted
    if evicted:
        assert placed(result) == {"hi-000": "node-0"}
        assert set(result.preempted.values()) == {reason_urgency_preempted("hi-000", 5)}
        assert "hi-000" in reason_urgency_preempted("hi-000", 5)
        kept = sum(r.requests["cpu"] for r in running if r.id not in evicted)
        assert node_list[0].allocated["cpu"] == kept + urgent.requests["cpu"]
    else:
        assert result.leases == []
        assert result.unschedulable == {"hi-000": REASON_NO_RESOURCES}


def test_urgency_picks_the_node_needing_fewest_evictions():
    running = [rj(f"n0-{i}", node=0, cpu="2") for i in range(4)] + [rj("n1-0", node=1, cpu="8")]
    result, _ = run(2, running, [job("hi-000", "hi", cpu="4", urgency=5)])
    assert set(result.preempted) == {"n1-0"}
    assert placed(result) == {"hi-000": "node-1"}


def test_urgency_prefers_free_room_to_eviction():
    running = [rj("r1", node=0, cpu="8")]
    result, _ = run(2, running, [job("hi-000", "hi", cpu="4", urgency=5)])
    assert result.preempted == {}
    assert placed(result) == {"hi-000": "node-1"}


@pytest.mark.parametrize(
    ("other_urgency", "evicted", "node"),
    [(3, {"other"}, "node-2"), (5, {"g-0", "g-1"}, "node-0")],
    ids=["a-gang-counts-every-member", "whole-gang-goes"],
)
def test_evicting_a_gang_member_evicts_the_whole_gang(other_urgency, evicted, node):
    running = [
        rj("g-0", node=0, cpu="8", gang_id="g"),
        rj("g-1", node=1, cpu="8", gang_id="g"),
        rj("other", node=2, cpu="8", urgency=other_urgency),
    ]
    result, node_list = run(3, running, [job("hi-000", "hi", cpu="8", urgency=5)])
    # Evicting g-0 takes g-1 along: two evictions, so one lone job elsewhere is cheaper.
    assert set(result.preempted) == evicted
    assert placed(result) == {"hi-000": node}
    if "g-1" in evicted:
        assert node_list[1].allocated == Resources()


def test_a_gang_with_a_protected_member_is_not_evicted():
    running = [
        rj("g-0", node=0, cpu="8", gang_id="g"),
        rj("g-1", node=1, cpu="8", gang_id="g", preemptible=False),
    ]
    result, _ = run(2, running, [job("hi-000", "hi", cpu="8", urgency=5)])
    assert result.preempted == {}
    assert result.unschedulable == {"hi-000": REASON_NO_RESOURCES}


def test_evicted_room_is_used_by_later_jobs_too():
    running = [rj("r1", cpu="8")]
    queued = [job("hi-000", "hi", cpu="4", urgency=5), job("hi-001", "hi", cpu="4", urgency=5)]
    result, _ = run(1, running, queued, fair_share_preemption=False)
    assert set(result.preempted) == {"r1"}
    assert set(placed(result)) == {"hi-000", "hi-001"}


# --- fair-share preemption ------------------------------------------------------------------


def test_queue_over_its_share_gives_room_to_a_waiting_queue():
    running = [rj(f"a-r{i}", "a") for i in range(8)]
    result, _ = run(1, running, jobs("b", 8))
    # Two equal queues on 8 slots: a keeps 4, b gets 4; a loses its newest jobs.
    assert set(result.preempted) == {"a-r4", "a-r5", "a-r6", "a-r7"}
    assert per_queue(result) == {"b": 4}
    assert result.preempted["a-r7"] == reason_fair_share_preempted("a", "b-000", "b")
    assert "queue a is over its fair share" in result.preempted["a-r7"]


def test_fair_share_preemption_can_be_switched_off():
    running = [rj(f"a-r{i}", "a") for i in range(8)]
    result, _ = run(1, running, jobs("b", 8), fair_share_preemption=False)
    assert result.preempted == {}
    assert result.leases == []


@pytest.mark.parametrize(
    ("factors", "kept_by_a"),
    [({"a": 1.0, "b": 1.0}, 4), ({"a": 1.0, "b": 3.0}, 6), ({"a": 3.0, "b": 1.0}, 2)],
    ids=["equal", "a-weighs-more", "b-weighs-more"],
)
def test_share_is_weighted_by_priority_factor(factors, kept_by_a):
    running = [rj(f"a-r{i}", "a") for i in range(8)]
    node_list = nodes(1, "8", "64Gi", used=res("8", "8Gi"))
    queue_list = [
        QueueState("a", factors["a"], allocated=res("8", "8Gi")),
        QueueState("b", factors["b"]),
    ]
    result = schedule_round(
        nodes=node_list, queues=queue_list, jobs=jobs("b", 8), max_leases=100, running=running
    )
    assert len(result.preempted) == 8 - kept_by_a
    assert per_queue(result).get("b", 0) == 8 - kept_by_a


def test_only_preemptible_jobs_are_taken():
    running = [rj(f"a-r{i}", "a", preemptible=i < 2) for i in range(8)]
    result, _ = run(1, running, jobs("b", 8))
    assert set(result.preempted) == {"a-r0", "a-r1"}
    assert per_queue(result) == {"b": 2}


def test_protected_fraction_is_a_floor():
    # a runs one 8-cpu job (the whole pool); taking it would leave a with nothing, below half
    # of its share of 0.5.
    running = [rj("a-big", "a", cpu="8")]
    result, _ = run(1, running, jobs("b", 4))
    assert result.preempted == {}
    # With no protection the job can go, and the room it leaves is used.
    result, _ = run(1, running, jobs("b", 4), protected_fraction=0.0)
    assert set(result.preempted) == {"a-big"}
    assert per_queue(result) == {"b": 4}


def test_nothing_is_evicted_for_a_job_that_could_not_be_placed_anyway():
    running = [rj(f"a-r{i}", "a") for i in range(8)]
    result, _ = run(1, running, [job("b-000", "b", cpu="6")])
    # b-000 needs 6 cpu: it would take b above its half share, so a keeps everything.
    assert result.preempted == {}
    assert result.unschedulable == {"b-000": REASON_NO_RESOURCES}


def test_idle_queues_do_not_count_towards_the_shares():
    # c is known but has nothing queued or running: a and b split the pool.
    running = [rj(f"a-r{i}", "a") for i in range(8)]
    result, _ = run(1, running, jobs("b", 8), queue_names=("c",))
    assert per_queue(result) == {"b": 4}


def test_a_queue_at_its_share_is_not_preempted():
    running = [rj(f"a-r{i}", "a") for i in range(4)] + [rj(f"b-r{i}", "b") for i in range(4)]
    result, _ = run(1, running, jobs("b", 4, start=10) + jobs("a", 4, start=10))
    assert result.preempted == {}


@pytest.mark.parametrize(
    ("waiting", "evicted"),
    [(1, {"a-r7"}), (2, {"a-r6", "a-r7"}), (3, {"a-r5", "a-r6", "a-r7"})],
    ids=["one-waiting", "two-waiting", "three-waiting"],
)
def test_only_as_much_is_taken_as_the_waiting_jobs_use(waiting, evicted):
    running = [rj(f"a-r{i}", "a") for i in range(8)]
    result, node_list = run(1, running, jobs("b", waiting))
    assert set(result.preempted) == evicted
    assert per_queue(result) == {"b": waiting}
    assert node_list[0].free["cpu"] == 0


def test_fair_share_takes_a_running_gang_whole():
    # a holds both 4-cpu nodes; its newest jobs are the gang a-z0 (node-0) and a-z1 (node-1).
    running = [rj(f"a-r{i}", "a", node=i // 3) for i in range(6)] + [
        rj("a-z0", "a", node=0, gang_id="z"),
        rj("a-z1", "a", node=1, gang_id="z"),
    ]
    result, node_list = run(2, running, [job("b-000", "b")], node_cpu="4")
    reason = reason_fair_share_preempted("a", "b-000", "b")
    assert result.preempted == {"a-z0": reason, "a-z1": reason}
    assert placed(result) == {"b-000": "node-0"}
    assert [n.allocated["cpu"] for n in node_list] == [4000, 3000]


def test_fair_share_preemption_respects_the_round_limit():
    running = [rj(f"a-r{i}", "a") for i in range(8)]
    result, _ = run(1, running, jobs("b", 8), max_leases=2)
    assert per_queue(result) == {"b": 2}
    assert len(result.preempted) == 2


def test_preempted_jobs_are_neither_leased_nor_unschedulable():
    running = [rj(f"a-r{i}", "a") for i in range(8)]
    queued = jobs("b", 8) + [job("hi-000", "hi", urgency=5, cpu="2")]
    result, _ = run(1, running, queued)
    leased = {lease.job_id for lease in result.leases}
    assert result.preempted
    assert not set(result.preempted) & (leased | set(result.unschedulable))
    assert leased | set(result.unschedulable) == {j.id for j in queued}
    for reason in result.unschedulable.values():
        assert reason


def test_a_victim_is_not_taken_below_its_share():
    # Shares: b 0.5 (priority factor 0.5), a 0.25, c 0.25. a runs 5 of 8 slots, c 3 that are
    # protected. b's 4-cpu job needs four of a's jobs, the fourth taking a from 2/8 to 1/8:
    # below a's share (though not below half of it), so nothing moves. A 3-cpu job may go.
    running = [rj(f"a-r{i}", "a") for i in range(5)] + [
        rj(f"c-r{i}", "c", preemptible=False) for i in range(3)
    ]
    queue_list = [
        QueueState("a", allocated=res("5", "5Gi")),
        QueueState("b", 0.5),
        QueueState("c", allocated=res("3", "3Gi")),
    ]
    for cpu, evicted in (("4", 0), ("3", 3)):
        node_list = nodes(1, "8", "64Gi", used=res("8", "8Gi"))
        result = schedule_round(
            nodes=node_list,
            queues=queue_list,
            jobs=[job("b-000", "b", cpu=cpu)],
            max_leases=10,
            running=running,
        )
        assert len(result.preempted) == evicted
        assert per_queue(result) == ({"b": 1} if evicted else {})


def test_a_waiting_queue_may_not_take_more_than_its_share():
    # Three active queues (c waits with a job no node matches): shares of 1/3 each. A 3-cpu
    # job would take b to 3/8, above 1/3, so a keeps its jobs; a 2-cpu job may go.
    running = [rj(f"a-r{i}", "a") for i in range(8)]
    stuck = job("c-000", "c", node_selector={"zone": "x"})
    result, _ = run(1, running, [job("b-000", "b", cpu="3"), stuck])
    assert result.preempted == {}
    result, _ = run(1, running, [job("b-000", "b", cpu="2"), stuck])
    assert set(result.preempted) == {"a-r6", "a-r7"}


def test_synthetic_snapshot_exercises_the_whole_round():
    snapshot = synthetic_snapshot(node_count=2, queue_count=3, job_count=60, running_per_node=64)
    result = schedule_round(**snapshot)
    assert result.leases and result.preempted and result.unschedulable
    leased = {lease.job_id for lease in result.leases}
    assert leased | set(result.unschedulable) == {j.id for j in snapshot["jobs"]}
    for node in snapshot["nodes"]:
        assert node.allocated.fits_in(node.allocatable)
    # Deterministic: a second build gives the same round.
    again = schedule_round(
        **synthetic_snapshot(node_count=2, queue_count=3, job_count=60, running_per_node=64)
    )
    assert (again.leases, again.preempted) == (result.leases, result.preempted)


def test_the_order_of_running_jobs_does_not_matter():
    running = [rj(f"a-r{i}", "a", urgency=i % 2) for i in range(8)]
    queued = jobs("b", 3) + [job("hi-000", "hi", urgency=5, cpu="2")]
    expected, _ = run(1, running, queued)
    shuffled, _ = run(1, list(reversed(running)), queued)
    assert expected.preempted and expected.leases
    assert (shuffled.leases, shuffled.preempted) == (expected.leases, expected.preempted)
