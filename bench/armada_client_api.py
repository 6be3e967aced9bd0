"""Benchmark of Armada's own client against us: submits and event streaming over gRPC, with the
same submits through our REST batch API beside them (not a test).

1. Creates a throw-away PostgreSQL database (``test_<name>`` of DATABASE_URL), a superuser
   with an API token and queue ``bench``.
2. Starts the web server with ``--workers N`` and ``N`` grpc processes (``python -m
   armada.grpcserver``, each on its own port; the clients spread over them as a load balancer
   would), all as production starts them.
3. Submits: ``--jobs`` jobs in requests of ``--per-request`` jobs from ``--clients`` threads,
   first as JSON files through ``POST /api/v1/jobs``, then as ``JobSubmitRequest`` messages
   through ``armada_client.ArmadaClient.submit_jobs`` (the official client, unmodified; a
   channel per thread, the token in the call metadata). Requests are built beforehand; each
   job is stored with its two events either way, and the rows are counted afterwards.
4. Events: ``--watchers`` threads follow one job set each with
   ``ArmadaClient.get_job_events_stream`` while a writer process appends ``--rate`` events/s
   spread over those job sets (``bench/event_latency.py``'s writer: commits of ``--batch``
   events, each stamped with the time just before its commit). Reports events written and
   received (every one exactly once) and the p50 / p99 / max from that time to the watcher.

Usage:
  ARMADA_DEV=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/armada_hf_bench \\
    REDIS_URL=redis://127.0.0.1:6379/8 .venv/bin/python bench/armada_client_api.py \\
    [--jobs 100000] [--per-request 1000] [--clients 4] [--processes 2] \\
    [--rate 5000] [--seconds 20] [--watchers 10]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")


class _Metadata:
    """A client interceptor adding ``authorization: Bearer <token>`` to every call: how
    programs using ``armada_client`` authenticate on a plain (non-TLS) channel."""

    def __init__(self, token: str) -> None:
        import grpc

        self.header = ("authorization", f"Bearer {token}")

        class Interceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
            def _details(inner, details):  # noqa: N805
                metadata = list(details.metadata or []) + [self.header]
                return details._replace(metadata=metadata)

            def intercept_unary_unary(inner, continuation, details, request):  # noqa: N805
                return continuation(inner._details(details), request)

            def intercept_unary_stream(inner, continuation, details, request):  # noqa: N805
                return continuation(inner._details(details), request)

        self.interceptor = Interceptor()


def armada_client(target: str, token: str):
    import grpc
    from armada_client.client import ArmadaClient

    channel = grpc.intercept_channel(
        grpc.insecure_channel(
            target,
            options=[
                ("grpc.max_send_message_length", 64 * 1024 * 1024),
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ],
        ),
        _Metadata(token).interceptor,
    )
    return ArmadaClient(channel)


def pod_spec():
    from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
    from armada_client.k8s.io.apimachinery.pkg.api.resource import (
        generated_pb2 as api_resource,
    )

    quantities = {
        "cpu": api_resource.Quantity(string="100m"),
        "memory": api_resource.Quantity(string="64Mi"),
    }
    return core_v1.PodSpec(
        containers=[
            core_v1.Container(
                name="main",
                image="busybox:latest",
                command=["sh", "-c", "echo hello"],
                resources=core_v1.ResourceRequirements(requests=quantities, limits=quantities),
            )
        ]
    )


def start_grpc(db_name: str, port: int):
    """One grpc process on ``port``, as production starts it; returns once it is healthy."""
    import grpc
    from armada_client.armada import health_pb2
    from armada_client.armada.submit_pb2_grpc import SubmitStub
    from django.conf import settings
    from google.protobuf import empty_pb2

    from armada.grpcserver import grpc_command

    db = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db_name}",
        "ARMADA_DEV": "1",
    }
    proc = subprocess.Popen(grpc_command(f"127.0.0.1:{port}"), cwd=ROOT, env=env)
    deadline = time.time() + 120
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = SubmitStub(channel)
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the grpc process exited with {proc.returncode}")
            try:
                answer = stub.Health(empty_pb2.Empty(), timeout=10)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return proc
            except grpc.RpcError:
                time.sleep(0.3)
    proc.kill()
    raise RuntimeError("the grpc process did not start")


def submit_rest(base: str, token: str, args, jobs: int, tag: str) -> tuple[float, int]:
    from submit_api import job_item, run_clients

    files = [
        {
            "queue": "bench",
            "jobSetId": f"rest-{tag}-{n}",
            "jobs": [job_item(start + i) for i in range(min(args.per_request, jobs - start))],
        }
        for n, start in enumerate(range(0, jobs, args.per_request))
    ]
    return run_clients(base, token, files, args.clients)


def submit_grpc(targets: list[str], token: str, args, jobs: int, tag: str) -> tuple[float, int]:
    from submit_api import run_threads

    spec = pod_spec()
    clients = [armada_client(targets[i % len(targets)], token) for i in range(args.clients)]
    make_item = clients[0].create_job_request_item
    requests_ = [
        (
            f"grpc-{tag}-{n}",
            [
                make_item(
                    priority=(start + i) % 10,
                    namespace="default",
                    pod_spec=spec,
                    annotations={"bench/index": str(start + i)},
                )
                for i in range(min(args.per_request, jobs - start))
            ],
        )
        for n, start in enumerate(range(0, jobs, args.per_request))
    ]

    def send(index: int, request: tuple) -> int:
        job_set, items = request
        answer = clients[index].submit_jobs(
            queue="bench", job_set_id=job_set, job_request_items=items
        )
        failed = [r.error for r in answer.job_response_items if r.error]
        if failed:
            raise RuntimeError(failed[0])
        return len(answer.job_response_items)

    return run_threads(requests_, args.clients, send)


def watch(
    target: str,
    token: str,
    job_set: str,
    cursor: int,
    out: list,
    stop: threading.Event,
    stub: bool = False,
):
    """Follow one job set, recording each event's delay from its commit. With ``stub``, read
    the call itself (``EventStub.GetJobSetEvents``) instead of through ``ArmadaClient``'s
    resilient stream, which hands every message through two more threads: the difference is
    the client's own share of the delay."""
    client = armada_client(target, token)
    if stub:
        from armada_client.armada import event_pb2

        stream = client.event_stub.GetJobSetEvents(
            event_pb2.JobSetRequest(
                queue="bench", id=job_set, from_message_id=str(cursor), watch=True
            )
        )
    else:
        stream = client.get_job_events_stream(
            queue="bench", job_set_id=job_set, from_message_id=str(cursor)
        )
    try:
        for message in stream:
            arrived = time.time()
            event = getattr(message.message, message.message.WhichOneof("events"))
            out.append((message.id, arrived - event.created.ToNanoseconds() / 1e9))
            if stop.is_set():
                break
    except Exception:  # noqa: BLE001 - the stream is cancelled at the end
        if not stop.is_set():
            raise
    finally:
        if stub:
            stream.cancel()
        else:
            client.unwatch_events(stream)


def stream_events(targets: list[str], db_name: str, token: str, args) -> dict:
    from django.db import connection
    from event_latency import delivery_report, write_and_wait

    from armada.models import Event

    # Armada's client asks for errorIfMissing: a job set exists once something was submitted
    # to it, as it would be for a real watcher.
    client = armada_client(targets[0], token)
    for i in range(args.watchers):
        item = client.create_job_request_item(priority=1, namespace="default", pod_spec=pod_spec())
        client.submit_jobs(queue="bench", job_set_id=f"js-{i}", job_request_items=[item])
    cursor = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    connection.close()
    stop = threading.Event()
    received: list[list] = [[] for _ in range(args.watchers)]
    threads = [
        threading.Thread(
            target=watch,
            args=(
                targets[i % len(targets)],
                token,
                f"js-{i}",
                cursor,
                received[i],
                stop,
                args.stub,
            ),
            daemon=True,
        )
        for i in range(args.watchers)
    ]
    for t in threads:
        t.start()
    time.sleep(2.0)  # every watcher connected and waiting
    report = write_and_wait(args, db_name, received, os.environ.get("REDIS_URL"))
    stop.set()
    return delivery_report(report, received, missing=float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--per-request", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2, help="web workers and grpc processes")
    parser.add_argument("--rate", type=float, default=5000, help="events per second")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--batch", type=int, default=100, help="events per transaction")
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--skip-submit", action="store_true")
    parser.add_argument(
        "--stub",
        action="store_true",
        help="watch with the generated stub, not ArmadaClient's resilient stream",
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from django.utils import timezone
    from rest_framework.authtoken.models import Token
    from submit_api import free_port, start_server

    from armada.models import Job
    from armada.services.queues import queue_create

    if connection.vendor != "postgresql":
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL)")
    if not os.environ.get("REDIS_URL"):
        raise SystemExit("set REDIS_URL: event streams are woken through Redis in production")
    old = setup_databases(verbosity=0, interactive=False, keepdb=False)
    processes: list[subprocess.Popen] = []
    try:
        db_name = settings.DATABASES["default"]["NAME"]
        admin = get_user_model().objects.create_superuser("bench", "bench@example.com", "x")
        token = Token.objects.create(user=admin).key
        queue_create(actor=admin, data={"name": "bench"}, now=timezone.now())
        connection.close()
        port = free_port()
        processes.append(start_server(db_name, args.processes, port))
        base = f"http://127.0.0.1:{port}"
        targets = []
        for _ in range(args.processes):
            grpc_port = free_port()
            processes.append(start_grpc(db_name, grpc_port))
            targets.append(f"127.0.0.1:{grpc_port}")
        if not args.skip_submit:
            # Half of the jobs each way, in the order REST, gRPC, gRPC, REST: every insert makes
            # the job table's indexes bigger and the next insert slower, so neither way may go
            # last with all of its jobs.
            half = args.jobs // 2
            totals = {"rest": [0.0, 0], "grpc": [0.0, 0]}
            for n, way in enumerate(("rest", "grpc", "grpc", "rest")):
                if way == "rest":
                    took, count = submit_rest(base, token, args, half, str(n))
                else:
                    took, count = submit_grpc(targets, token, args, half, str(n))
                totals[way][0] += took
                totals[way][1] += count
            rest = totals["rest"][1] / totals["rest"][0]
            over_grpc = totals["grpc"][1] / totals["grpc"][0]
            stored = Job.objects.count()
            assert stored == 2 * args.jobs, (stored, 2 * args.jobs)
            print(
                f"submit {args.jobs:,} jobs in requests of {args.per_request:,}, "
                f"{args.clients} clients, {args.processes} processes: "
                f"REST {rest:,.0f} jobs/s, armada_client over gRPC {over_grpc:,.0f} jobs/s "
                f"({100 * over_grpc / rest:.0f}% of REST)"
            )
            connection.close()
        result = stream_events(targets, db_name, token, args)
        print(
            f"events over gRPC at {args.rate:,.0f}/s to {args.watchers} watchers "
            f"({'the generated stub' if args.stub else 'ArmadaClient'}): written "
            f"{result['written']}, received {result['received']} (duplicates "
            f"{result['duplicates']}), writer behind {result['writer_behind_s']} s; latency "
            f"p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, "
            f"max {result['max_ms']:.1f} ms"
        )
    finally:
        for proc in processes:
            proc.terminate()
        for proc in processes:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        connection.close()
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main()
