"""The resource metrics behind ``metrics.k8s.io/v1beta1``: what metrics-server would have
scraped from the kubelets, set by tests, and the ``PodMetrics``/``NodeMetrics`` objects it
serves (``metrics_http`` routes the requests).

A pod has metrics once it is ``Running`` and a test has given usage to one of its containers
(``set_usage``): a pod that metrics-server has not scraped yet, one that is still Pending or
has ended, has none, and is left out of lists (a ``get`` of it is 404). The usage belongs to
the first pod of that name that is served with it: a later pod of the same name (a new
attempt of the job) starts without metrics, as a new pod does. Quantities are written in
Kubernetes' canonical form, as metrics-server writes them (cpu from nanocores, ``"250m"``,
``"13000001n"``; memory from bytes, ``"100Mi"``, ``"12960Ki"``). ``timestamp`` is the
latest scrape (scrapes every ``resolution`` seconds) and ``window`` the time the cpu rate
was measured over. A node's metrics are the sum of its pods' (a real node also counts what
runs outside pods); a node that is not Ready has none.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from armada.core.quantity import parse_quantity
from tests.kube_emulator.objects import timestamp

Obj = dict[str, Any]
GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
# What the aggregated API does: served; absent (no APIService: metrics-server was never
# installed, every path is 404); unavailable (the APIService is registered but
# metrics-server does not answer: the aggregator's 503); forbidden (served, but the caller's
# role grants nothing in the group: RBAC's 403 on every read under the version).
SERVED, ABSENT, UNAVAILABLE, FORBIDDEN = "served", "absent", "unavailable", "forbidden"
STATES = (SERVED, ABSENT, UNAVAILABLE, FORBIDDEN)

_DECIMAL = (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3), ("", 0))
_BINARY = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))


def cpu_text(nanocores: int) -> str:
    """Nanocores in canonical decimal form: the largest suffix that keeps a whole number."""
    if nanocores == 0:
        return "0"
    for suffix, power in (*_DECIMAL, ("m", -3), ("u", -6)):
        factor = 10 ** (power + 9)
        if nanocores % factor == 0:
            return f"{nanocores // factor}{suffix}"
    return f"{nanocores}n"


def bytes_text(size: int) -> str:
    """Bytes in canonical binary form; below 1024 (or not a multiple of 1 Ki) as Kubernetes
    writes them: decimal for the small, plain for the others."""
    if -1024 < size < 1024:
        for suffix, power in _DECIMAL:
            if size and size % 10**power == 0:
                return f"{size // 10**power}{suffix}"
        return str(size)
    for suffix, power in _BINARY:
        if size % (1 << power) == 0:
            return f"{size >> power}{suffix}"
    return str(size)


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.Duration`` writes it (``15s``, ``10.5s``, ``1m0s``)."""
    millis = round(seconds * 1000)
    minutes, rest = divmod(millis, 60_000)
    text = f"{rest // 1000}.{rest % 1000:03d}".rstrip("0").rstrip(".") + "s"
    return f"{minutes}m{text}" if minutes else text


def _nanocores(cpu: str) -> int:
    """``cpu`` in nanocores; ``"13000001n"`` and ``"1500u"`` are taken exactly."""
    text = str(cpu).strip()
    for suffix, factor in (("n", 1), ("u", 1_000)):
        if text.endswith(suffix) and text[:-1].isdigit():
            return int(text[:-1]) * factor
    return parse_quantity(text) * 1_000_000


@dataclass
class _Container:
    nanocores: int
    bytes: int
    since: float


@dataclass
class _PodUsage:
    containers: dict[str, _Container]
    uid: str | None = None  # the pod it was first served for


class MetricsServer:
    """The metrics a test sets and the objects served from them (see the module)."""

    def __init__(self, state: str = ABSENT, resolution: float = 15.0) -> None:
        self.state = ABSENT
        self.set_state(state)
        self.resolution = resolution
        self.window = resolution
        self._usage: dict[tuple[str, str], _PodUsage] = {}
        self._lock = threading.Lock()

    def set_state(self, state: str) -> None:
        if state not in STATES:
            raise ValueError(f"metrics API state {state!r}: one of {', '.join(STATES)}")
        self.state = state

    def set_usage(
        self, namespace: str, pod: str, container: str, cpu: str = "0", memory: str = "0"
    ) -> None:
        nanocores = _nanocores(cpu)
        size = math.ceil(parse_quantity(memory) / 1000)
        with self._lock:
            usage = self._usage.setdefault((namespace, pod), _PodUsage({}))
            usage.containers[container] = _Container(nanocores, size, time.time())

    def clear_usage(self, namespace: str, pod: str) -> None:
        with self._lock:
            self._usage.pop((namespace, pod), None)

    # -- objects -----------------------------------------------------------------------
    def _scraped_at(self, since: float) -> str:
        now = time.time()
        latest = math.floor(now / self.resolution) * self.resolution
        return timestamp(max(latest, since))

    def _held(self, pod: Obj) -> list[tuple[str, _Container]]:
        """The usage of ``pod``'s containers, in the pod's order; empty: no metrics."""
        if (pod.get("status") or {}).get("phase") != "Running":
            return []
        meta = pod["metadata"]
        with self._lock:
            usage = self._usage.get((meta["namespace"], meta["name"]))
            if usage is None:
                return []
            if usage.uid is None:
                usage.uid = meta["uid"]
            if usage.uid != meta["uid"]:
                return []
            containers = dict(usage.containers)
        names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        return [(name, containers[name]) for name in names if name in containers]

    def pod_metrics(self, pod: Obj) -> Obj | None:
        """The ``PodMetrics`` of ``pod`` (without kind/apiVersion, as in a list), or None."""
        held = self._held(pod)
        if not held:
            return None
        containers = [
            {"name": name, "usage": {"cpu": cpu_text(c.nanocores), "memory": bytes_text(c.bytes)}}
            for name, c in held
        ]
        since = max(c.since for _, c in held)
        meta = pod["metadata"]
        out_meta: Obj = {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "creationTimestamp": timestamp(),
        }
        if meta.get("labels"):
            out_meta["labels"] = dict(meta["labels"])
        return {
            "metadata": out_meta,
            "timestamp": self._scraped_at(since),
            "window": go_duration(self.window),
            "containers": containers,
        }

    def node_metrics(self, node: Obj, pods: list[Obj]) -> Obj | None:
        """The ``NodeMetrics`` of ``node``: its pods' usage summed; None if not Ready."""
        conditions = (node.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return None
        name = node["metadata"]["name"]
        nanocores = size = 0
        since = 0.0
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName") != name:
                continue
            for _, held in self._held(pod):
                nanocores += held.nanocores
                size += held.bytes
                since = max(since, held.since)
        meta: Obj = {"name": name, "creationTimestamp": timestamp()}
        if node["metadata"].get("labels"):
            meta["labels"] = dict(node["metadata"]["labels"])
        return {
            "metadata": meta,
            "timestamp": self._scraped_at(since),
            "window": go_duration(self.window),
            "usage": {"cpu": cpu_text(nanocores), "memory": bytes_text(size)},
        }
