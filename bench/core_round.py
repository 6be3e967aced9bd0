"""Benchmark of one pure scheduling round (not a test): Armada's own benchmark shape, and
larger pools with lazily pulled queues.

10 nodes x 10 queues x 3,200 queued jobs with running jobs on every node and preemption on
(``core.scheduling.synthetic_snapshot``). Prints the median, best and worst wall time of
--repeat rounds (a new snapshot for each; only the round is timed), and the median CPU time
of the process (on a shared machine, wall time also counts waiting for a core).

Usage: .venv/bin/python bench/core_round.py [--nodes 10 --queues 10 --jobs 3200 --repeat 20]
       [--queued] [--max-leases N] [--running-per-node 64]

--queued gives the jobs per queue in order, made one at a time as the round pulls them
(``schedule_round(queued=...)``), so that 1,000,000 queued jobs cost only what is pulled.
"""

from __future__ import annotations

import argparse
import gc
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
    parser.add_argument("--queued", action="store_true")
    parser.add_argument("--max-leases", type=int, default=None)
    parser.add_argument("--running-per-node", type=int, default=64)
    args = parser.parse_args()
    times, cpu = [], []
    for _ in range(args.repeat):
        snapshot = synthetic_snapshot(
            node_count=args.nodes,
            queue_count=args.queues,
            job_count=args.jobs,
            running_per_node=args.running_per_node,
            queued=args.queued,
            max_leases=args.max_leases,
        )
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = schedule_round(**snapshot)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        del snapshot
    print(
        f"nodes={args.nodes} queues={args.queues} jobs={args.jobs} queued={args.queued} "
        f"max_leases={args.max_leases or args.jobs}: leases={len(result.leases)} "
        f"preempted={len(result.preempted)} considered={result.considered} "
        f"limit_reached={result.limit_reached}; median {statistics.median(times):.1f} ms, "
        f"best {min(times):.1f} ms, worst {max(times):.1f} ms; cpu median "
        f"{statistics.median(cpu):.1f} ms"
    )


if __name__ == "__main__":
    main()
