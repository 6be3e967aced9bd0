"""Benchmark of one pure scheduling round (not a test): Armada's own benchmark shape.

10 nodes x 10 queues x 3,200 queued jobs with running jobs on every node and preemption on
(``core.scheduling.synthetic_snapshot``). Prints the median and worst of --repeat rounds.

Usage: .venv/bin/python bench/core_round.py [--nodes 10 --queues 10 --jobs 3200 --repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada.core.scheduling import schedule_round, synthetic_snapshot  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--queues", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=3200)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    times = []
    for _ in range(args.repeat):
        snapshot = synthetic_snapshot(
            node_count=args.nodes, queue_count=args.queues, job_count=args.jobs
        )
        start = time.perf_counter()
        result = schedule_round(**snapshot)
        times.append((time.perf_counter() - start) * 1000)
    print(
        f"nodes={args.nodes} queues={args.queues} jobs={args.jobs}: leases={len(result.leases)} "
        f"preempted={len(result.preempted)}; median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms"
    )


if __name__ == "__main__":
    main()
