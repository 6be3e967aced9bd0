"""Benchmark of the jobs grid's live updates, from a commit to an open grid (not a test).

1. Creates a throw-away PostgreSQL database (``test_<name>`` of DATABASE_URL; ``--keep``
   keeps it, so that the seeding is done once) seeded with ``--jobs`` jobs as
   ``bench/lookout.py`` seeds them (``bench/lookout_seed.py``: ~100 queues), plus queue
   ``live-bench`` with ``--page-jobs`` queued jobs, owned by user ``watcher``, who may
   watch no other queue.
2. Starts the web server (uvicorn, ``--workers`` processes) with ``REDIS_URL``, as
   production runs it, and logs ``watcher`` in through Lookout's login form.
3. Streams: ``--streams`` clients (threads, a session each) follow ``GET /live``. A writer
   process commits ``--rate`` events a second for ``--seconds`` through
   ``services.events.events_append``, in transactions of ``--batch``: ``--share`` of them
   are events of live-bench jobs (a new job id each, so each must reach every stream once),
   the rest go to the seeded queues, which the streams filter out. Latency: from just
   before the commit to the first ``jobs`` message naming the job, per stream.
4. Browser (``--browser``, needs /usr/bin/chromium): a Chromium page shows the grid of
   live-bench (``/?queue=live-bench``); the writer changes the state of the jobs on that page,
   ``--browser-rate`` a second, each as the services do (the job row and an event in one
   transaction, beside the same background events); the page records when each row's
   ``data-state`` takes the new value. Latency: commit to the row changed on screen.

Prints, per part, the changes written and delivered and p50 / p95 / p99 / max in ms (for
the browser also how long its reads of ``/rows`` took).

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_live_bench \\
    REDIS_URL=redis://127.0.0.1:6379/11 .venv/bin/python bench/lookout_live.py \\
    [--jobs 1000000] [--streams 8] [--rate 500] [--seconds 30] [--browser] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")

QUEUE = "live-bench"
WATCHER = "watcher"
PASSWORD = "bench-password"  # noqa: S105 - a throw-away database
STATES = ("queued", "leased", "pending", "running")


# --- the database --------------------------------------------------------------------------


def prepare(args: argparse.Namespace) -> None:
    """Seed the jobs (unless kept), the watched queue with its page of jobs, the user."""
    from django.contrib.auth import get_user_model

    from armada.models import Job, Queue
    from armada.services.bulk import insert_rows

    if not Job.objects.exists():
        print(f"seeding {args.jobs:,} jobs", flush=True)
        from lookout_seed import seed  # bench/ is on the path

        seed(args.jobs, random.Random(42))
    users = get_user_model()
    if not users.objects.filter(username=WATCHER).exists():
        users.objects.create_user(WATCHER, password=PASSWORD)
    now = datetime.fromtimestamp(time.time(), UTC)
    if not Queue.objects.filter(name=QUEUE).exists():
        Queue.objects.create(name=QUEUE, owners=[WATCHER], created_at=now, updated_at=now)
    Job.objects.filter(queue_id=QUEUE).delete()
    insert_rows(
        Job,
        [
            {
                "id": f"live{i:022d}",
                "queue_id": QUEUE,
                "job_set": "bench",
                "owner": WATCHER,
                "priority": 0,
                "priority_class": "armada-default",
                "pod_spec": {"containers": [{"name": "main", "image": "busybox"}]},
                "annotations": {},
                "requests": {"cpu": 1000, "memory": 1024**3 * 1000},
                "state": "queued",
                "submitted_at": now - timedelta(seconds=i),
                "last_transition_at": now,
            }
            for i in range(args.page_jobs)
        ],
    )


# --- the writer (its own process) ----------------------------------------------------------


def writer(args: argparse.Namespace) -> None:
    """Commits for ``--seconds``; prints one JSON line per watched change: job id, state and
    the wall-clock time just before its transaction committed."""
    import django

    django.setup()
    from django.db import transaction

    from armada.core.states import EventType
    from armada.models import Job
    from armada.services.events import NewEvent, events_append

    page_jobs = json.loads(args.page) if args.page else []
    rnd = random.Random(11)
    per_s = args.rate / args.batch
    state_of = dict.fromkeys(page_jobs, "queued")
    changes_due = 0.0
    n = 0
    t_start = time.time()
    commits = 0
    out = []
    while time.time() - t_start < args.seconds:
        due = t_start + commits / per_s
        pause = due - time.time()
        if pause > 0:
            time.sleep(pause)
        now = datetime.fromtimestamp(time.time(), UTC)
        watched: list[tuple[str, str]] = []
        with transaction.atomic():
            batch = []
            if page_jobs:  # state changes of the jobs on the page, at --browser-rate
                changes_due += args.browser_rate / per_s
                while changes_due >= 1:
                    changes_due -= 1
                    job = page_jobs[n % len(page_jobs)]
                    state = STATES[(STATES.index(state_of[job]) + 1) % len(STATES)]
                    state_of[job] = state
                    Job.objects.filter(id=job).update(state=state, last_transition_at=now)
                    batch.append(NewEvent(EventType(state), QUEUE, "bench", job, now))
                    watched.append((job, state))
                    n += 1
            else:  # new job ids of the watched queue, --share of the events
                for _ in range(args.batch):
                    if rnd.random() < args.share:
                        job = f"lb{n:024d}"
                        batch.append(NewEvent(EventType.QUEUED, QUEUE, "bench", job, now))
                        watched.append((job, "queued"))
                        n += 1
            while len(batch) < args.batch:  # the rest of the system's events
                q = f"queue-{rnd.randrange(100):03d}"
                job = f"noise{rnd.getrandbits(60):021d}"
                batch.append(NewEvent(EventType.RUNNING, q, f"team-x/exp-{n % 50}", job, now))
            events_append(events=batch)
            committing = time.time()
        commits += 1
        out.extend((job, state, committing) for job, state in watched)
    behind = max(0.0, time.time() - t_start - args.seconds)
    for job, state, t in out:
        print(json.dumps({"job": job, "state": state, "t": t}))
    print(json.dumps({"commits": commits, "behind_s": round(behind, 3)}))


def run_writer(args, db_url: str, page: list[str] | None = None) -> tuple[list[dict], dict]:
    command = [
        sys.executable,
        __file__,
        "--writer",
        *("--rate", str(args.rate), "--seconds", str(args.seconds), "--batch", str(args.batch)),
        *("--share", str(args.share), "--browser-rate", str(args.browser_rate)),
    ]
    if page:
        command += ["--page", json.dumps(page)]
    out = subprocess.run(
        command,
        env={**os.environ, "DATABASE_URL": db_url},
        check=True,
        capture_output=True,
        text=True,
    )
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return lines[:-1], lines[-1]


# --- HTTP ----------------------------------------------------------------------------------


def login(base: str):
    """A session of ``watcher`` through Lookout's login form."""
    import requests

    session = requests.Session()
    page = session.get(f"{base}/login?next=/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    answer = session.post(
        f"{base}/login?next=/",
        data={"username": WATCHER, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/login"},
        allow_redirects=False,
    )
    if answer.status_code != 302:
        raise RuntimeError(f"login failed: {answer.status_code}")
    return session


def follow(session, base: str, ready: threading.Event, seen: dict, counts: dict) -> None:
    """One stream: the arrival time of the first message naming each job."""
    response = session.get(
        f"{base}/live", headers={"Accept": "text/event-stream"}, stream=True, timeout=(10, 60)
    )
    response.raise_for_status()
    buffer = ""
    for chunk in response.iter_content(chunk_size=None, decode_unicode=True):
        arrived = time.time()
        buffer += chunk
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            fields = dict(
                line.split(": ", 1) for line in block.split("\n") if ": " in line and line[0] != ":"
            )
            if fields.get("event") == "ready":
                ready.set()
            elif fields.get("event") == "jobs":
                for job in json.loads(fields["data"])["jobs"]:
                    seen.setdefault(job, arrived)
                    counts[job] = counts.get(job, 0) + 1


def percentiles(values: list[float]) -> str:
    if not values:
        return "nothing arrived"
    ms = sorted(1000 * v for v in values)

    def at(q: float) -> float:
        return ms[min(len(ms) - 1, int(q * len(ms)))]

    return (
        f"p50 {statistics.median(ms):.0f} ms, p95 {at(0.95):.0f} ms, p99 {at(0.99):.0f} ms, "
        f"max {ms[-1]:.0f} ms"
    )


def stream_part(args, base: str, db_url: str) -> None:
    streams = []
    for _ in range(args.streams):
        ready, seen, counts = threading.Event(), {}, {}
        thread = threading.Thread(
            target=follow, args=(login(base), base, ready, seen, counts), daemon=True
        )
        thread.start()
        streams.append((ready, seen, counts))
    for ready, _, _ in streams:
        if not ready.wait(30):
            raise RuntimeError("a stream did not open")
    changes, report = run_writer(args, db_url)
    deadline = time.time() + 15
    while time.time() < deadline and any(len(s) < len(changes) for _, s, _ in streams):
        time.sleep(0.1)
    latencies = [
        seen[c["job"]] - c["t"] for _, seen, _ in streams for c in changes if c["job"] in seen
    ]
    delivered = sum(len(seen) for _, seen, _ in streams)
    twice = sum(n > 1 for _, _, counts in streams for n in counts.values())
    print(
        f"streams: {args.streams} open, {report['commits']} commits of {args.batch} events "
        f"({args.rate:g} events/s, writer behind {report['behind_s']} s), {len(changes)} changes "
        f"of the watched queue, delivered {delivered} of {len(changes) * args.streams} "
        f"(named twice: {twice}); commit -> SSE message: {percentiles(latencies)}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--page-jobs", type=int, default=200)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--rate", type=float, default=500, help="events per second")
    parser.add_argument("--batch", type=int, default=10, help="events per transaction")
    parser.add_argument("--share", type=float, default=0.1, help="of the watched queue")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--browser", action="store_true", help="also through a Chromium page")
    parser.add_argument("--browser-rate", type=float, default=4, help="row changes per second")
    parser.add_argument("--keep", action="store_true", help="keep the seeded database")
    parser.add_argument("--writer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--page", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        writer(args)
        return

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from submit_api import free_port, start_server

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    if not os.environ.get("REDIS_URL"):
        raise SystemExit("set REDIS_URL: the live grid is woken through Redis")
    old = setup_databases(verbosity=0, interactive=False, keepdb=args.keep, serialized_aliases=())
    server = None
    try:
        db = settings.DATABASES["default"]
        db_url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        prepare(args)
        connection.close()
        # The server serves the static files as in production: collected into its var dir.
        os.environ["ARMADA_VAR_DIR"] = tempfile.mkdtemp(prefix="lookout-live-")
        subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v0"],
            check=True,
            cwd=ROOT,
        )
        port = free_port()
        server = start_server(db["NAME"], args.workers, port)
        base = f"http://127.0.0.1:{port}"
        print(
            f"{os.cpu_count()} cores, {args.workers} web workers, load average "
            f"{os.getloadavg()[0]:.2f}",
            flush=True,
        )
        stream_part(args, base, db_url)
        if args.browser:
            from lookout_live_browser import browser_part

            browser_part(
                args,
                f"{base}/login?next=/%3Fqueue%3D{QUEUE}",
                (WATCHER, PASSWORD),
                lambda ids: run_writer(args, db_url, page=ids),
                percentiles,
            )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        connection.close()
        teardown_databases(old, verbosity=0, keepdb=args.keep)


if __name__ == "__main__":
    main()
