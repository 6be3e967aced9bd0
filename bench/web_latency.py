"""Benchmark of one trivial authenticated read through the web server (not a test).

1. Creates a throw-away PostgreSQL database (``test_<name>`` of DATABASE_URL), a superuser
   with an API token (DRF's ``Token``, or with ``--personal`` a personal API token sent as
   ``Bearer``) and nothing else.
2. For each web server set-up (HTTP protocol and event loop) and each number of workers
   (``--workers``, default 1 and 2), starts uvicorn on it and times ``--requests``
   kept-alive ``GET /api/v1/queues`` (``Authorization: Token ...``) from one client
   (``requests.Session``, after ``--warmup`` requests that reach every worker).
3. Prints p50 / p99 / max per set-up and worker count.

The set-ups: uvicorn as it ran before ``uvicorn[standard]`` (h11 on the asyncio loop),
httptools on uvloop (uvicorn's ``auto`` with ``[standard]``), and ours
(``armada.webserver``: Nagle off on every connection) with h11 on asyncio and with auto.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_bench \\
    .venv/bin/python bench/web_latency.py [--requests 200] [--workers 1 2] [--personal]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")

SETUPS = {
    "h11 + asyncio (uvicorn without [standard])": ["--http", "h11", "--loop", "asyncio"],
    "httptools + uvloop (uvicorn[standard] auto)": ["--http", "httptools", "--loop", "uvloop"],
    "ours, h11 + asyncio": ["--http", "armada.webserver:H11Protocol", "--loop", "asyncio"],
    "ours, auto (production)": ["--http", "armada.webserver:HTTPProtocol"],
}


def percentile(sorted_values: list[float], share: float) -> float:
    return sorted_values[int(share * (len(sorted_values) - 1))]


def time_reads(url: str, authorization: str, count: int, warmup: int) -> list[float]:
    """Milliseconds of ``count`` kept-alive GETs of ``url`` on one session, sorted."""
    import requests

    session = requests.Session()
    session.headers["Authorization"] = authorization
    for _ in range(warmup):
        session.get(url, timeout=30).raise_for_status()
    times = []
    for _ in range(count):
        started = time.perf_counter()
        response = session.get(url, timeout=30)
        times.append(1000 * (time.perf_counter() - started))
        response.raise_for_status()
    return sorted(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--setup", choices=sorted(SETUPS), action="append")
    parser.add_argument(
        "--personal", action="store_true", help="a personal API token (Bearer), not DRF's Token"
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from rest_framework.authtoken.models import Token
    from submit_api import free_port, start_server  # bench/ is on the path

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    old = setup_databases(verbosity=0, interactive=False, keepdb=False)
    try:
        admin = get_user_model().objects.create_superuser("bench", "bench@example.com", "x")
        if args.personal:
            from django.utils import timezone

            from armada.services.tokens import token_create

            key = token_create(user=admin, name="bench", expires_at=None, now=timezone.now()).key
            authorization = f"Bearer {key}"
        else:
            authorization = f"Token {Token.objects.create(user=admin).key}"
        db_name = settings.DATABASES["default"]["NAME"]
        connection.close()
        for label in args.setup or list(SETUPS):
            for workers in args.workers:
                port = free_port()
                server = start_server(db_name, workers, port, SETUPS[label])
                try:
                    url = f"http://127.0.0.1:{port}/api/v1/queues"
                    times = time_reads(url, authorization, args.requests, args.warmup)
                finally:
                    server.terminate()
                    server.wait(timeout=30)
                print(
                    f"{label}, {workers} worker(s): p50 {statistics.median(times):.1f} ms, "
                    f"p99 {percentile(times, 0.99):.1f} ms, max {times[-1]:.1f} ms "
                    f"({args.requests} requests)"
                )
    finally:
        connection.close()
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
