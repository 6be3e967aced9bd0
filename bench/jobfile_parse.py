"""Benchmark of reading a job file as ``armadactl submit`` does (not a test).

Writes a YAML job file of ``--jobs`` jobs (the shape of ``bench/submit_api.py``'s jobs, with
annotations and a pod spec of one container) and parses it ``--repeat`` times with
``armada.cli.jobfile.parse_job_text``; prints each time and the median (and the median
CPU time, steadier than wall time on a shared machine). Needs no database.

Usage:
  .venv/bin/python bench/jobfile_parse.py [--jobs 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def job_file_text(jobs: int) -> str:
    """A job file of ``jobs`` jobs in block-style YAML, as people write them."""
    import yaml

    resources = {"cpu": "100m", "memory": "64Mi"}
    data = {
        "queue": "bench",
        "jobSetId": "parse-2026-12-03",
        "jobs": [
            {
                "priority": i % 10,
                "namespace": "default",
                "annotations": {"bench/index": str(i), "bench/day": "2026-12-03"},
                "podSpec": {
                    "terminationGracePeriodSeconds": 0,
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox:latest",
                            "command": ["sh", "-c", f"echo job {i}; sleep 1"],
                            "resources": {"requests": resources, "limits": resources},
                        }
                    ],
                },
            }
            for i in range(jobs)
        ],
    }
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from armada.cli import jobfile

    text = job_file_text(args.jobs)
    times, cpu = [], []
    for _ in range(args.repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        data = jobfile.parse_job_text(text, "bench.yaml")
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    assert len(data["jobs"]) == args.jobs
    assert data["jobs"][0]["annotations"]["bench/day"] == "2026-12-03"  # dates stay text
    print(
        f"job file of {args.jobs} jobs ({len(text) / 1e6:.1f} MB of YAML): "
        + ", ".join(f"{t:.3f}" for t in times)
        + f" s; median {statistics.median(times):.3f} s"
        + f" (CPU time: median {statistics.median(cpu):.3f} s)"
    )


if __name__ == "__main__":
    main()
