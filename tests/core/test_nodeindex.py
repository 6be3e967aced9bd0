"""armada.core.nodeindex and armada.core.victims against brute-force references: first fit
per shape, first fit on a gang's scratch copy, the node needing the fewest evictions, and the
eviction counts; then whole rounds against a round that searches by brute force."""

from __future__ import annotations

import random

import pytest

from armada.core import nodeindex, preemption, victims
from armada.core.nodeindex import NodeIndex, NodeView, fits
from armada.core.quantity import Resources
from armada.core.scheduling import (
    REASON_NO_MATCH,
    REASON_NO_RESOURCES,
    REASON_TOO_BIG,
    NodeState,
    QueuedJob,
    RunningJob,
    Taint,
    Toleration,
    node_matches,
    schedule_round,
    synthetic_snapshot,
)
from armada.core.snapshot import _shape
from armada.core.victims import Victims, missing_for, plan, same_queue_preemptible, urgency_accept

GI = 1024**3 * 1000


def r(cpu: int, mem: int = 1) -> Resources:
    return Resources({"cpu": cpu * 1000, "memory": mem * GI})


def random_pool(rng: random.Random, count: int) -> list[NodeState]:
    out = []
    for i in range(count):
        cpu = rng.choice([4, 8, 16])
        out.append(
            NodeState(
                id=f"ex/n{i}",
                executor="ex",
                name=f"n{i}",
                allocatable=r(cpu, 4 * cpu),
                allocated=r(rng.randrange(cpu + 1), rng.randrange(4 * cpu + 1)),
                labels={"zone": rng.choice("ab")} if rng.random() < 0.8 else {},
                taints=(Taint("spot", "true"),) if rng.random() < 0.2 else (),
                unschedulable=rng.random() < 0.05,
            )
        )
    return out


def random_job(rng: random.Random, i: int) -> QueuedJob:
    fields: dict = {}
    if rng.random() < 0.2:
        fields["node_selector"] = {"zone": rng.choice("abc")}
    if rng.random() < 0.3:
        fields["tolerations"] = (Toleration("spot", "Exists"),)
    if rng.random() < 0.1:
        fields["avoid_nodes"] = frozenset({f"n{rng.randrange(20)}"})
    cpu = rng.choice([1, 1, 2, 3, 6, 20])
    return QueuedJob(id=f"j{i}", queue="q", requests=r(cpu, rng.choice([1, cpu])), **fields)


def usable(job: QueuedJob, view: NodeView) -> bool:
    return node_matches(job, view.node) and job.requests.fits_in(view.node.allocatable)


def brute_first_fit(job: QueuedJob, index: NodeIndex, group=None) -> tuple[NodeView | None, str]:
    views = [index.views[p] for p in group.positions] if group is not None else index.views
    matched = [v for v in views if node_matches(job, v.node)]
    big = [v for v in matched if job.requests.fits_in(v.node.allocatable)]
    room = [v for v in big if job.requests.fits_in(v.free)]
    if room:
        return room[0], ""
    return (
        None,
        REASON_NO_MATCH if not matched else REASON_TOO_BIG if not big else REASON_NO_RESOURCES,
    )


def random_change(rng: random.Random, index: NodeIndex) -> None:
    view = rng.choice(index.views)
    amounts = {"cpu": rng.choice([1, 2, 4]) * 1000, "memory": rng.choice([1, 4]) * GI}
    if rng.random() < 0.6:
        index.take(view, amounts)
    else:
        index.give(view, amounts)


@pytest.mark.parametrize("seed", range(40))
def test_first_fit_is_the_first_node_with_room(seed):
    rng = random.Random(seed)
    index = NodeIndex(random_pool(rng, rng.choice([1, 5, 20])))
    shapes = [random_job(rng, i) for i in range(6)]
    for step in range(300):
        if rng.random() < 0.5:
            random_change(rng, index)
            continue
        job = rng.choice(shapes)
        groups = [None, *index.groups("zone")]
        group = rng.choice(groups)
        scan = index.scan(job, _shape(job), group)
        found = index.first_fit(scan)
        expected, why = brute_first_fit(job, index, group)
        assert found is expected, (seed, step)
        if found is None:
            assert scan.reason() == why


@pytest.mark.parametrize("seed", range(40))
def test_scratch_fit_is_the_first_node_with_room_in_the_trial(seed):
    rng = random.Random(seed)
    index = NodeIndex(random_pool(rng, rng.choice([3, 10, 25])))
    shapes = [random_job(rng, i) for i in range(4)]
    for _ in range(60):
        for _ in range(rng.randrange(4)):
            random_change(rng, index)
        group = rng.choice([None, *index.groups("zone")])
        scratch: dict[int, dict[str, int]] = {}
        resume: dict[int, int] = {}
        for _ in range(rng.randrange(1, 8)):
            job = rng.choice(shapes)
            scan = index.scan(job, _shape(job), group)
            found = index.scratch_fit(scan, scratch, resume)
            candidates = index.views if group is None else [index.views[p] for p in group.positions]
            expected = next(
                (
                    v
                    for v in candidates
                    if usable(job, v) and job.requests.fits_in(scratch.get(v.position, v.free))
                ),
                None,
            )
            assert found is expected
            if found is None:
                continue
            free = scratch.setdefault(found.position, dict(found.free))
            # A trial takes room, and (as an eviction would) sometimes gives some elsewhere.
            for k, v in job.requests.to_dict().items():
                free[k] = free.get(k, 0) - v
            if rng.random() < 0.3:
                other = rng.choice(candidates)
                extra = scratch.setdefault(other.position, dict(other.free))
                extra["cpu"] = extra.get("cpu", 0) + 2000


def running_on(rng: random.Random, nodes: list[NodeState], gangs: bool) -> list[RunningJob]:
    out = []
    for n, node in enumerate(nodes):
        for k in range(rng.randrange(8)):
            out.append(
                RunningJob(
                    id=f"r{n:02d}-{k}",
                    queue=rng.choice(["a", "a", "b", "c"]),
                    node_id=node.id,
                    requests=r(rng.choice([1, 1, 2, 3]), rng.choice([1, 2])),
                    urgency=rng.choice([0, 1, 2]),
                    preemptible=rng.random() < 0.85,
                    gang_id=f"g{rng.randrange(3)}" if gangs and rng.random() < 0.15 else "",
                )
            )
    return out


def walk_count(vs: Victims, view: NodeView, wanted, rule) -> int | None:
    kind, arg = rule
    node_id = view.node.id
    missing = missing_for(wanted, view.free)
    if kind == "urgency":
        order = vs.urgency_order(node_id)
        candidates = [x for x in order.jobs[order.lo :] if x.urgency < arg]
        chosen = plan(missing, node_id, candidates, urgency_accept(arg), vs)
    else:
        order = vs.fair_order(node_id)
        candidates = [x for x in order.jobs[order.lo :] if x.queue in arg]
        chosen = plan(missing, node_id, candidates, same_queue_preemptible, vs)
    return None if chosen is None else len(chosen)


@pytest.mark.parametrize("gangs", [False, True], ids=["lone-jobs", "with-gangs"])
@pytest.mark.parametrize("seed", range(25))
def test_eviction_counts_match_the_walk(seed, gangs):
    rng = random.Random(seed)
    node_list = random_pool(rng, 8)
    index = NodeIndex(node_list)
    vs = Victims(running_on(rng, node_list, gangs))
    vs.share = frozenset("abc")
    for _ in range(40):
        # Evict a few jobs: from the front of an order or anywhere.
        live = [x for x in vs.running if x.id not in vs.evicted and x.preemptible]
        for x in rng.sample(live, min(len(live), rng.randrange(3))):
            for m in vs.group(x):
                vs.evicted.add(m.id)
                vs.remove(m)
        for view in index.views:
            wanted = tuple(
                sorted(r(rng.choice([1, 2, 4, 9]), rng.choice([1, 3])).to_dict().items())
            )
            urgency = rng.choice([0, 1, 2, 3])
            over = frozenset(rng.sample("abc", rng.randrange(1, 4)))
            node_id = view.node.id
            assert vs.urgency_count(node_id, wanted, view.free, urgency) == walk_count(
                vs, view, wanted, ("urgency", urgency)
            )
            assert vs.fair_count(node_id, wanted, view.free, over) == walk_count(
                vs, view, wanted, ("fair", over)
            )
            chosen = vs.urgency_victims(node_id, wanted, view.free, urgency)
            assert (None if chosen is None else len(chosen)) == walk_count(
                vs, view, wanted, ("urgency", urgency)
            )


def test_canonical_urgency_shares_searches_between_equivalent_urgencies():
    vs = Victims(
        [RunningJob(f"r{u}", "a", "ex/n0", r(1), urgency=u, preemptible=True) for u in (0, 5)]
    )
    # Urgencies 1 to 5 may all evict just the urgency-0 job; above 5, both.
    assert [vs.canonical_urgency(u) for u in (0, 1, 3, 5, 6, 9)] == [0, 1, 1, 1, 6, 6]


@pytest.mark.parametrize("seed", range(30))
def test_fewest_search_is_the_brute_force_argmin(seed):
    rng = random.Random(seed)
    node_list = random_pool(rng, rng.choice([4, 12, 30]))
    index = NodeIndex(node_list)
    vs = Victims(running_on(rng, node_list, gangs=rng.random() < 0.5))
    job = QueuedJob(id="j", queue="q", requests=r(rng.choice([1, 2, 3]), 1), urgency=3)
    group = rng.choice([None, *index.groups("zone")])
    scan = index.scan(job, _shape(job), group)
    wanted = scan.wanted

    def count(view: NodeView) -> int | None:
        return vs.urgency_count(view.node.id, wanted, view.free, 3)

    search = nodeindex.FewestSearch(scan, count)
    for step in range(80):
        # Change the pool: place jobs, evict (which gives room back and may lower counts).
        view = rng.choice(index.views)
        if rng.random() < 0.5:
            index.take(view, {"cpu": rng.choice([1, 2]) * 1000})
        else:
            live = [x for x in vs.running if x.node_id == view.node.id and x.id not in vs.evicted]
            if live:
                x = rng.choice(live)
                for m in vs.group(x):
                    vs.evicted.add(m.id)
                    vs.remove(m)
                    index.give(index.by_id[m.node_id], m.requests.to_dict())
        if index.first_fit(scan) is not None:
            continue  # the search is for jobs that found no free room
        skip = {p: {} for p in rng.sample(range(len(index.views)), rng.randrange(3))}
        positions = group.positions if group is not None else range(len(index.views))
        expected = min(
            (
                (c, p)
                for p in positions
                if p not in skip and usable(job, index.views[p])
                for c in [count(index.views[p])]
                if c is not None
            ),
            default=None,
        )
        assert search.best(index, skip) == expected, (seed, step)


def test_fits_counts_missing_resources_as_zero():
    assert fits((("cpu", 1),), {"cpu": 1})
    assert not fits((("gpu", 1),), {"cpu": 8})


# --- whole rounds against a brute-force round --------------------------------------------------


def brute_best(self, index, skip=nodeindex._NONE):
    """FewestSearch.best by looking at every node."""
    positions = (
        self.scan.group.positions if self.scan.group is not None else range(len(index.views))
    )
    found = None
    for p in positions:
        view = index.views[p]
        if p in skip or not self.scan.usable(view):
            continue
        c = self.count(view)
        if c is not None and (found is None or (c, p) < found):
            found = (c, p)
    return found


def use_brute_force(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, rounds search every node, walk every node's jobs and apply the
    fair-share rule node by node: the rules without any index."""
    monkeypatch.setattr(nodeindex.FewestSearch, "best", brute_best)
    monkeypatch.setattr(
        preemption.PreemptionMixin, "fair_rule_is_static", lambda self, over, sim: False
    )
    init = victims.Order.__init__

    def walk_only(self, jobs, keys, gangs):
        init(self, jobs, keys, True)

    monkeypatch.setattr(victims.Order, "__init__", walk_only)


SNAPSHOTS = [
    {"node_count": 4, "queue_count": 3, "job_count": 300},
    {"node_count": 20, "queue_count": 4, "job_count": 600},
    {"node_count": 30, "queue_count": 4, "job_count": 700, "seed": 1},
    {"node_count": 25, "queue_count": 5, "job_count": 600, "seed": 2, "max_leases": 200},
    {"node_count": 16, "queue_count": 3, "job_count": 500, "running_per_node": 24, "seed": 3},
    {"node_count": 40, "queue_count": 6, "job_count": 900, "seed": 7},
]


@pytest.mark.parametrize("arguments", SNAPSHOTS, ids=[str(i) for i in range(len(SNAPSHOTS))])
def test_the_indexed_round_decides_as_the_brute_force_round(arguments, monkeypatch):
    fast_args = synthetic_snapshot(**arguments)
    fast = schedule_round(**fast_args)
    use_brute_force(monkeypatch)
    slow_args = synthetic_snapshot(**arguments)
    slow = schedule_round(**slow_args)
    assert fast.leases and fast.preempted
    assert slow.leases == fast.leases
    assert slow.preempted == fast.preempted
    assert slow.unschedulable == fast.unschedulable
    assert [n.allocated for n in slow_args["nodes"]] == [n.allocated for n in fast_args["nodes"]]
