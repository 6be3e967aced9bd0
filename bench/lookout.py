"""Benchmark of Lookout at a million jobs (not a test).

1. Creates a throw-away PostgreSQL database (``test_<name>`` of DATABASE_URL, through
   ``setup_databases``; ``--keep`` keeps it between runs so the seeding is done once) and
   seeds ``--jobs`` jobs with their runs and some events with ``COPY``: ~100 queues of very
   different sizes, ~10,000 job sets ``team-N/exp-M`` submitted in bursts, mostly succeeded
   or failed jobs (failed ones with a category and subcategory), queued and running ones
   among the newest, runs with nodes, clusters, exit codes, retryable flags and decision
   trails, retried jobs with several runs, and a few jobs with many runs and events.
2. Starts the web server (``uvicorn armada.asgi:application --workers N``) on that database
   and logs ``--users`` users in through the admin login form (Lookout takes sessions only).
3. For ``--duration`` seconds, each user (a process of its own, as each browser is its own
   program; ``--client-threads``: a thread of this one, as before) requests, at
   random: jobs table first pages and deep pages (a cursor 50 pages in) filtered by queue,
   queue and state, failure category, job-set prefix (broad and narrow) and the header
   filters; counts grouped by queue, state, failure category, job set and more; the side
   panel, job pages and the live update's rows. Grid pages and groups are asked for as the
   open grid asks for them (htmx requests for its changing parts); ``load`` requests are
   whole pages, as when a grid URL is opened. Meanwhile another process
   appends ``--events-per-s`` events through ``services.events.events_append`` and moves
   jobs between states.
4. Prints count, p50, p95, p99 and max latency per request kind, then calls the views
   in-process once per kind with ``CaptureQueriesContext``, runs ``EXPLAIN ANALYZE`` on every
   query they issue, and prints the slowest query of each kind and every query over 1 s.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_hlk \\
    REDIS_URL=redis://127.0.0.1:6379/5 \\
    .venv/bin/python bench/lookout.py [--jobs 1000000] [--duration 60] [--users 8] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/armada_hlk")
# The web workers share kept group counts through Redis, as in production (without it each
# worker keeps its own, and counts each grouping once for itself).
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/5")

from lookout_explain import explain_views  # noqa: E402
from lookout_load import (  # noqa: E402
    deep_cursors,
    free_port,
    ingest_worker,
    report,
    run_load,
    start_server,
    table_filters,
)
from lookout_seed import PASSWORD, sample_jobs, seed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument(
        "--client-threads",
        action="store_true",
        help="run the users as threads of this process (before: one process each)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warmup", type=float, default=5, help="seconds not counted first")
    parser.add_argument("--think", type=float, default=0.0, help="mean pause between requests")
    parser.add_argument("--events-per-s", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the seeded database")
    parser.add_argument("--explain-only", action="store_true", help="skip the HTTP load")
    parser.add_argument("--skip-explain", action="store_true", help="skip the in-process part")
    parser.add_argument("--show-plans", action="store_true")
    parser.add_argument("--plan-ms", type=float, default=50.0)
    parser.add_argument("--ingest-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ingest_worker:
        ingest_worker(args)
        return

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    # serialized_aliases=(): do not copy the whole database into a string (minutes at 1M jobs).
    old = setup_databases(verbosity=0, interactive=False, keepdb=args.keep, serialized_aliases=())
    server = ingest = None
    from django.core.cache import cache

    cache.clear()  # no group counts kept from an earlier run
    try:
        db_name = settings.DATABASES["default"]["NAME"]
        rnd = random.Random(42)
        from armada.models import Job

        if Job.objects.exists():
            print(f"database {db_name}: kept from an earlier run", flush=True)
            jobs_info = sample_jobs()
        else:
            print(f"database {db_name}: seeding {args.jobs:,} jobs", flush=True)
            jobs_info = seed(args.jobs, rnd)
        users = get_user_model()
        if not users.objects.filter(username="bench").exists():
            users.objects.create_superuser("bench", "bench@example.com", PASSWORD)
        filters = table_filters(rnd)
        t0 = time.perf_counter()
        deep = deep_cursors(filters, depth=50)
        print(f"deep cursors found in {time.perf_counter() - t0:.1f} s", flush=True)
        if not args.explain_only:
            port = free_port()
            server = start_server(db_name, args.workers, port)
            base = f"http://127.0.0.1:{port}"
            from django.conf import settings as s

            db = s.DATABASES["default"]
            ingest = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--ingest-worker",
                    "--duration",
                    str(args.warmup + args.duration + 300),  # stopped when the load ends
                    "--events-per-s",
                    str(args.events_per_s),
                ],
                env={
                    **os.environ,
                    "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db_name}",
                },
            )
            time.sleep(2)
            print(
                f"load: {args.users} users, {args.workers} web workers, {args.duration:.0f} s, "
                f"{args.events_per_s} events/s, think {args.think:g} s; "
                f"load average {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            results = run_load(base, args, filters, deep, jobs_info)
            print(f"load average after: {os.getloadavg()[0]:.2f}")
            report(results, args.duration)
        if not args.skip_explain:
            explain_views(filters, deep, jobs_info, 1.0, args.show_plans, args.plan_ms)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if ingest is not None:
            ingest.terminate()
            ingest.wait(timeout=30)
        connection.close()
        teardown_databases(old, verbosity=0, keepdb=args.keep)


if __name__ == "__main__":
    main()
