"""Benchmark of fair-share preemption for gangs over several pure rounds (not a test).

Queue A's preemptible 1-cpu jobs fill every 32-cpu node. Queue B (the same priority factor)
submits --gangs gangs of 32 members (1 cpu each, non-preemptible). Each round's result is
applied to the next round's snapshot: evicted jobs leave (their nodes and queue get the
room back), leases become running jobs of B. Prints each round's time (wall and CPU) and
both queues' dominant shares after it, next to the DRF ideal: each queue gets its weighted
share of the pool, or what it asks for if that is less (B asks for gangs x 32 cpu).

Usage: .venv/bin/python bench/core_gangs.py [--nodes 1000 --gangs 100 --rounds 3]
       [--label] [--max-leases 10000]

--label gives the gangs a uniformity label (``rack``, 10 values over the nodes, indexed).
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada.core.fairshare import dominant_share  # noqa: E402
from armada.core.quantity import Resources  # noqa: E402
from armada.core.scheduling import (  # noqa: E402
    NodeState,
    QueuedJob,
    QueueState,
    RunningJob,
    schedule_round,
)

NODE_CPU = 32
MEMBERS = 32


def build(node_count: int, gang_count: int, label: bool):
    one = Resources.parse({"cpu": "1", "memory": "4Gi"})
    nodes = [
        NodeState(
            id=f"ex/node-{i:05d}",
            executor="ex",
            name=f"node-{i:05d}",
            allocatable=Resources.parse({"cpu": str(NODE_CPU), "memory": f"{4 * NODE_CPU}Gi"}),
            allocated=Resources({r: v * NODE_CPU for r, v in one.to_dict().items()}),
            labels={"rack": f"rack-{i % 10}"},
        )
        for i in range(node_count)
    ]
    running = [
        RunningJob(
            id=f"a-{n:05d}-{k:02d}",
            queue="A",
            node_id=node.id,
            requests=one,
            preemptible=True,
        )
        for n, node in enumerate(nodes)
        for k in range(NODE_CPU)
    ]
    queued = [
        QueuedJob(
            id=f"b-{g:05d}-{m:02d}",
            queue="B",
            requests=one,
            gang_id=f"gang-{g:05d}",
            gang_cardinality=MEMBERS,
            gang_uniformity_label="rack" if label else "",
        )
        for g in range(gang_count)
        for m in range(MEMBERS)
    ]
    return nodes, running, queued


def queue_states(running: list[RunningJob]) -> list[QueueState]:
    used: dict[str, dict[str, int]] = {"A": {}, "B": {}}
    for r in running:
        acc = used[r.queue]
        for k, v in r.requests.to_dict().items():
            acc[k] = acc.get(k, 0) + v
    return [QueueState(q, allocated=Resources(a)) for q, a in used.items()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--label", action="store_true")
    parser.add_argument("--max-leases", type=int, default=10_000)
    args = parser.parse_args()
    nodes, running, queued = build(args.nodes, args.gangs, args.label)
    capacity = {"cpu": 1000 * NODE_CPU * args.nodes}
    demand_b = min(0.5, MEMBERS * args.gangs / (NODE_CPU * args.nodes))
    print(
        f"{args.nodes} nodes x {NODE_CPU} cpu, A fills them; B: {args.gangs} gangs x {MEMBERS}"
        f" ({'rack label, indexed' if args.label else 'no label'}), max_leases {args.max_leases}"
        f"; DRF ideal A {1 - demand_b:.1%} B {demand_b:.1%}"
    )
    for n in range(1, args.rounds + 1):
        by_queue: dict[str, list[QueuedJob]] = {"B": sorted(queued, key=QueuedJob.order_key)}
        gangs: dict[tuple[str, str], list[QueuedJob]] = {}
        for job in by_queue["B"]:
            gangs.setdefault(("B", job.gang_id), []).append(job)
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = schedule_round(
            nodes=nodes,
            queues=queue_states(running),
            queued={q: iter(js) for q, js in by_queue.items()},
            gangs=gangs,
            max_leases=args.max_leases,
            indexed_node_labels=frozenset({"rack"}),
            running=running,
        )
        took = (time.perf_counter() - start) * 1000
        took_cpu = (time.process_time() - start_cpu) * 1000
        # The round has already moved its leases and evictions into the nodes' allocated.
        leased = {lease.job_id: lease for lease in result.leases}
        running = [r for r in running if r.id not in result.preempted]
        for job in queued:
            lease = leased.get(job.id)
            if lease is not None:
                running.append(
                    RunningJob(
                        id=job.id,
                        queue="B",
                        node_id=lease.node_id,
                        requests=job.requests,
                        gang_id=job.gang_id,
                    )
                )
        queued = [j for j in queued if j.id not in leased]
        shares = {q.name: dominant_share(q.allocated, capacity) for q in queue_states(running)}
        reasons = Counter(
            re.sub(r"gang-\d+|b-\d+-\d+", "*", v) for v in result.unschedulable.values()
        )
        print(
            f"round {n}: {took:.0f} ms (cpu {took_cpu:.0f} ms); leases {len(result.leases)}, preempted"
            f" {len(result.preempted)}, gangs left {len(queued) // MEMBERS}; share A"
            f" {shares['A']:.1%}, B {shares['B']:.1%}"
            + "".join(f"\n    {n} jobs: {reason}" for reason, n in sorted(reasons.items()))
        )


if __name__ == "__main__":
    main()
