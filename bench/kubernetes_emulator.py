"""The emulated API server of ``bench/kubernetes_backend.py``, in a process of its own.

Run by the benchmark (``Emulator`` starts it): it makes ``--nodes`` nodes, one daemon pod per
node unless ``--no-daemons``, writes its kubeconfig to ``--kubeconfig``, and answers the
benchmark's commands, one JSON line each on stdin (add pods, wait until they run, request
counts, finish pods, store writes, stop). The executor's pods are built by
``manifests.pod_manifest`` and labelled as the backend labels them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EXECUTOR_ID = "bench"
NAMESPACE = "default"
DAY = "24h"
SPEC = {
    "containers": [
        {
            "name": "main",
            "image": "busybox:1.36",
            "resources": {
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "limits": {"cpu": "100m", "memory": "64Mi"},
            },
        }
    ],
    "terminationGracePeriodSeconds": 1,
}


def node_name(i: int) -> str:
    return f"node-{i:05d}"


def pod_name(i: int) -> str:
    return f"armada-bench-{i:06d}"


# --- the emulator's process ----------------------------------------------------------------


def serve(args: argparse.Namespace) -> None:
    """The child: an emulated API server, driven by JSON lines on stdin (one answer each)."""
    from armada.executor.backends.base import PodRequest
    from armada.executor.backends.kubernetes.manifests import pod_manifest
    from tests.kube_emulator import KubeEmulator

    emu = KubeEmulator(max_history=args.max_history)
    for i in range(args.nodes):
        emu.add_node(node_name(i), labels={"kubernetes.io/hostname": node_name(i)})
        if args.daemons:
            emu.add_pod(
                {
                    "metadata": {
                        "name": f"node-exporter-{i:05d}",
                        "labels": {"app": "node-exporter"},
                        "annotations": {"fake.armadaproject.io/duration": DAY},
                    },
                    "spec": {
                        "nodeName": node_name(i),
                        "containers": [
                            {
                                "name": "exporter",
                                "image": "prom/node-exporter:v1.8.0",
                                "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}},
                            }
                        ],
                    },
                },
                namespace="kube-system",
            )
    emu.start()
    emu.write_kubeconfig(args.kubeconfig)
    added = 0

    def running() -> int:
        return sum(1 for p in emu.pods() if (p.get("status") or {}).get("phase") == "Running")

    def answer(value: Any) -> None:
        sys.stdout.write(json.dumps(value) + "\n")
        sys.stdout.flush()

    answer({"url": emu.url})
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "add_pods":
            start = time.perf_counter()
            while added < cmd["total"]:
                request = PodRequest(
                    name=pod_name(added),
                    run_id=f"run-{added:06d}",
                    job_id=f"job-{added:06d}",
                    node=node_name(added % args.nodes),
                    pod_spec=SPEC,
                    annotations={"fake.armadaproject.io/duration": DAY},
                    namespace=NAMESPACE,
                    queue="bench",
                    job_set="bench",
                    owner="bench",
                )
                emu.add_pod(pod_manifest(request, request.node, EXECUTOR_ID))
                added += 1
            answer({"seconds": time.perf_counter() - start})
        elif op == "wait_running":
            start = time.perf_counter()
            deadline = time.monotonic() + cmd["timeout"]
            while (count := running()) < cmd["count"] and time.monotonic() < deadline:
                time.sleep(0.5)
            answer({"running": count, "seconds": time.perf_counter() - start})
        elif op == "rv":
            answer(emu.store.rv)
        elif op == "changes":
            with emu.store.lock:
                kinds = Counter(
                    f"{c.plural} {c.type}" for c in emu.store.history if c.rv > cmd["since"]
                )
            answer(dict(kinds))
        elif op == "counts":
            answer([[m, k, w, n] for (m, k, w), n in emu.request_counts().items()])
        elif op == "finish":
            for name in cmd["names"]:
                emu.finish(NAMESPACE, name)
            answer({})
        elif op == "stop":
            answer({})
            break
    emu.stop()


class Emulator:
    """The benchmark's side of the child process."""

    def __init__(self, args: argparse.Namespace, kubeconfig: str) -> None:
        command = [
            sys.executable,
            __file__,
            "--nodes",
            str(args.nodes),
            "--kubeconfig",
            kubeconfig,
            "--max-history",
            str(args.max_history),
        ]
        if not args.daemons:
            command.append("--no-daemons")
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.url = self._read()["url"]

    def _read(self) -> Any:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the emulator's process ended")
        return json.loads(line)

    def ask(self, op: str, **kw: Any) -> Any:
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def counts(self) -> Counter[tuple[str, str, bool]]:
        return Counter({(m, k, w): n for m, k, w, n in self.ask("counts")})

    def stop(self) -> None:
        try:
            self.ask("stop")
        finally:
            self.proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--max-history", type=int, default=200_000)
    parser.add_argument("--no-daemons", dest="daemons", action="store_false")
    serve(parser.parse_args())


if __name__ == "__main__":
    main()
