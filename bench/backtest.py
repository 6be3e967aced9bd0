"""Benchmark of the retry-policy backtest over a million recorded failures (not a test).

1. Creates a throw-away PostgreSQL database (``test_<name>`` of DATABASE_URL, through
   ``setup_databases``; ``--keep`` keeps it between runs so that the seeding is done once)
   and seeds ``--failures`` decided failures with ``COPY``: 20 queues, jobs of one to four
   genuine failures each (failed runs and some expired leases, with categories, exit codes
   and the decision trails policy ``bench`` gave them: retries, then a terminal label), a
   succeeded last run for most retried jobs, spread over the 30 days before ``NOW``; then
   recounts the retry-yield rollup from those runs (``manage.py rebuild_retry_yield``'s
   service, timed), as the scheduler would have kept it.
2. In a fresh process (so that its peak RSS is the backtest's alone), runs
   ``services.backtest.backtest`` with a stricter draft over the 30 days (from and to
   moments that are not whole hours), as a superuser: wall time, rows per second, peak RSS
   (and the RSS before it started); then its parts one at a time, and the retry yield both
   from the rollup and from the runs alone (which must give the same rows).
3. Measures the engine alone: ``core.retry.decide`` called directly (no cache) and the
   replay of in-memory recorded failures (``core.backtest.Replayer``, which caches the
   engine's verdict per distinct failure), in decisions per second.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_hb_bench \\
    REDIS_URL=redis://127.0.0.1:6379/7 \\
    .venv/bin/python bench/backtest.py [--failures 1000000] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))  # after the project: bench/lookout.py is no package
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/armada_hb_bench")

from backtest_seed import CATEGORIES, DRAFT, GI, NOW, QUEUES, SPAN, seed  # noqa: E402

# The range read: every seeded failure, from and to moments that are not whole hours (so
# that the retry yield reads a partial hour at each end from the runs, as a "--since 7d"
# from now does).
SINCE = NOW - SPAN - timedelta(minutes=7, seconds=13)
UNTIL = NOW + timedelta(minutes=13, seconds=41)


def peak_rss_kib() -> int:
    """This process's peak RSS since it started (``VmHWM``: unlike ``ru_maxrss``, not the
    parent's when it was larger at the fork)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(db_name: str) -> None:
    """Runs in a fresh process: the backtest once, printed as JSON."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connections

    settings.DATABASES["default"]["NAME"] = db_name
    connections["default"].settings_dict["NAME"] = db_name
    from armada.services.backtest import backtest

    admin = get_user_model().objects.get(username="bench")
    before = peak_rss_kib()
    started = time.perf_counter()
    result = backtest(actor=admin, draft=DRAFT, since=SINCE, until=UNTIL, now=UNTIL)
    wall = time.perf_counter() - started
    peak = peak_rss_kib()
    # The parts, one after the other: the distinct keys, the grouped failures, the yield.
    from armada.core.backtest import Replayer
    from armada.core.policy import parse_policy
    from armada.core.retry import RetrySettings
    from armada.services.backtest import global_cap
    from armada.services.backtest_rows import recorded_groups, verdict_keys
    from armada.services.retry_yield import retry_yield
    from armada.services.retry_yield_rollup import retry_yield_read
    from armada.services.side_reads import snapshot

    replayer = Replayer(
        policy=parse_policy(DRAFT),
        settings=RetrySettings(enabled=True, global_max_retries=global_cap()),
    )
    with snapshot():
        started = time.perf_counter()
        keys = verdict_keys(since=SINCE, until=UNTIL)
        keys_s = time.perf_counter() - started
        verdicts = {key: replayer.verdict_of(key).retry for key in keys}
        started = time.perf_counter()
        groups = recorded_groups(
            since=SINCE, until=UNTIL, queues=None, now=UNTIL, verdicts=verdicts
        )
        groups_s = time.perf_counter() - started
        started = time.perf_counter()
        rolled = retry_yield_read(since=SINCE, until=UNTIL, queues=None)
        yield_s = time.perf_counter() - started
        started = time.perf_counter()
        live = retry_yield(since=SINCE, until=UNTIL, queues=None)
        live_yield_s = time.perf_counter() - started
    if rolled != live:
        raise SystemExit("the retry yield from the rollup differs from the runs' own")
    print(
        json.dumps(
            {
                "wall_s": wall,
                "keys_s": keys_s,
                "keys": len(keys),
                "groups_s": groups_s,
                "groups": len(groups),
                "yield_s": yield_s,
                "live_yield_s": live_yield_s,
                "rss_before_mib": before / 1024,
                "rss_peak_mib": peak / 1024,
                "overall": result["overall"],
                "flips": len(result["flips"]),
                "queues": len(result["queues"]),
            }
        )
    )


def engine_rates(n: int) -> dict[str, float]:
    """Decisions per second of ``decide`` alone and of the replay of in-memory failures."""
    from armada.core.backtest import RecordedFailure, Replayer
    from armada.core.backtest_report import Report
    from armada.core.policy import parse_policy
    from armada.core.retry import Failure, RetrySettings, decide

    rnd = random.Random(7)
    policy = parse_policy(DRAFT)
    settings = RetrySettings(enabled=True, global_max_retries=5)
    names = list(CATEGORIES)
    failures = [
        Failure(category=c, subcategory=rnd.choice(CATEGORIES[c][0]), retries_used=rnd.randrange(4))
        for c in rnd.choices(names, k=n)
    ]
    policies = {policy.name: policy}
    started = time.perf_counter()
    for failure in failures:
        decide(
            failure=failure,
            queue_policy_names=("bench-draft",),
            policies=policies,
            settings=settings,
        )
    direct = n / (time.perf_counter() - started)
    recorded = [
        RecordedFailure(
            f"r{i}",
            f"j{i // 2}",
            f"queue-{i % QUEUES:02d}",
            f.category,
            f.subcategory,
            False,
            f.retries_used,
            rnd.choice(["retry", "fail_rule"]),
            1,
            cpu=2000.0,
            memory=8.0 * GI,
            seconds=600.0,
            later_runs=1,
            later_cpu=2000.0 * 600,
            later_memory=8.0 * GI * 600,
        )
        for i, f in enumerate(failures)
    ]
    replayer = Replayer(policy=policy, settings=settings)
    report = Report()
    started = time.perf_counter()
    for failure in recorded:
        report.add(replayer.replay(failure))
    replayed = n / (time.perf_counter() - started)
    return {"decide_per_s": direct, "replay_per_s": replayed}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--failures", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the seeded database")
    parser.add_argument("--engine", type=int, default=300_000, help="decisions for step 3")
    parser.add_argument("--child", metavar="DB", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    old = setup_databases(verbosity=0, interactive=False, keepdb=args.keep, serialized_aliases=())
    try:
        db_name = settings.DATABASES["default"]["NAME"]
        from armada.models import Run

        if Run.objects.exists():
            print(f"database {db_name}: kept from an earlier run", flush=True)
        else:
            print(f"database {db_name}: seeding {args.failures:,} failures", flush=True)
            seed(args.failures, random.Random(42))
        users = get_user_model()
        if not users.objects.filter(username="bench").exists():
            users.objects.create_superuser("bench", "bench@example.com", "bench-password")
        from armada.services.retry_yield_rollup import START, covers_since, rebuild_yield_rollup

        if covers_since() != START:  # seeded with COPY: recount the rollup, as an upgrade would
            started = time.perf_counter()
            rows = rebuild_yield_rollup()
            print(
                f"retry-yield rollup rebuilt: {rows:,} hourly rows in "
                f"{time.perf_counter() - started:.1f} s",
                flush=True,
            )
        failures = Run.objects.filter(state__in=["failed", "lease_expired"]).count()
        print(f"{failures:,} recorded failures", flush=True)
        connection.close()
        output = subprocess.run(
            [sys.executable, __file__, "--child", db_name],
            check=True,
            capture_output=True,
            text=True,
            env=os.environ,
        ).stdout
        result = json.loads(output.strip().splitlines()[-1])
        print(
            f"backtest: {result['wall_s']:.2f} s wall, "
            f"{failures / result['wall_s']:,.0f} failures/s, peak RSS "
            f"{result['rss_peak_mib']:.0f} MiB (before it started: "
            f"{result['rss_before_mib']:.0f} MiB)",
            flush=True,
        )
        print(
            f"  parts, one at a time: {result['keys']} verdict keys read in "
            f"{result['keys_s']:.2f} s, {result['groups']:,} groups in {result['groups_s']:.2f} s, "
            f"the retry yield {result['yield_s']:.2f} s (from the rollup; from the runs alone "
            f"{result['live_yield_s']:.2f} s, the same rows)",
            flush=True,
        )
        print(f"  overall: {json.dumps(result['overall'])}", flush=True)
        print(f"  {result['queues']} queues, {result['flips']} kinds of flip", flush=True)
        rates = engine_rates(args.engine)
        print(
            f"engine: decide {rates['decide_per_s']:,.0f} decisions/s (uncached); replay "
            f"{rates['replay_per_s']:,.0f} failures/s (verdicts cached per distinct failure)",
            flush=True,
        )
    finally:
        teardown_databases(old, verbosity=0, keepdb=args.keep)


if __name__ == "__main__":
    main()
