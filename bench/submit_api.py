"""Benchmark of job submission through the real HTTP API (not a test).

1. Creates a throw-away PostgreSQL database (``test_<name>`` of DATABASE_URL, through
   ``setup_databases``), a superuser with an API token and queue ``bench``.
2. Starts the web server (``uvicorn armada.asgi:application --workers N``) on it.
3. Batch submit: ``--jobs`` jobs in files of ``--per-file`` jobs (5,000 is the per-request
   maximum), sent by ``--clients`` concurrent clients (threads, one HTTP session each).
   Every job gets its row and two events (submitted, queued), as in production. The web
   processes' CPU time during it is printed too (read from /proc: Linux only).
4. The physical limit, in the same run and the same tables: the same number of job rows
   written by one ``COPY`` (``services.bulk.insert_rows``), and job rows plus their two
   events each.
5. Single-job submits: ``--singles`` requests of one job each, by one client and by
   ``--clients`` clients.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_hf_bench \\
    .venv/bin/python bench/submit_api.py [--jobs 100000] [--per-file 5000] [--clients 4] \\
    [--singles 0]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    db_name: str, workers: int, port: int, options: list[str] | None = None
) -> subprocess.Popen:
    """The web server as production starts it (``armada.webserver.WEB_COMMAND``) on database
    ``db_name``; ``options`` replace the HTTP protocol and add any other uvicorn options.
    Returns once it answers."""
    import requests
    from django.conf import settings

    from armada.webserver import WEB_COMMAND

    db = settings.DATABASES["default"]
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db_name}"
    env = {**os.environ, "DATABASE_URL": url, "ARMADA_DEV": "1"}
    command = [str(ROOT / ".venv/bin/uvicorn"), *WEB_COMMAND[1:]]
    if options and "--http" in options:
        command = command[:2]  # the caller chooses the protocol
    proc = subprocess.Popen(
        [
            *command,
            *(options or []),
            "--workers",
            str(workers),
            "--port",
            str(port),
            "--no-access-log",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the web server exited with {proc.returncode}")
        try:
            if requests.get(f"http://127.0.0.1:{port}/admin/login/", timeout=10).ok:
                return proc
        except requests.RequestException:  # refused, or too slow to answer yet
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError("the web server did not start")


def server_cpu(pid: int) -> float:
    """CPU seconds (user and system) used so far by process ``pid`` and its children (the
    web server and its workers): steadier than wall time on a shared machine."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process has gone
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(entry.name) == pid or int(fields[1]) == pid:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def job_item(i: int) -> dict:
    resources = {"cpu": "100m", "memory": "64Mi"}
    return {
        "priority": i % 10,
        "annotations": {"bench/index": str(i)},
        "podSpec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:latest",
                    "command": ["sh", "-c", "echo hello"],
                    "resources": {"requests": resources, "limits": resources},
                }
            ]
        },
    }


def run_threads(work: list, clients: int, send) -> tuple[float, int]:
    """Send every item of ``work`` with ``clients`` threads (``send(thread_index, item)``
    returns the jobs accepted); returns (seconds, jobs accepted). The first failure stops
    every thread and is raised."""
    lock = threading.Lock()
    todo = list(work)
    accepted = [0]
    errors: list[str] = []

    def worker(index: int) -> None:
        while True:
            with lock:
                if not todo or errors:
                    return
                item = todo.pop()
            try:
                count = send(index, item)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(repr(exc)[:300])
                return
            with lock:
                accepted[0] += count

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"submit failed: {errors[0]}")
    return elapsed, accepted[0]


def run_clients(base: str, token: str, files: list[dict], clients: int) -> tuple[float, int]:
    """Send ``files`` with ``clients`` threads; returns (seconds, jobs accepted)."""
    import requests

    sessions = []
    for _ in range(clients):
        session = requests.Session()
        session.headers["Authorization"] = f"Token {token}"
        sessions.append(session)

    def send(index: int, body: dict) -> int:
        response = sessions[index].post(f"{base}/api/v1/jobs", json=body, timeout=300)
        if response.status_code != 201:
            raise RuntimeError(f"{response.status_code} {response.text[:200]}")
        return len(response.json()["jobIds"])

    return run_threads(files, clients, send)


def raw_copy(count: int, with_events: bool) -> float:
    """The same job rows (and optionally their events) with COPY, in one transaction; only
    the transaction is timed (the rows are built beforehand)."""
    from django.db import transaction
    from django.utils import timezone

    from armada.core.states import EventType, JobState
    from armada.models import Event, Job
    from armada.services.bulk import insert_rows
    from armada.services.ids import new_id

    now = timezone.now()
    item = job_item(0)
    requests_ = {"cpu": 100, "memory": 64 * 1024 * 1024}
    rows, events = [], []
    job_set = f"raw-{with_events}-{time.time_ns()}"
    for i in range(count):
        job_id = new_id()
        rows.append(
            {
                "id": job_id,
                "queue_id": "bench",
                "job_set": job_set,
                "owner": "bench",
                "namespace": "default",
                "priority": i % 10,
                "priority_class": "armada-default",
                "pod_spec": item["podSpec"],
                "annotations": {"bench/index": str(i)},
                "requests": requests_,
                "state": JobState.QUEUED.value,
                "submitted_at": now,
                "last_transition_at": now,
            }
        )
        if with_events:
            common = {"created": now, "queue": "bench", "job_set": job_set, "job_id": job_id}
            events.append({**common, "type": str(EventType.SUBMITTED), "payload": {}})
            events.append({**common, "type": str(EventType.QUEUED), "payload": {}})
    started = time.perf_counter()
    with transaction.atomic():
        insert_rows(Job, rows)
        if events:
            insert_rows(Event, events)
    elapsed = time.perf_counter() - started
    Job.objects.filter(job_set=job_set).delete()
    Event.objects.filter(job_set=job_set).delete()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--per-file", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--singles", type=int, default=1000, help="single-job requests to send (0: none)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the test database")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from armada.models import Event, Job
    from armada.services.queues import queue_create

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    old = setup_databases(verbosity=0, interactive=False, keepdb=args.keep)
    server = None
    try:
        Job.objects.all().delete()
        Event.objects.all().delete()
        user_model = get_user_model()
        admin = user_model.objects.filter(username="bench").first()
        if admin is None:
            admin = user_model.objects.create_superuser("bench", "bench@example.com", "x")
        token = Token.objects.get_or_create(user=admin)[0].key
        from armada.models import Queue

        if not Queue.objects.filter(name="bench").exists():
            queue_create(actor=admin, data={"name": "bench"}, now=timezone.now())
        port = free_port()
        server = start_server(settings.DATABASES["default"]["NAME"], args.workers, port)
        base = f"http://127.0.0.1:{port}"

        # warm up both workers
        run_clients(
            base, token, [{"queue": "bench", "jobSetId": "warm", "jobs": [job_item(0)] * 10}] * 4, 2
        )

        files = []
        for start in range(0, args.jobs, args.per_file):
            size = min(args.per_file, args.jobs - start)
            files.append(
                {
                    "queue": "bench",
                    "jobSetId": f"batch-{start // args.per_file}",
                    "jobs": [job_item(start + i) for i in range(size)],
                }
            )
        cpu_before = server_cpu(server.pid)
        elapsed, accepted = run_clients(base, token, files, args.clients)
        web_cpu = server_cpu(server.pid) - cpu_before
        stored = Job.objects.filter(job_set__startswith="batch-").count()
        assert stored == accepted == args.jobs, (stored, accepted)
        api_rate = accepted / elapsed
        print(
            f"batch submit through the API: {accepted} jobs in {elapsed:.2f} s = "
            f"{api_rate:,.0f} jobs/s ({len(files)} files of {args.per_file}, "
            f"{args.clients} clients, {args.workers} workers); the web processes' CPU: "
            f"{web_cpu:.1f} s = {1e6 * web_cpu / accepted:.0f} µs a job"
        )
        raw_jobs = raw_copy(args.jobs, with_events=False)
        raw_all = raw_copy(args.jobs, with_events=True)
        print(
            f"raw COPY of the job rows: {raw_jobs:.2f} s = {args.jobs / raw_jobs:,.0f} rows/s; "
            f"API = {100 * api_rate / (args.jobs / raw_jobs):.0f}% of it"
        )
        print(
            f"raw COPY of the job rows and their 2 events each: {raw_all:.2f} s = "
            f"{args.jobs / raw_all:,.0f} jobs/s; API = "
            f"{100 * api_rate / (args.jobs / raw_all):.0f}% of it"
        )
        if args.singles:
            single = [
                {"queue": "bench", "jobSetId": "single", "jobs": [job_item(i)]}
                for i in range(args.singles)
            ]
            elapsed, accepted = run_clients(base, token, single, 1)
            print(f"single-job submits, 1 client: {accepted / elapsed:,.0f} requests/s")
            elapsed, accepted = run_clients(base, token, single, args.clients)
            print(
                f"single-job submits, {args.clients} clients: {accepted / elapsed:,.0f} requests/s"
            )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        connection.close()
        teardown_databases(old, verbosity=0, keepdb=args.keep)


if __name__ == "__main__":
    main()
