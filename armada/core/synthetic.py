"""A deterministic, busy pool for timing a round (``bench/core_round.py``) and for comparing
the round's two input forms (flat ``jobs`` and per-queue ``queued``) in tests."""

from __future__ import annotations

from collections.abc import Iterator

from armada.core.quantity import Resources
from armada.core.snapshot import (
    NodeState,
    QueuedJob,
    QueueState,
    RunningJob,
)

_MASK = (1 << 64) - 1


class Sequence64:
    """A small deterministic generator (splitmix64): the same seed gives the same numbers on
    every machine and Python version."""

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def chance(self, p: float) -> bool:
        return self.next() < p * (1 << 64)


def synthetic_snapshot(
    node_count: int = 10,
    queue_count: int = 10,
    job_count: int = 3200,
    running_per_node: int = 64,
    *,
    seed: int = 0,
    queued: bool = False,
    max_leases: int | None = None,
) -> dict:
    """Keyword arguments for a deterministic, busy :func:`schedule_round`, for timing it
    (the caller holds the clock): ``schedule_round(**synthetic_snapshot())``.

    Seed 0 (Armada's benchmark shape): queue ``q0`` fills every 64-cpu node with 1-cpu
    preemptible running jobs of urgency 0-2; ``job_count`` queued jobs of 1-3 cpu and
    urgency 0-4 are spread over the queues, so the round places jobs and does both urgency
    and fair-share preemption. Another seed varies it: other queues run jobs too, some
    running jobs are protected, a few run as gangs over two nodes, nodes carry a ``zone``
    label (indexed), queued jobs vary in size, urgency and priority, and some are gangs
    (half of them uniform in ``zone``).

    ``queued=True`` gives the jobs as ``queued`` (per queue, in order) and ``gangs``
    instead of ``jobs``. For seed 0 each queue's jobs are made one at a time as the round
    pulls them, so a million queued jobs cost only what the round takes; other seeds build
    and sort the lists first. ``max_leases`` defaults to ``job_count``.
    """
    if seed:
        return _varied(
            node_count, queue_count, job_count, running_per_node, seed, queued, max_leases
        )
    one = Resources.parse({"cpu": "1", "memory": "2Gi"})
    node_list = [
        NodeState(
            id=f"ex/node-{i}",
            executor="ex",
            name=f"node-{i}",
            allocatable=Resources.parse({"cpu": "64", "memory": "256Gi"}),
        )
        for i in range(node_count)
    ]
    full = Resources({r: v * running_per_node for r, v in one.to_dict().items()})
    running = []
    for n, node in enumerate(node_list):
        for k in range(running_per_node):
            running.append(
                RunningJob(
                    id=f"run-{n:04d}-{k:04d}",
                    queue="q0",
                    node_id=node.id,
                    requests=one,
                    urgency=k % 3,
                    preemptible=True,
                )
            )
        node.allocated = full
    used = Resources({r: v * running_per_node * node_count for r, v in one.to_dict().items()})
    queue_list = [
        QueueState(f"q{q}", allocated=used if q == 0 else Resources()) for q in range(queue_count)
    ]
    sizes = [Resources.parse({"cpu": str(c), "memory": "2Gi"}) for c in (1, 2, 3)]
    width = max(6, len(str(job_count - 1)))

    def make(j: int) -> QueuedJob:
        return QueuedJob(
            id=f"job-{j:0{width}d}",
            queue=f"q{j % queue_count}",
            requests=sizes[j % 3],
            urgency=(j // queue_count) % 5,
        )

    out: dict = {
        "nodes": node_list,
        "queues": queue_list,
        "running": running,
        "max_leases": job_count if max_leases is None else max_leases,
    }
    if not queued:
        out["jobs"] = [make(j) for j in range(job_count)]
        return out

    def in_order(q: int) -> Iterator[QueuedJob]:
        # Job j = q + queue_count * t has urgency t % 5: most urgent first, then by id.
        for urgency in range(4, -1, -1):
            for j in range(q + queue_count * urgency, job_count, queue_count * 5):
                yield make(j)

    out["queued"] = {f"q{q}": in_order(q) for q in range(queue_count)}
    out["gangs"] = {}
    return out


def _varied(
    node_count: int,
    queue_count: int,
    job_count: int,
    running_per_node: int,
    seed: int,
    queued: bool,
    max_leases: int | None,
) -> dict:
    rng = Sequence64(seed)
    queue_names = [f"q{q}" for q in range(queue_count)]
    node_list = [
        NodeState(
            id=f"ex/node-{i}",
            executor="ex",
            name=f"node-{i}",
            allocatable=Resources.parse({"cpu": "64" if i % 4 else "32", "memory": "256Gi"}),
            labels={"zone": f"z{i % 3}"},
        )
        for i in range(node_count)
    ]
    small = [Resources.parse({"cpu": str(c), "memory": f"{2 * c}Gi"}) for c in (1, 2)]
    running: list[RunningJob] = []
    used: dict[str, dict[str, int]] = {q: {} for q in queue_names}
    carried: RunningJob | None = None  # a running gang's member that goes on the next node
    for n, node in enumerate(node_list):
        room = node.allocatable["cpu"] // 1000
        on_node: dict[str, int] = {}
        for k in range(running_per_node):
            size = small[rng.below(2)]
            queue = "q0" if rng.chance(0.8) else queue_names[rng.below(queue_count)]
            urgency, preemptible, gang = rng.below(3), rng.chance(0.9), ""
            if k == 0 and carried is not None:
                # The second member of the previous node's running gang.
                size, queue, urgency = carried.requests, carried.queue, carried.urgency
                preemptible, gang = carried.preemptible, carried.gang_id
                carried = None
            elif k == 1 and n + 1 < node_count and rng.chance(0.2):
                gang = f"rg-{n}"
            cpu = size["cpu"] // 1000
            if cpu > room:
                break
            room -= cpu
            job = RunningJob(
                id=f"run-{n:04d}-{k:04d}",
                queue=queue,
                node_id=node.id,
                requests=size,
                urgency=urgency,
                preemptible=preemptible,
                gang_id=gang,
            )
            running.append(job)
            if gang and k == 1:
                carried = job
            for r, v in size.to_dict().items():
                on_node[r] = on_node.get(r, 0) + v
                used[queue][r] = used[queue].get(r, 0) + v
        node.allocated = Resources(on_node)
    queue_list = [
        QueueState(q, priority_factor=1.0 if i % 3 else 2.0, allocated=Resources(used[q]))
        for i, q in enumerate(queue_names)
    ]
    sizes = [Resources.parse({"cpu": str(c), "memory": f"{c}Gi"}) for c in (1, 1, 2, 3, 4, 8)]
    job_list: list[QueuedJob] = []
    j = 0
    while j < job_count:
        queue = queue_names[rng.below(queue_count)]
        size = sizes[rng.below(len(sizes))]
        urgency, priority = rng.below(5), rng.below(2)
        if rng.chance(0.04) and j + 1 < job_count:
            members = min(2 + rng.below(3), job_count - j)
            label = "zone" if rng.chance(0.5) else ""
            for m in range(members):
                job_list.append(
                    QueuedJob(
                        id=f"job-{j + m:06d}",
                        queue=queue,
                        requests=size,
                        urgency=urgency,
                        priority=priority,
                        gang_id=f"gang-{j}",
                        gang_cardinality=members,
                        gang_uniformity_label=label,
                    )
                )
            j += members
            continue
        job_list.append(
            QueuedJob(
                id=f"job-{j:06d}", queue=queue, requests=size, urgency=urgency, priority=priority
            )
        )
        j += 1
    out: dict = {
        "nodes": node_list,
        "queues": queue_list,
        "running": running,
        "max_leases": job_count if max_leases is None else max_leases,
        "indexed_node_labels": frozenset({"zone"}),
    }
    if not queued:
        out["jobs"] = job_list
        return out
    by_queue: dict[str, list[QueuedJob]] = {}
    for job in job_list:
        by_queue.setdefault(job.queue, []).append(job)
    gangs: dict[tuple[str, str], list[QueuedJob]] = {}
    for name, jobs in by_queue.items():
        jobs.sort(key=QueuedJob.order_key)
        for job in jobs:
            if job.gang_id:
                gangs.setdefault((name, job.gang_id), []).append(job)
    out["queued"] = {name: iter(jobs) for name, jobs in by_queue.items()}
    out["gangs"] = gangs
    return out
