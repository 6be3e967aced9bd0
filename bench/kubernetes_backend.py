"""Benchmark of the kubernetes backend's reads (not a test): requests and time per tick.

The backend answers ``poll`` and ``nodes`` from list-and-watch caches, so a tick should cost
the API server no request, whatever the number of pods. This measures it against the
emulated API server (``tests.kube_emulator``), run in a child process of its own so that its
CPU is not the backend's: the child makes ``--nodes`` nodes, one daemon pod per node (not
Armada's: no executor label) and the executor's pods (built by ``manifests.pod_manifest``,
labelled as the backend labels them, running for a day), added straight into its store in
steps (``--pods 1000,5000,10000``), and answers the benchmark's commands on its stdin.

At each step, for a new ``KubernetesBackend`` made from a kubeconfig as a deployment makes
it:

- the time until every cache is listed (``wait_synced``) and the list requests (pages of
  500) that took, counted by the informers and by the API server;
- ``--ticks`` ticks (``poll(now)`` then ``nodes()``): wall time (median, p95, max), the
  tick's CPU time and the part of it in ``poll``, Python's full (generation 2) garbage
  collections during the ticks and their time, and the HTTP requests the API server
  received meanwhile (watch renewals included). ``--freeze`` settles the collector once the
  caches are listed, as the executor's worker does (``executor.worker.settle_collector``).

At the last step, also:

- the cost of a change: ``--finish`` pods are finished by their kubelet
  (``emulator.finish``); measured are the time until ``poll`` shows them all finished (end
  to end: the emulator's kubelet writes, the watch events, the tick that sees them), the
  HTTP requests meanwhile and the writes the API server made meanwhile (by kind: what its
  watches send to the informers that select them);
- the memory of the caches: a new backend is listed under ``tracemalloc`` and each cache's
  share is the memory freed when it is emptied (the backend stopped first);
- with ``--profile``, a cProfile of the ticks at the last step (top functions by own time).

Usage: .venv/bin/python bench/kubernetes_backend.py --nodes 1000 --pods 1000,5000,10000
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubernetes_emulator import EXECUTOR_ID, Emulator, pod_name  # noqa: E402

# --- the backend's side --------------------------------------------------------------------


def requests_between(before: Counter, after: Counter) -> dict[str, int]:
    """Requests received between two counts: reads (lists, gets), watches, writes."""
    out = {"reads": 0, "watches": 0, "writes": 0}
    for (method, _kind, watch), n in (after - before).items():
        out["watches" if watch else "reads" if method == "GET" else "writes"] += n
    return out


def list_requests(before: Counter, after: Counter) -> dict[str, int]:
    """Non-watch GETs of collections by kind (the pages of the informers' lists)."""
    out: Counter[str] = Counter()
    for (method, kind, watch), n in (after - before).items():
        if method == "GET" and not watch:
            out[kind] += n
    return dict(out)


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def make_backend(kubeconfig: str) -> Any:
    from armada.core.config import parse_config
    from armada.executor.backends.kubernetes import KubernetesBackend

    config = parse_config(
        {
            "executors": [
                {
                    "id": EXECUTOR_ID,
                    "backend": "kubernetes",
                    "trackedNodeLabels": ["kubernetes.io/hostname"],
                    "kubernetes": {"kubeconfig": kubeconfig},
                }
            ]
        }
    ).executors[0]
    return KubernetesBackend(config)


def tick(backend: Any) -> tuple[list[Any], list[Any]]:
    statuses = backend.poll(datetime.now(UTC))  # noqa: TID251 - the tick reads the clock
    nodes = backend.nodes()
    return statuses, nodes


def measure_step(emulator: Emulator, kubeconfig: str, pods: int, args: argparse.Namespace):
    before = emulator.counts()
    rss0 = rss_kib()
    start = time.perf_counter()
    backend = make_backend(kubeconfig)
    if not backend.wait_synced(600):
        raise RuntimeError("the backend's caches were not listed in 600 s")
    sync_s = time.perf_counter() - start
    rss1 = rss_kib()
    if args.freeze:
        from armada.executor.worker import settle_collector

        settle_collector()  # as the executor's worker does once its cluster is read
    synced = emulator.counts()
    pages = {i.name: i.lists for i in backend.informers}
    statuses, nodes = tick(backend)  # a first tick, not timed
    ours = sum(1 for s in statuses if s.running_at and not s.finished_at)
    if len(statuses) != pods or ours != pods or len(nodes) != args.nodes:
        raise RuntimeError(
            f"the backend sees {len(statuses)} pods ({ours} running) on {len(nodes)} nodes; "
            f"expected {pods} on {args.nodes}"
        )
    profile = cProfile.Profile() if args.profile and pods == args.sizes[-1] else None
    before_ticks = emulator.counts()
    times, cpu, poll_times = [], [], []
    collections: list[float] = []  # full (generation 2) collections during the ticks
    gc_start = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                gc_start[0] = time.perf_counter()
            else:
                collections.append(time.perf_counter() - gc_start[0])

    gc.callbacks.append(on_gc)
    try:
        for _ in range(args.ticks):
            if profile is not None:
                profile.enable()
            start, start_cpu = time.perf_counter(), time.thread_time()
            backend.poll(datetime.now(UTC))  # noqa: TID251 - the tick reads the clock
            polled = time.perf_counter()
            backend.nodes()
            times.append(time.perf_counter() - start)
            cpu.append(time.thread_time() - start_cpu)
            poll_times.append(polled - start)
            if profile is not None:
                profile.disable()
    finally:
        gc.callbacks.remove(on_gc)
    after_ticks = emulator.counts()
    times.sort()
    row = {
        "pods": pods,
        "sync_s": sync_s,
        "pages": pages,
        "list_requests": list_requests(before, synced),
        "rss_mib": (rss1 - rss0) / 1024,
        "median_ms": statistics.median(times) * 1000,
        "p95_ms": times[int(0.95 * (len(times) - 1))] * 1000,
        "max_ms": times[-1] * 1000,
        "cpu_ms": statistics.median(cpu) * 1000,
        "poll_ms": statistics.median(poll_times) * 1000,
        "gc": (len(collections), sum(collections) * 1000),
        "tick_requests": requests_between(before_ticks, after_ticks),
    }
    if profile is not None:
        print(f"\nProfile of {args.ticks} ticks at {pods} pods (top 15 by own time):")
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)
    return backend, row


def measure_finish(emulator: Emulator, backend: Any, count: int, pods: int) -> dict[str, Any]:
    names = [pod_name(i) for i in range(0, pods, max(1, pods // count))][:count]
    wanted = set(names)
    before = emulator.counts()
    since = emulator.ask("rv")
    ticks = 0
    start = time.perf_counter()
    emulator.ask("finish", names=names)
    while True:
        statuses, _ = tick(backend)
        ticks += 1
        done = sum(1 for s in statuses if s.name in wanted and s.finished_at and s.succeeded)
        if done == len(names):
            break
        if time.perf_counter() - start > 300:
            raise RuntimeError(f"only {done} of {len(names)} pods seen finished after 300 s")
        time.sleep(0.01)
    seconds = time.perf_counter() - start
    time.sleep(1.0)  # let the last events of the kubelet arrive before counting
    return {
        "pods": len(names),
        "seconds": seconds,
        "ticks": ticks,
        "requests": requests_between(before, emulator.counts()),
        "writes": emulator.ask("changes", since=since),
    }


def measure_memory(kubeconfig: str) -> dict[str, float]:
    """Memory of each cache, listed under tracemalloc: what emptying it frees."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    backend = make_backend(kubeconfig)
    if not backend.wait_synced(600):
        raise RuntimeError("the backend's caches were not listed in 600 s")
    backend.close()
    total = tracemalloc.get_traced_memory()[0]
    out = {"total": (total - base) / 2**20}
    for informer in backend.informers:
        held = tracemalloc.get_traced_memory()[0]
        count = len(informer.items())
        informer._objects = {}  # the cache itself (the backend is stopped)
        out[f"{informer.name} ({count:,})"] = (held - tracemalloc.get_traced_memory()[0]) / 2**20
    tracemalloc.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", default="1000,5000,10000", help="steps, comma-separated")
    parser.add_argument("--ticks", type=int, default=50)
    parser.add_argument("--finish", type=int, default=1000, help="pods finished at the end")
    parser.add_argument("--no-daemons", dest="daemons", action="store_false")
    parser.add_argument("--no-memory", dest="memory", action="store_false")
    parser.add_argument("--profile", action="store_true", help="cProfile the last ticks")
    parser.add_argument(
        "--freeze",
        action="store_true",
        help="settle the collector once the caches are listed, as the executor's worker does",
    )
    parser.add_argument("--max-history", type=int, default=200_000)
    args = parser.parse_args()
    args.sizes = sorted(int(p) for p in args.pods.split(","))

    print(
        f"machine: {os.uname().machine}, {os.cpu_count()} cpus, Python {sys.version.split()[0]}; "
        f"{args.nodes:,} nodes"
        + (" with a daemon pod each" if args.daemons else "")
        + f"; {args.ticks} ticks per step"
        + (
            "; the collector settled after each sync, as the executor's worker does"
            if args.freeze
            else ""
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        emulator = Emulator(args, kubeconfig)
        try:
            if args.daemons:
                got = emulator.ask("wait_running", count=args.nodes, timeout=600)
                print(f"{got['running']:,} daemon pods running after {got['seconds']:.1f} s")
            rows = []
            backend = None
            for pods in args.sizes:
                added = emulator.ask("add_pods", total=pods)
                expected = pods + (args.nodes if args.daemons else 0)
                got = emulator.ask("wait_running", count=expected, timeout=1800)
                print(
                    f"{pods:,} pods: added in {added['seconds']:.1f} s, "
                    f"{got['running']:,} running after {got['seconds']:.1f} s more"
                )
                if backend is not None:
                    backend.close()
                backend, row = measure_step(emulator, kubeconfig, pods, args)
                rows.append(row)
            print()
            print(
                "| pods | sync | list requests (pods / other pods / nodes / events / services"
                " / ingresses) | RSS after sync | tick median | tick p95 | tick max"
                " | tick CPU median | of which poll | full GCs in the ticks | requests in all"
                " ticks (reads / watches / writes) |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|---|")
            for r in rows:
                p = r["pages"]
                pages = " / ".join(
                    str(p[k])
                    for k in ("pods", "other-pods", "nodes", "events", "services", "ingresses")
                )
                req = r["tick_requests"]
                print(
                    f"| {r['pods']:,} | {r['sync_s']:.2f} s | {sum(p.values())} ({pages}) "
                    f"| +{r['rss_mib']:.0f} MiB | {r['median_ms']:.1f} ms | {r['p95_ms']:.1f} ms "
                    f"| {r['max_ms']:.1f} ms | {r['cpu_ms']:.1f} ms | {r['poll_ms']:.1f} ms "
                    f"| {r['gc'][0]} ({r['gc'][1]:.0f} ms) "
                    f"| {req['reads']} / {req['watches']} / {req['writes']} |"
                )
            for r in rows:
                print(
                    f"  API server's count of list requests at {r['pods']:,}: {r['list_requests']}"
                )
            if args.finish and backend is not None:
                f = measure_finish(emulator, backend, args.finish, args.sizes[-1])
                req = f["requests"]
                print(
                    f"\n{f['pods']:,} pods finished by their kubelet: all seen finished by poll "
                    f"after {f['seconds']:.2f} s ({f['ticks']} ticks); requests meanwhile: "
                    f"{req['reads']} reads, {req['watches']} watches, {req['writes']} writes; "
                    f"writes the API server watched out: {f['writes']}"
                )
            if backend is not None:
                backend.close()
            if args.memory:
                memory = measure_memory(kubeconfig)
                print(f"\nMemory of the caches at {args.sizes[-1]:,} pods (tracemalloc):")
                for name, mib in memory.items():
                    print(f"  {name}: {mib:.1f} MiB")
        finally:
            emulator.stop()


if __name__ == "__main__":
    main()
