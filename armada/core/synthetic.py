"""A deterministic, busy pool for timing a round (``bench/core_round.py``)."""

from __future__ import annotations

from armada.core.quantity import Resources
from armada.core.snapshot import (
    NodeState,
    QueuedJob,
    QueueState,
    RunningJob,
)


def synthetic_snapshot(
    node_count: int = 10,
    queue_count: int = 10,
    job_count: int = 3200,
    running_per_node: int = 64,
) -> dict:
    """Keyword arguments for a deterministic, busy :func:`schedule_round`, for timing it
    (the caller holds the clock): ``schedule_round(**synthetic_snapshot())``.

    Queue ``q0`` fills every 64-cpu node with 1-cpu preemptible running jobs of urgency 0-2;
    ``job_count`` queued jobs of 1-3 cpu and urgency 0-4 are spread over the queues, so the
    round places jobs and does both urgency and fair-share preemption.
    """
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
        node.allocated = Resources({r: v * running_per_node for r, v in one.items()})
    used = Resources({r: v * running_per_node * node_count for r, v in one.items()})
    queue_list = [
        QueueState(f"q{q}", allocated=used if q == 0 else Resources()) for q in range(queue_count)
    ]
    sizes = [Resources.parse({"cpu": str(c), "memory": "2Gi"}) for c in (1, 2, 3)]
    job_list = [
        QueuedJob(
            id=f"job-{j:06d}",
            queue=f"q{j % queue_count}",
            requests=sizes[j % 3],
            urgency=(j // queue_count) % 5,
        )
        for j in range(job_count)
    ]
    return {
        "nodes": node_list,
        "queues": queue_list,
        "jobs": job_list,
        "running": running,
        "max_leases": job_count,
    }
