"""Benchmark of the executor API against the in-process path, side by side (not a test).

Creates a throw-away test database (PostgreSQL when DATABASE_URL is set, else SQLite), starts
the ``executor-api`` process on it, and for each ``--nodes`` count registers an executor with
that many nodes and has the scheduler lease ``--leases`` jobs to it. Then:

- **leases**: a round that hands every one of those leases to the executor, measured both
  ways, alternating, ``--rounds`` times each: *in-process* is the round's service called in
  this process (``services.executor_rounds.executor_round``, rows as dicts), *API* is the
  executor's own client over gRPC (``ExecutorApiClient.lease``: the node list and held runs
  sent, the server's checks, the leases serialized, parsed back and their pod specs decoded).
  Leases per second is leases / round time; the goal is API >= 70 % of in-process;
- **reports**: ``--reporters`` senders at once (as several executors report side by side),
  each with its share of the leased runs, send report batches of ``--batch`` events
  (pending, running, then succeeded for each run) through the API, together at
  ``--events-per-second``; each batch's latency is recorded (goal: p99 under 500 ms at
  5,000 events/s). The in-process apply rate of the same kind of batches is measured beside
  it, from one sender.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_bench \\
    .venv/bin/python bench/executor_api.py --nodes 40 --nodes 1000
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from functools import partial
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url(settings_dict: dict) -> str:
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(settings_dict['NAME']).resolve()}"
    user = quote(settings_dict.get("USER") or "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}@{host}:{port}/{settings_dict['NAME']}"


def lease_fields(row: dict) -> dict:
    """A lease as the agent takes it, from the round's row (the in-process path)."""
    return {
        "run_id": row["id"],
        "job_id": row["job_id"],
        "node": row["node"],
        "pod_name": row["pod_name"],
        "namespace": row["job__namespace"],
        "pod_spec": json.loads(row["pod_spec_json"]),
        "annotations": row["job__annotations"] or {},
        "queue": row["job__queue_id"],
        "job_set": row["job__job_set"],
        "owner": row["job__owner"],
        "mutations": json.loads(row["mutations_json"] or "{}"),
    }


def send_reports(
    client, executor_id, session, t0, rate, batch_size, latencies, lags, share
) -> tuple[int, float, float]:
    """Report pending, running, then succeeded for the runs of ``share``, in batches of
    ``batch_size`` events at ``rate`` events/s; each call's latency goes to ``latencies``,
    and how late each batch left (behind its schedule: the server not keeping up) to
    ``lags``. Returns the events sent, and when the first left and the last was answered."""
    from armada.core.reports import RunReport
    from armada.core.states import RunState
    from armada.executor.api import executorapi_pb2 as pb
    from armada.executor.api.messages import run_event

    phases = (RunState.PENDING, RunState.RUNNING, RunState.SUCCEEDED)
    events = [
        RunReport(r, state, t0 + timedelta(seconds=i), exit_code=0 if i == 2 else None)
        for i, state in enumerate(phases)
        for r in share
    ]
    # The messages are made before the clock starts: an executor makes them on its own
    # machine, while this one has two cores for the client, the server and PostgreSQL.
    requests = [
        pb.ReportRequest(
            executor_id=executor_id,
            session=session,
            events=[run_event(e) for e in events[i : i + batch_size]],
        )
        for i in range(0, len(events), batch_size)
    ]
    begun = time.perf_counter()
    for i, request in enumerate(requests):
        wait = begun + i * batch_size / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        lags.append(max(0.0, -wait))
        t = time.perf_counter()
        answer = client.report(request)
        latencies.append(time.perf_counter() - t)
        assert all(r.outcome == pb.APPLIED for r in answer), answer[0]
    return len(events), begun, time.perf_counter()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, action="append", default=[])
    parser.add_argument("--leases", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--events-per-second", type=int, default=5000)
    parser.add_argument("--reporters", type=int, default=2)
    args = parser.parse_args()
    node_counts = args.nodes or [40, 1000]

    import django

    django.setup()
    import yaml
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from django.utils import timezone

    old = setup_databases(verbosity=0, interactive=False)
    server = None
    workdir = Path(tempfile.mkdtemp(prefix="bench-xapi-"))
    try:
        from armada.core.config import parse_config
        from armada.core.reports import RunReport
        from armada.core.states import RunState
        from armada.executor.api import executorapi_pb2 as pb
        from armada.executor.api.client import ExecutorApiClient, open_channel
        from armada.executor.api.messages import Lease, config_nodes
        from armada.models import Executor, Run
        from armada.services.executor_credentials import executor_credential_issue
        from armada.services.executor_rounds import executor_round
        from armada.services.queues import queue_create
        from armada.services.run_reports import runs_apply_report_batch
        from armada.services.scheduler import scheduler_cycle
        from armada.services.submit import job_submit
        from armada.wire.executor_ops import nodes_digest, reported_nodes

        config = {
            "scheduling": {"maximumJobsPerRound": args.leases, "maxQueueLookback": args.leases},
            "executorTimeout": "1h",
        }
        settings.ARMADA = parse_config(config)
        (workdir / "armada.yaml").write_text(yaml.safe_dump(config))
        address = f"127.0.0.1:{free_port()}"
        env = {
            **os.environ,
            "DATABASE_URL": database_url(connection.settings_dict),
            "ARMADA_CONFIG": str(workdir / "armada.yaml"),
            "ARMADA_VAR_DIR": str(workdir / "var"),
        }
        connection.close()
        server = subprocess.Popen(
            [sys.executable, "-m", "armada.executorapiserver", "--address", address],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        line = server.stdout.readline()
        if "serving" not in line:
            raise SystemExit(f"the executor-api process did not start: {line}")

        now = timezone.now()
        user = get_user_model().objects.create_superuser("bench", "b@example.com", "x")
        queue_create(actor=user, data={"name": "bench"}, now=now)
        job = {
            "priority": 0,
            "podSpec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:latest",
                        "command": ["sleep", "3600"],
                        "env": [{"name": f"VAR_{i}", "value": "x" * 40} for i in range(8)],
                        "resources": {
                            "requests": {"cpu": "10m", "memory": "16Mi"},
                            "limits": {"cpu": "10m", "memory": "16Mi"},
                        },
                    }
                ]
            },
        }
        print(f"database: {connection.vendor}; leases per round: {args.leases}")
        results = []
        for count in node_counts:
            executor_id = f"bench-{count}"
            executor_config = parse_config(
                {
                    "executors": [
                        {
                            "id": executor_id,
                            "nodes": [
                                {
                                    "name": f"n{count}",
                                    "count": count,
                                    "allocatable": {"cpu": "256", "memory": "1Ti"},
                                }
                            ],
                        }
                    ]
                }
            ).executors[0]
            key = executor_credential_issue(cluster_id=executor_id, name="bench", now=now).key
            client = ExecutorApiClient(open_channel(address), lambda key=key: key, timeout=120)
            session = client.open_session(
                pb.OpenSessionRequest(executor_id=executor_id, pool="default", backend="fake")
            ).session
            nodes = config_nodes(executor_config)
            request = pb.LeaseRequest(
                executor_id=executor_id, session=session, pool="default", nodes=nodes
            )
            client.lease(request)  # registers the nodes
            # Only this executor takes the new jobs: the earlier ones look lost to the cycle.
            Executor.objects.exclude(id=executor_id).update(last_heartbeat=now - timedelta(days=1))
            for start in range(0, args.leases, 1000):
                n = min(1000, args.leases - start)
                job_submit(
                    actor=user,
                    data={"queue": "bench", "jobSetId": f"s{count}", "jobs": [job] * n},
                    now=now,
                )
            leased = 0
            while leased < args.leases:
                report = scheduler_cycle(now=timezone.now())
                if not report.leased:
                    break
                leased += report.leased
            parsed_nodes = reported_nodes(request.nodes)
            digest = nodes_digest(request)
            in_process, api = [], []
            for _ in range(args.rounds):
                executor = Executor.objects.get(id=executor_id)
                t = time.perf_counter()
                answer = executor_round(
                    executor=executor,
                    pool="default",
                    nodes=parsed_nodes,
                    nodes_digest=digest,
                    held=[],
                    now=timezone.now(),
                )
                # What the agent needs of each lease: its pod spec as a dict.
                taken = [Lease(**lease_fields(row)) for row in answer.leases]
                in_process.append(len(taken) / (time.perf_counter() - t))
                t = time.perf_counter()
                got = client.lease(request)
                api.append(len(got.leases) / (time.perf_counter() - t))
                assert len(got.leases) == len(answer.leases) == leased, (len(got.leases), leased)
            a, b = statistics.median(in_process), statistics.median(api)
            results.append((count, leased, a, b))
            print(
                f"nodes {count:5d}: {leased} leases per round; in-process {a:8.0f} leases/s, "
                f"API {b:8.0f} leases/s ({b / a:.0%} of in-process)"
            )

            # Reports at the asked rate through the API, from --reporters senders at once
            # (a fleet's executors report side by side), each for its own share of the runs.
            run_ids = list(
                Run.objects.filter(executor=executor_id).order_by("id").values_list("id", flat=True)
            )
            shares = [run_ids[i :: args.reporters] for i in range(args.reporters)]
            latencies: list[float] = []
            lags: list[float] = []
            rate = args.events_per_second / args.reporters
            t0 = timezone.now()

            with ThreadPoolExecutor(args.reporters) as pool:
                send = partial(
                    send_reports,
                    client,
                    executor_id,
                    session,
                    t0,
                    rate,
                    args.batch,
                    latencies,
                    lags,
                )
                done = list(pool.map(send, shares))
            sent = sum(d[0] for d in done)
            elapsed = max(d[2] for d in done) - min(d[1] for d in done)
            print(
                f"nodes {count:5d}: reports through the API: {sent} events in {elapsed:.1f} s "
                f"({sent / elapsed:.0f}/s offered {args.events_per_second}/s by "
                f"{args.reporters} senders), batch of {args.batch}: "
                f"p50 {percentile(latencies, 50) * 1000:.0f} ms, "
                f"p99 {percentile(latencies, 99) * 1000:.0f} ms, "
                f"max {max(latencies) * 1000:.0f} ms; the latest batch left "
                f"{max(lags) * 1000:.0f} ms behind its schedule"
            )
            client.close()

        # In-process apply rate of the same batches, on fresh leases.
        executor_id = f"bench-{node_counts[-1]}"
        job_submit(
            actor=user,
            data={"queue": "bench", "jobSetId": "direct", "jobs": [job] * min(args.leases, 5000)},
            now=now,
        )
        scheduler_cycle(now=timezone.now())
        run_ids = list(
            Run.objects.filter(executor=executor_id, state="leased").values_list("id", flat=True)
        )
        t0 = timezone.now()
        events = [
            RunReport(r, state, t0 + timedelta(seconds=i))
            for i, state in enumerate((RunState.PENDING, RunState.RUNNING, RunState.SUCCEEDED))
            for r in run_ids
        ]
        t = time.perf_counter()
        for i in range(0, len(events), args.batch):
            runs_apply_report_batch(
                executor_id=executor_id, reports=events[i : i + args.batch], now=timezone.now()
            )
        took = time.perf_counter() - t
        print(
            f"reports in-process: {len(events)} events in {took:.1f} s ({len(events) / took:.0f}/s)"
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait(30)
        connection.close()
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
