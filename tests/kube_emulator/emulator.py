"""``KubeEmulator``: the object tests start, configure and poke."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from tests.kube_emulator.api import Cluster
from tests.kube_emulator.defaults import namespace_obj
from tests.kube_emulator.faults import Faults
from tests.kube_emulator.http import Server
from tests.kube_emulator.metrics import ABSENT, MetricsServer
from tests.kube_emulator.store import Store
from tests.kube_emulator.timeline import Timeline

DEFAULT_ALLOCATABLE = {"cpu": "8", "memory": "32Gi", "pods": "110"}


class KubeEmulator:
    """An emulated Kubernetes API server with kubelets; see the package docstring."""

    def __init__(
        self,
        token: str | None = None,
        time_scale: float = 1.0,
        max_history: int = 10_000,
        bookmark_interval: float = 1.0,
        host: str = "127.0.0.1",
        port: int = 0,
        metrics_api: str = ABSENT,
    ) -> None:
        self.token = token
        self.host, self.port = host, port
        self.bookmark_interval = bookmark_interval
        self.store = Store(max_history)
        self.timeline = Timeline(time_scale)
        self.cluster = Cluster(self.store, self.timeline)
        self.kubelet = self.cluster.kubelet
        self.faults = Faults()
        self.metrics = MetricsServer(metrics_api)
        self.stopping = False
        self.request_log: list[dict[str, Any]] = []
        self._counts: Counter[tuple[str, str, bool]] = Counter()
        self._log_lock = threading.Lock()
        self._server: Server | None = None
        self._serve_thread: threading.Thread | None = None
        self._reopen: threading.Timer | None = None
        for ns in ("default", "kube-system"):
            self.store.create("namespaces", namespace_obj(ns))

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> str:
        """Listen on a free port (or the one given) and start the kubelets; returns the URL."""
        self.timeline.start()
        self._listen()
        return self.url

    def _listen(self) -> None:
        self._server = Server((self.host, self.port), self)
        self.port = self._server.server_address[1]
        self._serve_thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._serve_thread.start()

    def _close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            server.drop_connections()

    def stop(self) -> None:
        self.stopping = True
        if self._reopen is not None:
            self._reopen.cancel()
        self.store.wake()
        self._close()
        self.timeline.stop()

    def __enter__(self) -> KubeEmulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_kubeconfig(
        self, path: str | Path, context: str = "emulator", token: str | None = None
    ) -> Path:
        """A kubeconfig for ``kubernetes.config.load_kube_config``; ``token`` defaults to
        the emulator's own."""
        token = token if token is not None else self.token
        user: dict[str, Any] = {"token": token} if token else {}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": user}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": "default"},
                }
            ],
            "current-context": context,
        }
        out = Path(path)
        out.write_text(yaml.safe_dump(config))
        return out

    # -- cluster contents --------------------------------------------------------------
    def add_namespace(self, name: str) -> dict[str, Any]:
        return self.store.create("namespaces", namespace_obj(name))

    def add_node(
        self,
        name: str,
        labels: dict[str, str] | None = None,
        taints: list[dict[str, Any]] | None = None,
        allocatable: dict[str, str] | None = None,
        unschedulable: bool = False,
    ) -> dict[str, Any]:
        return self.cluster.add_node(
            name,
            labels or {},
            taints or [],
            dict(allocatable or DEFAULT_ALLOCATABLE),
            unschedulable,
        )

    def add_pod(self, pod: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """Create a pod as any other client would (validated; e.g. a daemon-set pod)."""
        ns = namespace or (pod.get("metadata") or {}).get("namespace") or "default"
        return self.cluster.create("pods", ns, pod, None)[0]

    def add_config_map(self, namespace: str, name: str) -> None:
        """Make a configMap exist for volume mounts (config maps are not served)."""
        self.kubelet.config_objects.add(("configmap", namespace, name))

    def add_secret(self, namespace: str, name: str) -> None:
        self.kubelet.config_objects.add(("secret", namespace, name))

    def set_node_ready(self, name: str, ready: bool) -> None:
        self.cluster.set_node_ready(name, ready)

    def lose_node(self, name: str) -> None:
        self.cluster.lose_node(name)

    # -- pod hooks ---------------------------------------------------------------------
    def oom(self, ns: str, name: str) -> None:
        self.kubelet.hook(ns, name, "oom")

    def evict(self, ns: str, name: str) -> None:
        self.kubelet.hook(ns, name, "evict")

    def finish(self, ns: str, name: str, exit_code: int = 0) -> None:
        self.kubelet.hook(ns, name, "finish", exit_code=exit_code)

    def image_pull_backoff(
        self,
        ns: str,
        name: str,
        message: str = "rpc error: code = NotFound desc = failed to pull and unpack image: not found",
    ) -> None:
        self.kubelet.hook(ns, name, "image_pull_backoff", message=message)

    def vanish(self, ns: str, name: str) -> None:
        """The pod disappears at once (DELETED, no grace)."""
        self.store.delete("pods", ns, name)

    def pause_kubelet(self, node: str = "*") -> None:
        self.timeline.pause(node)

    def resume_kubelet(self, node: str = "*") -> None:
        self.timeline.resume(node)

    # -- resource metrics (metrics.k8s.io) ---------------------------------------------
    def set_metrics_api(self, state: str) -> None:
        """``served``, ``absent`` (metrics-server not installed: 404), ``unavailable``
        (installed but not answering: the aggregator's 503) or ``forbidden`` (the executor's
        role grants nothing in ``metrics.k8s.io``: RBAC's 403)."""
        self.metrics.set_state(state)

    def set_usage(
        self, namespace: str, pod: str, container: str, cpu: str = "0", memory: str = "0"
    ) -> None:
        """What ``container`` of the pod uses now, as metrics-server would report it once
        the pod runs (quantities: ``"250m"``, ``"100Mi"``; cpu also ``"13000001n"``)."""
        self.metrics.set_usage(namespace, pod, container, cpu, memory)

    def clear_usage(self, namespace: str, pod: str) -> None:
        """The pod has no metrics any more (as if metrics-server had not scraped it)."""
        self.metrics.clear_usage(namespace, pod)

    # -- faults ------------------------------------------------------------------------
    def fail_requests(
        self, count: int | None = None, seconds: float | None = None, status: int = 500
    ) -> None:
        self.faults.fail(count, seconds, status)

    def unreachable(self, seconds: float) -> None:
        """Stop listening and drop open connections for ``seconds``; then listen again."""
        self._close()
        self._reopen = threading.Timer(seconds, self._listen)
        self._reopen.daemon = True
        self._reopen.start()

    def cut_watches(self) -> None:
        self.faults.cut()
        self.store.wake()

    def compact(self) -> None:
        self.store.compact()

    # -- inspection --------------------------------------------------------------------
    def _count(
        self, method: str, kind: str, watch: bool, path: str, params: dict[str, str]
    ) -> None:
        with self._log_lock:
            self._counts[(method, kind, watch)] += 1
            self.request_log.append(
                {
                    "time": time.time(),
                    "method": method,
                    "path": path,
                    "params": params,
                    "watch": watch,
                }
            )

    def request_counts(self) -> dict[tuple[str, str, bool], int]:
        with self._log_lock:
            return dict(self._counts)

    def pod(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.store.find("pods", ns, name)

    def pods(self) -> list[dict[str, Any]]:
        return self.store.items("pods")[0]

    def events_for(self, ns: str, name: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.store.items("events", ns)[0]
            if e["involvedObject"].get("name") == name and e["involvedObject"].get("kind") == "Pod"
        ]

    @property
    def time_scale(self) -> float:
        return self.timeline.scale

    @time_scale.setter
    def time_scale(self, value: float) -> None:
        self.timeline.scale = value
