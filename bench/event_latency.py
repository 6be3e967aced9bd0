"""Benchmark of event delivery: from the commit of an event to a watching client (not a test).

1. Creates a throw-away PostgreSQL database (``test_<name>`` of DATABASE_URL), a superuser
   with an API token and queue ``bench``.
2. Starts the web server (``uvicorn armada.asgi:application --workers N``), once with
   ``REDIS_URL`` (streams woken through Redis) and once without (streams poll every 250 ms).
3. ``--watchers`` clients (threads) each follow one job set's NDJSON stream
   (``watch=true``), while a writer process appends ``--rate`` events per second spread over
   those job sets, in transactions of ``--batch`` events through
   ``services.events.events_append`` (so with Redis each commit publishes a wake-up). Every
   event carries the wall-clock time taken just before its transaction commits.
4. Prints, per mode, the events written and received (each watcher must get every event
   of its job set exactly once) and p50 / p99 / max latency from commit to client.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_hf_bench \\
    REDIS_URL=redis://127.0.0.1:6379/8 .venv/bin/python bench/event_latency.py \\
    [--rate 5000] [--seconds 20] [--watchers 10] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")


def writer(args: argparse.Namespace) -> None:
    """Runs in its own process: ``--rate`` events/s for ``--seconds`` s; prints the count."""
    import django

    django.setup()
    from django.db import transaction
    from django.utils import timezone

    from armada.core.states import EventType
    from armada.services.events import NewEvent, events_append

    interval = args.batch / args.rate
    total = int(args.rate * args.seconds)
    written = 0
    started = time.perf_counter()
    while written < total:
        due = started + written / args.rate
        pause = due - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        count = min(args.batch, total - written)
        now = timezone.now()
        with transaction.atomic():
            events = [
                NewEvent(
                    EventType.RUNNING,
                    queue="bench",
                    job_set=f"js-{(written + i) % args.watchers}",
                    job_id=f"bench{written + i:021d}",
                    created=now,
                    payload={"t": time.time()},
                )
                for i in range(count)
            ]
            events_append(events=events)
        written += count
    lag = time.perf_counter() - started - args.seconds
    print(json.dumps({"written": written, "behind_s": round(max(lag, 0), 3), "interval": interval}))


def watch(base: str, token: str, job_set: str, cursor: int, out: list, stop: threading.Event):
    import requests

    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    response = session.get(
        f"{base}/api/v1/job-sets/bench/{job_set}/events",
        params={"watch": "true", "from": str(cursor)},
        stream=True,
        timeout=(10, 30),
    )
    response.raise_for_status()
    buffer = b""
    for chunk in response.iter_content(chunk_size=None):  # as the bytes arrive
        arrived = time.time()
        if stop.is_set():
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                event = json.loads(line)
                out.append((event["id"], arrived - event["t"]))
    response.close()


def write_and_wait(args, db_name: str, received: list[list], redis_url: str | None) -> dict:
    """Runs the writer (this file with ``--writer``) in its own process against ``db_name``,
    with ``REDIS_URL`` set to ``redis_url`` (none when None), then waits up to 60 s for the
    watchers to have received as many events as it wrote; returns the writer's report."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db_name}",
    }
    env.pop("REDIS_URL", None)
    if redis_url:
        env["REDIS_URL"] = redis_url
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--writer",
            "--rate",
            str(args.rate),
            "--seconds",
            str(args.seconds),
            "--batch",
            str(args.batch),
            "--watchers",
            str(args.watchers),
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    deadline = time.time() + 60  # the watchers catch up with the last events
    while sum(map(len, received)) < report["written"] and time.time() < deadline:
        time.sleep(0.2)
    return report


def delivery_report(report: dict, received: list[list], missing: float | None = None) -> dict:
    """Events written (the writer's ``report``) against those the watchers ``received`` (one
    list of ``(event id, latency s)`` per watcher): counts, duplicates and latencies in ms
    (``missing`` for the latencies when nothing arrived)."""
    latencies = sorted(lat for per in received for _, lat in per)
    ids = [i for per in received for i, _ in per]
    return {
        "written": report["written"],
        "writer_behind_s": report["behind_s"],
        "received": len(ids),
        "duplicates": len(ids) - len(set(ids)),
        "p50_ms": 1000 * statistics.median(latencies) if latencies else missing,
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else missing,
        "max_ms": 1000 * latencies[-1] if latencies else missing,
    }


def run_mode(args, db_name: str, token: str, redis_url: str | None) -> dict:
    sys.path.insert(0, str(ROOT / "bench"))
    from submit_api import free_port, start_server

    from armada.models import Event

    saved = os.environ.pop("REDIS_URL", None)
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    port = free_port()
    server = start_server(db_name, args.workers, port)
    if saved is not None:
        os.environ["REDIS_URL"] = saved
    base = f"http://127.0.0.1:{port}"
    cursor = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    stop = threading.Event()
    received: list[list] = [[] for _ in range(args.watchers)]
    threads = [
        threading.Thread(
            target=watch, args=(base, token, f"js-{i}", cursor, received[i], stop), daemon=True
        )
        for i in range(args.watchers)
    ]
    try:
        for t in threads:
            t.start()
        time.sleep(2.0)  # every watcher connected and waiting
        report = write_and_wait(args, db_name, received, redis_url)
    finally:
        stop.set()
        server.terminate()
        server.wait(timeout=30)
    return delivery_report(report, received)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=5000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--batch", type=int, default=100, help="events per transaction")
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--writer", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        writer(args)
        return

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from armada.services.queues import queue_create

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        raise SystemExit("set REDIS_URL: the benchmark compares Redis wake-ups with polling")
    old = setup_databases(verbosity=0, interactive=False, keepdb=False)
    try:
        db_name = settings.DATABASES["default"]["NAME"]
        admin = get_user_model().objects.create_superuser("bench", "bench@example.com", "x")
        token = Token.objects.create(user=admin).key
        queue_create(actor=admin, data={"name": "bench"}, now=timezone.now())
        connection.close()
        for label, url in (("Redis wake-ups", redis_url), ("polling only (no REDIS_URL)", None)):
            result = run_mode(args, db_name, token, url)
            print(
                f"{label}: written {result['written']}, received {result['received']} "
                f"(duplicates {result['duplicates']}), writer behind {result['writer_behind_s']} s; "
                f"latency p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, "
                f"max {result['max_ms']:.1f} ms"
            )
    finally:
        connection.close()
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
