"""Benchmark of whole scheduling cycles at scale (not a test).

Creates a throw-away database (PostgreSQL when DATABASE_URL is set), registers --nodes nodes
(32 cpu, 128Gi each) on executors of 100 nodes, loads --jobs queued jobs spread over --queues
queues straight into the job table (COPY on PostgreSQL), then measures:
- cold start: the first cycle after a restart (loading every live job into memory, one round,
  writing the leases);
- --cycles further cycles; before each one, the runs leased by the previous cycle finish
  (rows and ``succeeded`` events written as the executors' reports would) and --submit new
  jobs arrive through the submit service, so each sync has real changes to read.
Before the cycles and again after them it measures the raw write limit of the same rows
(``cycle_world.raw_write_limit``): --raw-leases leases' job updates, run rows and ``leased``
events written with the cycle's own statements and nothing else, in a transaction that is
rolled back. One measurement varied by a quarter from run to run on a shared machine, and
the tables age during the cycles (dead row versions): the limit is the mean of the two.
Prints per-cycle time, p50/p95 (over every timed cycle, and over the cycles after the one in
which the pool first fills), leases per second against that raw limit (and against each
measurement), and the process's resident memory.

With --write-behind each cycle's decisions (leases, stops) are written on the writer thread
behind the next cycle's round, and its record and metrics on the recorder thread once they
are (``services.lease_pipeline``). Between two cycles the benchmark itself finishes runs
and submits jobs, time in which both threads go on unmeasured; so that this gap gives them
nothing for free, a cycle's time is then counted as the longest of the cycle itself, the
previous cycle's decisions (timed on the writer thread) and its record (on the recorder),
as in a loop of cycles with no gap at all; the last cycle's time adds its own decisions and
record, which nothing overlaps.

Usage: ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_bench \\
       .venv/bin/python bench/scheduler_cycle.py --nodes 1000 --queues 100 --jobs 100000
"""

from __future__ import annotations

import argparse
import functools
import gc
import math
import os
import statistics
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # cycle_world
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")

from cycle_gangs import gangs_scenario  # noqa: E402 - after the paths above
from cycle_world import (  # noqa: E402
    check_jobdb,
    finish_runs,
    pod_spec,
    raw_write_limit,
    rss_mib,
    seed,
    timed_cycle,
)

STEP_TIMES: dict[str, float] = {}
# the same steps' CPU time on the main thread (seconds by name), where it differs from the wall
STEP_CPU: dict[str, float] = {}
# with --write-behind: each cycle's decisions (writer thread) and record (recorder thread),
# seconds, in order
WRITES: list[float] = []
RECORDS: list[float] = []
# with --write-behind --steps: the same by step (seconds), with each thread's CPU time in
# them ("cpu"), in order
WRITE_STEPS: list[dict[str, float]] = []
RECORD_STEPS: list[dict[str, float]] = []
_STEPS_HERE = threading.local()  # ``steps``: where the steps on this thread go, if not main


def time_writes() -> None:
    """Time each cycle's decisions on the writer thread and its record on the recorder
    (``lease_pipeline.write_decisions`` and ``write_record``)."""
    from armada.services import lease_pipeline

    def timing(name: str, totals: list[float], steps: list[dict[str, float]]) -> None:
        inner = getattr(lease_pipeline, name)

        def timed(*args):
            steps.append({})
            _STEPS_HERE.steps = steps[-1]
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return inner(*args)
            finally:
                totals.append(time.perf_counter() - start)
                steps[-1]["cpu"] = time.thread_time() - cpu

        setattr(lease_pipeline, name, timed)

    timing("write_decisions", WRITES, WRITE_STEPS)
    timing("write_record", RECORDS, RECORD_STEPS)


def time_steps() -> None:
    """Time the cycle's steps (cumulative seconds by name in ``STEP_TIMES``) by wrapping the
    functions ``services.scheduler`` and ``services.scheduler_leases`` call."""
    from armada.services import cycle_metrics, cycle_writes, jobdb, scheduler, scheduler_leases

    def wrap(module, name: str, label: str) -> None:
        inner = getattr(module, name)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                took = time.perf_counter() - start
                into = STEP_TIMES
                if threading.current_thread() is not threading.main_thread():
                    into = _STEPS_HERE.steps  # the writer's or recorder's, --write-behind
                else:
                    STEP_CPU[label] = STEP_CPU.get(label, 0.0) + time.thread_time() - cpu
                into[label] = into.get(label, 0.0) + took

        setattr(module, name, timed)

    for name in (
        "counters_reset_if_due",
        "runs_expire",
        "failures_decide",
        "load_nodes",
        "schedule_round",
    ):
        wrap(scheduler, name, name)
    for name in (
        "write_leases",
        "runs_request_stops",
        "records_write",
        "duration_gauge_rows",
        "cycle_metrics_write",
    ):  # on the writer thread with --write-behind, overlapping the next cycle
        wrap(cycle_writes, name, name)
    wrap(jobdb.JobDb, "sync", "sync")
    wrap(jobdb.JobDb, "note_leased", "note_leased")
    wrap(jobdb.JobDb, "settle", "settle")
    started: list[float] = []

    def collector(phase: str, info: dict) -> None:
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif started:
            label = f"gc gen{info['generation']}"
            STEP_TIMES[label] = STEP_TIMES.get(label, 0.0) + time.perf_counter() - started[0]

    gc.callbacks.append(collector)
    for name in (
        "_claim_queued",
        "insert_rows",
        "events_append",
        "events_append_columns",
        "job_state_leases_count",
    ):
        wrap(scheduler_leases, name, f"write_leases: {name}")
    for name in ("lock_event_log", "counters_add_many", "gauges_replace"):
        wrap(cycle_metrics, name, f"cycle_metrics_write: {name}")


def cpu_of(label: str, took: float) -> str:
    """`` (cpu N)`` after a step's wall time when its CPU time on this thread was less than
    nine tenths of it (the rest: waiting for the database), else nothing."""
    cpu = STEP_CPU.get(label)
    return f" (cpu {cpu * 1000:.0f})" if cpu is not None and cpu < 0.9 * took else ""


def summary(name: str, times: list[float], leased: list[int], raw: list[tuple]) -> str:
    """p50, p95 (nearest rank) and max of ``times``, and their leases/s against the raw
    write limit: the mean of its measurements ``raw`` (and against each)."""
    if not times:
        return f"{name}: none"
    ordered = sorted(times)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    rate = sum(leased) / sum(times)
    text = (
        f"{name} ({len(times)}): p50 {statistics.median(times) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms; leases/s {rate:,.0f}"
    )
    if raw:
        limits = [n / took for n, took, _ in raw]
        text += f" = {rate / statistics.mean(limits):.0%} of the raw write limit"
        if len(limits) > 1:
            text += " (" + ", ".join(f"{rate / limit:.0%}" for limit in limits) + " of each)"
    return text


def measure_raw(args, at: datetime, when: str) -> tuple:
    """One measurement of the raw write limit, printed."""
    raw = raw_write_limit(args.raw_leases or args.max_per_round, at, explain=args.explain)
    n, took, steps = raw
    print(
        f"raw write limit ({when}): {n} leases ({3 * n} rows: job updates, runs, events) in "
        f"{took * 1000:.0f} ms = {3 * n / took:,.0f} rows/s, {n / took:,.0f} leases/s ("
        + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in steps.items())
        + ")"
    )
    return raw


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", choices=["backlog", "gangs"], default="backlog")
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--uniform", action="store_true", help="gangs keep to one rack")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=100000)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--submit", type=int, default=5000)
    parser.add_argument("--max-per-round", type=int, default=10000)
    parser.add_argument("--lookback", type=int, default=10000)
    parser.add_argument("--profile", action="store_true", help="profile the last cycle")
    parser.add_argument(
        "--raw-leases",
        type=int,
        default=0,
        help="leases written for the raw write limit (default: --max-per-round; 0 skips it)",
    )
    parser.add_argument("--no-raw", action="store_true", help="skip the raw write limit")
    parser.add_argument("--explain", action="store_true", help="WAL per lease of the raw write")
    parser.add_argument("--steps", action="store_true", help="time each cycle's steps")
    parser.add_argument(
        "--check", action="store_true", help="compare the job database with a fresh load"
    )
    parser.add_argument("--profile-load", action="store_true", help="profile the cold load")
    parser.add_argument(
        "--write-behind",
        action="store_true",
        help="each cycle's writes run behind the next cycle's round (scheduling.writeBehind)",
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    old = setup_databases(verbosity=0, interactive=False)
    try:
        from armada.core.config import parse_config
        from armada.models import Run
        from armada.services import scheduler
        from armada.services.lease_pipeline import lease_pipeline_drain
        from armada.services.submit import job_submit

        settings.ARMADA = parse_config(
            {
                "scheduling": {
                    "maximumJobsPerRound": args.max_per_round,
                    "maxQueueLookback": args.lookback,
                }
            }
        )
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        if args.scenario == "gangs":
            if args.uniform:
                settings.ARMADA = parse_config({"scheduling": {"indexedNodeLabels": ["rack"]}})
            gangs_scenario(args, t0)
            return
        user = get_user_model().objects.create_superuser("bench", "b@example.com", "x")
        start = time.perf_counter()
        seed(nodes=args.nodes, queues=args.queues, jobs=args.jobs, now=t0)
        print(
            f"database: {connection.vendor}; nodes: {args.nodes}; queues: {args.queues}; "
            f"queued jobs: {args.jobs}; seeded in {time.perf_counter() - start:.1f}s; "
            f"rss before: {rss_mib():.0f} MiB"
        )
        raw = []
        if not args.no_raw:
            raw.append(measure_raw(args, t0 + timedelta(seconds=1), "before the cycles"))
        if args.steps:
            time_steps()
        if args.write_behind:
            time_writes()
        scheduler.scheduler_state_reset()
        now = t0 + timedelta(seconds=1)
        start = time.perf_counter()
        db, _ = scheduler.scheduler_state(settings.ARMADA)
        if args.profile_load:
            import cProfile
            import pstats

            with cProfile.Profile() as profiler:
                db.sync()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
        else:
            db.sync()
        load = time.perf_counter() - start
        loaded = db.queued_count()
        report = scheduler.scheduler_cycle(now=now)
        cold = time.perf_counter() - start
        print(
            f"cold start: {cold:.2f}s = loading {loaded} jobs {load:.2f}s + first "
            f"cycle {cold - load:.2f}s (leased {report.leased}, considered {report.considered}); "
            f"rss {rss_mib():.0f} MiB"
        )
        # The cycle in which the pool first fills: the first whose round stopped short of its
        # lease limit (it then examines every queued job up to the lookback and records a
        # reason for each, once). Cycles after it are the steady state.
        fill = 0 if not report.limit_reached else None
        times, leased_total, leased_each = [], 0, []
        spec = {"priority": 1, "podSpec": pod_spec("1", "1Gi")}
        for c in range(args.cycles):
            # The runs leased so far and not finished: the previous cycle's (with
            # --write-behind, those of its writes that have landed; the rest next time).
            previous = list(
                Run.objects.filter(state="leased").values_list("job_id", flat=True).order_by()
            )
            now = now + timedelta(seconds=1)
            finish_runs(previous, now)
            for b in range(0, args.submit, 1000):
                job_submit(
                    actor=user,
                    data={
                        "queue": f"q{(c * 7 + b) % args.queues:03d}",
                        "jobSetId": f"new-{c}",
                        "jobs": [spec] * min(1000, args.submit - b),
                    },
                    now=now,
                )
            STEP_TIMES.clear()
            STEP_CPU.clear()
            start, cycle_cpu = time.perf_counter(), time.thread_time()
            report = timed_cycle(
                scheduler,
                now,
                profile=args.profile and c == args.cycles - 1,
                write_behind=args.write_behind,
            )
            took = time.perf_counter() - start
            cycle_cpu = time.thread_time() - cycle_cpu
            if args.write_behind:
                # The previous cycle's writes, settled by this one: no cycle of a loop
                # without gaps comes round sooner than the writes it waits for.
                if c > 0:
                    took = max(took, WRITES[c - 1], RECORDS[c - 1])
                if c == args.cycles - 1:  # and the last writes, which nothing overlaps
                    lease_pipeline_drain()
                    took += WRITES[c] + RECORDS[c]
            if args.steps:
                print(
                    "  steps (ms): "
                    + ", ".join(f"{k} {v * 1000:.0f}{cpu_of(k, v)}" for k, v in STEP_TIMES.items())
                    + f"; the cycle's cpu {cycle_cpu * 1000:.0f}"
                )
                if args.write_behind and c > 0:
                    for name, steps in (("decisions", WRITE_STEPS), ("record", RECORD_STEPS)):
                        print(
                            f"  the previous cycle's {name} (ms): "
                            + ", ".join(f"{k} {v * 1000:.0f}" for k, v in steps[c - 1].items())
                        )
            times.append(took)
            leased_each.append(report.leased)
            leased_total += report.leased
            if fill is None and not report.limit_reached:
                fill = c + 1
            print(
                f"cycle {c + 1}: {took * 1000:.0f} ms, leased {report.leased} "
                f"({report.leased / took:,.0f}/s), finished before it {len(previous)}, "
                f"queued in memory {scheduler._jobdb.queued_count()}, "
                f"reasons {len(report.unschedulable)}"
                + (" (the pool's first fill)" if fill == c + 1 else "")
            )
        if raw:
            raw.append(measure_raw(args, now + timedelta(seconds=1), "after the cycles"))
        print(summary("all cycles", times, leased_each, raw))
        if fill is not None:
            after = slice(fill, None)
            print(
                f"pool first filled in cycle {fill} (0: the cold start); "
                + summary(f"cycles {fill + 1}-{len(times)}", times[after], leased_each[after], raw)
            )
        print(f"rss {rss_mib():.0f} MiB")
        if args.write_behind:
            written = Run.objects.filter(leased_at__gt=t0 + timedelta(seconds=1)).count()
            print(
                f"write-behind: {sum(leased_each):,} leases planned after the cold start, "
                f"{written:,} written"
            )
            scheduler.lease_pipeline(1.0).settle(scheduler._jobdb)
        if args.check:
            check_jobdb(scheduler._jobdb, settings.ARMADA)
    finally:
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
