"""armada.core.scheduling: queued jobs given per queue in order (``queued=``), pulled lazily,
with gang members from the ``gangs`` mapping; ``limit_reached`` and ``considered``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pytest

from armada.core.scheduling import (
    REASON_CORDONED,
    REASON_NO_RESOURCES,
    REASON_ROUND_LIMIT,
    QueuedJob,
    QueueState,
    RoundResult,
    reason_gang_incomplete,
    schedule_round,
    synthetic_snapshot,
)
from tests.core.test_gangs import gang
from tests.core.test_scheduling import job, jobs, nodes, per_queue, placed, queues, slots


class Counted:
    """An iterator over ``items`` that records how many were pulled."""

    def __init__(self, items: Iterable[QueuedJob]) -> None:
        self._it = iter(items)
        self.pulled = 0

    def __iter__(self) -> Iterator[QueuedJob]:
        return self

    def __next__(self) -> QueuedJob:
        item = next(self._it)
        self.pulled += 1
        return item


class Untouchable:
    """An iterable the round must never iterate."""

    def __iter__(self) -> Iterator[QueuedJob]:
        raise AssertionError("a cordoned queue's jobs were iterated")


def in_order(job_list: Iterable[QueuedJob]) -> dict[str, list[QueuedJob]]:
    by_queue: dict[str, list[QueuedJob]] = {}
    for j in sorted(job_list, key=QueuedJob.order_key):
        by_queue.setdefault(j.queue, []).append(j)
    return by_queue


def gangs_of(job_list: Iterable[QueuedJob]) -> dict[tuple[str, str], list[QueuedJob]]:
    found: dict[tuple[str, str], list[QueuedJob]] = {}
    for j in sorted(job_list, key=QueuedJob.order_key):
        if j.gang_id:
            found.setdefault((j.queue, j.gang_id), []).append(j)
    return found


def run_queued(node_list, job_list, queue_list=None, max_leases=10_000, **kwargs) -> RoundResult:
    job_list = list(job_list)
    if queue_list is None:
        queue_list = queues(*dict.fromkeys(j.queue for j in job_list))
    kwargs.setdefault("gangs", gangs_of(job_list))
    return schedule_round(
        nodes=node_list,
        queues=queue_list,
        queued={q: iter(js) for q, js in in_order(job_list).items()},
        max_leases=max_leases,
        **kwargs,
    )


# --- lazy pulling -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_leases", "slots_free", "most_pulled"),
    [(0, 10, 1), (1, 10, 2), (2, 10, 3), (5, 10, 6)],
    ids=["zero", "one", "two", "five"],
)
def test_a_queue_is_pulled_no_further_than_needed(max_leases, slots_free, most_pulled):
    source = Counted(jobs("a", 1000))
    result = schedule_round(
        nodes=slots(slots_free), queues=queues("a"), queued={"a": source}, max_leases=max_leases
    )
    assert source.pulled <= most_pulled
    assert result.limit_reached
    assert result.considered == max_leases
    assert len(result.leases) == min(max_leases, slots_free)


def test_without_reaching_the_limit_every_job_is_examined():
    # Room for one job: the others are pulled too, each to be told there is no room.
    source = Counted(jobs("a", 50))
    result = schedule_round(nodes=slots(1), queues=queues("a"), queued={"a": source}, max_leases=2)
    assert source.pulled == 50
    assert (len(result.leases), len(result.unschedulable)) == (1, 49)
    assert (result.limit_reached, result.considered) == (False, 50)


def test_each_queue_is_pulled_only_as_far_as_its_turns():
    sources = {q: Counted(jobs(q, 1000)) for q in "abcd"}
    result = schedule_round(nodes=nodes(4), queues=queues(*"abcd"), queued=sources, max_leases=8)
    assert per_queue(result) == dict.fromkeys("abcd", 2)
    # Two jobs taken from each queue, and one held ahead.
    assert {q: s.pulled for q, s in sources.items()} == dict.fromkeys("abcd", 3)


def test_an_exhausted_queue_is_not_a_reached_limit():
    result = run_queued(nodes(1), jobs("a", 3), max_leases=3)
    assert (len(result.leases), result.limit_reached, result.considered) == (3, False, 3)


def test_queued_jobs_may_be_lists_or_generators():
    def gen():
        yield from jobs("b", 2)

    result = schedule_round(
        nodes=nodes(1),
        queues=queues("a", "b"),
        queued={"a": jobs("a", 2), "b": gen()},
        max_leases=10,
    )
    assert per_queue(result) == {"a": 2, "b": 2}


def test_the_order_given_is_the_order_taken():
    # The round trusts the order of ``queued``: it does not sort.
    given = [job("a-002"), job("a-001"), job("a-000")]
    result = schedule_round(nodes=slots(2), queues=queues("a"), queued={"a": given}, max_leases=9)
    assert [lease.job_id for lease in result.leases] == ["a-002", "a-001"]
    assert result.unschedulable == {"a-000": REASON_NO_RESOURCES}


def test_unknown_queues_are_not_iterated():
    result = schedule_round(
        nodes=nodes(1),
        queues=queues("a"),
        queued={"a": jobs("a", 1), "x": Untouchable()},
        max_leases=10,
    )
    assert placed(result) == {"a-000": "node-0"}


# --- cordoned queues --------------------------------------------------------------------------


def test_a_cordoned_queue_is_not_iterated_and_gets_no_reasons():
    result = schedule_round(
        nodes=nodes(1),
        queues=[QueueState("a", cordoned=True), QueueState("b")],
        queued={"a": Untouchable(), "b": jobs("b", 2)},
        max_leases=10,
    )
    assert per_queue(result) == {"b": 2}
    assert result.unschedulable == {}
    assert result.considered == 2


def test_flat_jobs_of_a_cordoned_queue_still_get_the_reason_and_count_as_considered():
    job_list = jobs("a", 2) + jobs("b", 1)
    result = schedule_round(
        nodes=nodes(1),
        queues=[QueueState("a", cordoned=True), QueueState("b")],
        jobs=job_list,
        max_leases=10,
    )
    assert result.unschedulable == {"a-000": REASON_CORDONED, "a-001": REASON_CORDONED}
    assert result.considered == 3


# --- gangs ------------------------------------------------------------------------------------


def test_gang_members_come_from_the_mapping_and_are_skipped_later():
    job_list = [job("a-000", cpu="2"), *gang("g", 3, cpu="2"), job("a-z", cpu="2")]
    source = Counted(in_order(job_list)["a"])
    result = schedule_round(
        nodes=nodes(1),
        queues=queues("a"),
        queued={"a": source},
        gangs=gangs_of(job_list),
        max_leases=10,
    )
    assert [lease.job_id for lease in result.leases] == ["a-000", "a-g-0", "a-g-1", "a-g-2"]
    assert result.unschedulable == {"a-z": REASON_NO_RESOURCES}
    assert result.considered == 5  # each member once
    assert source.pulled == 5


def test_the_mapping_may_hold_members_the_iterator_has_not_reached():
    # Only the first member is in the queue's iterator (say, beyond a lookback); the gang
    # is still taken whole from the mapping.
    members = gang("g", 3)
    result = schedule_round(
        nodes=nodes(1),
        queues=queues("a"),
        queued={"a": members[:1]},
        gangs={("a", "g"): members},
        max_leases=10,
    )
    assert set(placed(result)) == {m.id for m in members}
    assert result.considered == 3


def test_a_gang_missing_from_the_mapping_is_the_members_seen():
    members = gang("g", 3)
    result = schedule_round(
        nodes=nodes(1), queues=queues("a"), queued={"a": members}, gangs={}, max_leases=10
    )
    reason = reason_gang_incomplete(1, 3)
    assert result.leases == []
    # The later members share the gang's reason; each is counted once.
    assert result.unschedulable == dict.fromkeys([m.id for m in members], reason)
    assert result.considered == 3


def test_a_gang_of_one_needs_no_mapping():
    member = gang("g", 1)
    result = schedule_round(nodes=nodes(1), queues=queues("a"), queued={"a": member}, max_leases=10)
    assert set(placed(result)) == {member[0].id}


def test_a_gang_refused_for_the_round_limit_still_gets_the_reason():
    job_list = gang("g", 3) + [job("a-z")]
    result = run_queued(nodes(1), job_list, max_leases=2)
    assert placed(result) == {"a-z": "node-0"}
    assert result.unschedulable == dict.fromkeys(["a-g-0", "a-g-1", "a-g-2"], REASON_ROUND_LIMIT)
    assert (result.limit_reached, result.considered) == (False, 4)


def test_members_are_placed_in_their_order_whatever_the_mapping_order():
    members = gang("g", 3, cpu="4")
    result = schedule_round(
        nodes=nodes(2),
        queues=queues("a"),
        queued={"a": members[:1]},
        gangs={("a", "g"): list(reversed(members))},
        max_leases=10,
    )
    assert placed(result) == {"a-g-0": "node-0", "a-g-1": "node-0", "a-g-2": "node-1"}


# --- errors -----------------------------------------------------------------------------------


def test_jobs_and_queued_together_are_refused():
    with pytest.raises(ValueError, match="either"):
        schedule_round(
            nodes=nodes(1),
            queues=queues("a"),
            jobs=jobs("a", 1),
            queued={"a": []},
            max_leases=1,
        )


def test_empty_jobs_with_queued_are_fine():
    result = schedule_round(
        nodes=nodes(1), queues=queues("a"), jobs=[], queued={"a": jobs("a", 1)}, max_leases=1
    )
    assert len(result.leases) == 1


def test_a_job_under_the_wrong_queue_is_refused():
    with pytest.raises(ValueError, match="queue b"):
        schedule_round(
            nodes=nodes(1), queues=queues("a", "b"), queued={"a": jobs("b", 1)}, max_leases=1
        )


# --- the two forms decide alike ---------------------------------------------------------------

SNAPSHOTS = [
    # (id, synthetic_snapshot arguments, max_leases)
    ("armada-shape", {"node_count": 3, "queue_count": 4, "job_count": 400}, None),
    ("armada-shape-limited", {"node_count": 3, "queue_count": 4, "job_count": 400}, 90),
    ("seed-1", {"node_count": 24, "queue_count": 4, "job_count": 500, "seed": 1}, None),
    ("seed-2", {"node_count": 30, "queue_count": 5, "job_count": 600, "seed": 2}, 150),
    ("seed-3", {"node_count": 12, "queue_count": 3, "job_count": 400, "seed": 3}, None),
    (
        "seed-4-few-running",
        {"node_count": 16, "queue_count": 6, "job_count": 500, "running_per_node": 20, "seed": 4},
        None,
    ),
    ("seed-5", {"node_count": 40, "queue_count": 4, "job_count": 800, "seed": 5}, 300),
]


@pytest.mark.parametrize(
    ("arguments", "max_leases"),
    [case[1:] for case in SNAPSHOTS],
    ids=[case[0] for case in SNAPSHOTS],
)
def test_flat_and_queued_forms_give_the_same_round(arguments, max_leases):
    flat_args = synthetic_snapshot(**arguments, max_leases=max_leases)
    queued_args = synthetic_snapshot(**arguments, max_leases=max_leases, queued=True)
    flat = schedule_round(**flat_args)
    lazy = schedule_round(**queued_args)
    assert flat.leases and flat.preempted
    assert lazy.leases == flat.leases
    assert lazy.preempted == flat.preempted
    assert lazy.unschedulable == flat.unschedulable
    assert (lazy.limit_reached, lazy.considered) == (flat.limit_reached, flat.considered)
    assert [n.allocated for n in queued_args["nodes"]] == [n.allocated for n in flat_args["nodes"]]
    for node in flat_args["nodes"]:
        assert node.allocated.fits_in(node.allocatable)


def test_the_synthetic_queued_form_makes_jobs_only_as_pulled():
    arguments = synthetic_snapshot(
        node_count=2, queue_count=3, job_count=3_000_000, queued=True, max_leases=10
    )
    result = schedule_round(**arguments)
    assert result.limit_reached and len(result.leases) == 10
    assert result.considered < 20


def test_a_gang_mapping_naming_another_gang_is_refused():
    members = gang("g", 2)
    with pytest.raises(ValueError, match="not a member of gang g"):
        schedule_round(
            nodes=nodes(1),
            queues=queues("a"),
            queued={"a": members},
            gangs={("a", "g"): gang("h", 2)},
            max_leases=10,
        )
