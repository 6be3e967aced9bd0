"""Benchmark of Lookout's retry-cost page over a million recorded failures (not a test).

1. Creates a throw-away PostgreSQL database (``test_<name>`` of DATABASE_URL, through
   ``setup_databases``; ``--keep`` keeps it between runs so that the seeding is done once)
   and seeds ``--failures`` decided failures with ``COPY``, with the seeding of
   ``bench/backtest_seed.py`` (20 queues, jobs of one to four genuine failures each, most retried
   jobs ending with a succeeded run, over the 30 days before its ``NOW``).
2. Fills the cost and yield rollups from those runs with three ``INSERT ... SELECT``
   statements that apply the definitions of ``services.retry_cost`` (what the scheduler and
   the executors' reports write one transaction at a time), and checks them: the yield
   rollup against ``services.retry_yield`` (the live query) over the 30 days.
3. Measures, in-process with Django's test client (no HTTP server), ``GET /metrics/cost``
   for each period, as a superuser (every queue) and as a user who may watch 5 of the 20
   queues: ``--requests`` requests each after 5 to warm up; p50, p95 and max. The page's
   "now" is the day before the seeding's ``NOW``, so that every period is full of data.
4. Times ``services.retry_yield.retry_yield`` (the live query helper B's backtest calls)
   over 1, 7 and 30 days.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_hc_bench \\
    REDIS_URL=redis://127.0.0.1:6379/8 \\
    .venv/bin/python bench/retry_cost.py [--failures 1000000] [--requests 200] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))  # after the project: bench/lookout.py is no package
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/armada_hc_bench")


# The rollups from the runs, by the definitions of services.retry_cost (per-run amounts in
# whole stored units, then summed; an hour row and a day row per label set).
_BUCKETS = "CROSS JOIN (VALUES (1), (24)) AS b(h)"
_START = (
    "(date_trunc(CASE b.h WHEN 1 THEN 'hour' ELSE 'day' END, {t} AT TIME ZONE 'UTC') "
    "AT TIME ZONE 'UTC')"
)
_AMOUNTS = """
    count(*),
    sum(round(coalesce((r.requests->>'cpu')::numeric, 0)
        * extract(epoch FROM r.finished_at - r.leased_at))),
    sum(round(coalesce((r.requests->>'memory')::numeric, 0) / 1000 / 1024
        * extract(epoch FROM r.finished_at - r.leased_at))),
    sum(round(coalesce((r.requests->>'nvidia.com/gpu')::numeric, 0)
        * extract(epoch FROM r.finished_at - r.leased_at)))
"""
COST_COLUMNS = (
    "bucket_hours, start, queue, policy, category, decision, kind, runs, cpu_milli_seconds, "
    "memory_kib_seconds, gpu_milli_seconds"
)
FAILED_RUNS = f"""
INSERT INTO armada_retrycostbucket ({COST_COLUMNS})
SELECT b.h, {_START.format(t="r.finished_at")}, j.queue, coalesce(r.decision->>'policy', ''),
       r.failure_category, coalesce(r.decision->>'decision', ''), 'failed_run', {_AMOUNTS}
FROM armada_run r JOIN armada_job j ON j.id = r.job_id {_BUCKETS}
WHERE r.state IN ('failed', 'lease_expired') AND r.decided_at IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6
"""
RETRIED_ATTEMPTS = f"""
INSERT INTO armada_retrycostbucket ({COST_COLUMNS})
SELECT b.h, {_START.format(t="r.finished_at")}, j.queue, coalesce(c.decision->>'policy', ''),
       c.failure_category, coalesce(c.decision->>'decision', ''), 'retried_attempt', {_AMOUNTS}
FROM armada_run r JOIN armada_job j ON j.id = r.job_id
CROSS JOIN LATERAL (
    SELECT e.failure_category, e.decision FROM armada_run e
    WHERE e.job_id = r.job_id AND e.retryable AND e.id < r.id ORDER BY e.id DESC LIMIT 1
) c {_BUCKETS}
WHERE r.finished_at IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6
"""
YIELDS = f"""
WITH firsts AS (
    SELECT DISTINCT ON (r.job_id, r.failure_category, coalesce(r.decision->>'ruleIndex', ''))
           r.job_id, r.failure_category, r.finished_at,
           coalesce((r.decision->>'ruleIndex')::int + 1, 0) AS rule
    FROM armada_run r WHERE r.retryable
    ORDER BY r.job_id, r.failure_category, coalesce(r.decision->>'ruleIndex', ''),
             r.finished_at, r.id
)
INSERT INTO armada_retryyieldbucket
    (bucket_hours, start, queue, category, rule, retries, retried_jobs, succeeded_jobs)
SELECT b.h, {_START.format(t="f.finished_at")}, j.queue, f.failure_category, f.rule,
       s.retries, sum(s.retried), sum(s.succeeded)
FROM firsts f JOIN armada_job j ON j.id = f.job_id {_BUCKETS}
CROSS JOIN LATERAL (
    VALUES (0, 1, 0), (j.retry_count, 0, CASE WHEN j.state = 'succeeded' THEN 1 ELSE 0 END)
) AS s(retries, retried, succeeded)
GROUP BY 1, 2, 3, 4, 5, 6
HAVING sum(s.retried) + sum(s.succeeded) > 0
"""


def fill_rollups() -> float:
    from django.db import connection, transaction

    from armada.models import RetryCostBucket, RetryYieldBucket

    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        RetryCostBucket.objects.all().delete()
        RetryYieldBucket.objects.all().delete()
        for statement in (FAILED_RUNS, RETRIED_ATTEMPTS, YIELDS):
            cursor.execute(statement)
    # What autovacuum does for a live system: old buckets all-visible, for index-only scans.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE armada_retrycostbucket")
        cursor.execute("VACUUM ANALYZE armada_retryyieldbucket")
    return time.perf_counter() - started


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def measure_page(user, *, now, periods, requests: int) -> dict[str, tuple[float, float, float]]:
    from django.test import Client

    client = Client()
    client.force_login(user)
    out = {}
    with mock.patch("django.utils.timezone.now", return_value=now):
        for period in periods:
            times = []
            for i in range(requests + 5):
                started = time.perf_counter()
                response = client.get("/metrics/cost", {"period": period})
                elapsed = time.perf_counter() - started
                assert response.status_code == 200, response.status_code
                if i >= 5:
                    times.append(elapsed * 1000)
            out[period] = (statistics.median(times), percentile(times, 0.95), max(times))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--failures", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="keep the seeded database")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    import backtest_seed as seeding  # bench/backtest_seed.py

    old = setup_databases(verbosity=0, interactive=False, keepdb=args.keep, serialized_aliases=())
    try:
        from armada.models import Queue, RetryCostBucket, RetryYieldBucket, Run
        from armada.services.retry_cost_reads import Window, yield_report
        from armada.services.retry_yield import retry_yield

        db_name = settings.DATABASES["default"]["NAME"]
        if Run.objects.exists():
            print(f"database {db_name}: kept from an earlier run", flush=True)
        else:
            print(f"database {db_name}: seeding {args.failures:,} failures", flush=True)
            started = time.perf_counter()
            seeding.seed(args.failures, random.Random(42))
            print(f"  seeded in {time.perf_counter() - started:.0f} s", flush=True)
        failures = Run.objects.filter(state__in=["failed", "lease_expired"]).count()
        print(f"{failures:,} recorded failures, {Run.objects.count():,} runs", flush=True)
        if RetryCostBucket.objects.exists():
            print("rollups: kept from an earlier run", flush=True)
        else:
            print(f"rollups filled in {fill_rollups():.1f} s:", flush=True)
        for hours in (1, 24):
            print(
                f"  {hours:>2} h buckets: {RetryCostBucket.objects.filter(bucket_hours=hours).count():,}"
                f" cost rows, {RetryYieldBucket.objects.filter(bucket_hours=hours).count():,} yield rows",
                flush=True,
            )
        end = seeding.NOW
        since = end - timedelta(days=31)
        live = retry_yield(since=since, until=end + timedelta(days=1))
        rolled = yield_report(window=Window(since=since, until=end, bucket_hours=24), queues=None)
        assert live == rolled, (live, rolled)
        print(f"yield rollup == retry_yield over the 30 days ({len(live)} rows)", flush=True)

        users = get_user_model()
        admin = users.objects.filter(username="bench").first() or users.objects.create_superuser(
            "bench", "bench@example.com", "bench-password"
        )
        viewer = users.objects.filter(username="viewer").first() or users.objects.create_user(
            "viewer", "viewer@example.com", "viewer-password"
        )
        for queue in Queue.objects.order_by("name")[:5]:  # owners may watch their queues
            queue.owners = sorted({*(queue.owners or []), "viewer"})
            queue.save(update_fields=["owners"])
        page_now = seeding.NOW - timedelta(days=1)
        periods = ("24h", "7d", "30d")
        print(f"GET /metrics/cost, {args.requests} requests per period (ms: p50 / p95 / max):")
        for name, user in (("superuser (20 queues)", admin), ("viewer of 5 queues", viewer)):
            result = measure_page(user, now=page_now, periods=periods, requests=args.requests)
            for period, (p50, p95, worst) in result.items():
                print(f"  {name:<22} {period:>4}: {p50:6.1f} / {p95:6.1f} / {worst:6.1f}")
        print("retry_yield (live query), one call each:")
        for days in (1, 7, 30):
            started = time.perf_counter()
            rows = retry_yield(since=end - timedelta(days=days), until=end)
            print(
                f"  {days:>2} days: {(time.perf_counter() - started) * 1000:7.0f} ms "
                f"({sum(r['retriedJobs'] for r in rows):,} retried jobs)",
                flush=True,
            )
    finally:
        connection.close()
        teardown_databases(old, verbosity=0, keepdb=args.keep)


if __name__ == "__main__":
    main()
