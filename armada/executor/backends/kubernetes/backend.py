"""The ``kubernetes`` backend: runs each pod on a Kubernetes cluster.

What it reads, it watches (``informer``): the executor's own pods (by label), the other live
pods (for what they take of each node), the nodes, pod events, and the Services and
Ingresses of the executor's jobs. ``poll`` and ``nodes`` answer from those caches, so a tick
costs the API server no request per pod: only creations, deletions and the logs of pods
that ended are requests of their own.

Failures are read from the pod as the kubelet wrote it (``status``), and pods that do not
start are caught by the pod checks (``core.podchecks``): ``Fail`` ends the run as a failure
with the check's message as its pod error; ``Retry`` returns the lease.

Errors of the API server are told apart as the agent needs them: a refusal about the pod
(its namespace does not exist, it is invalid, a quota or an admission policy refuses it) is
:class:`PodRejected`; a name taken by another run's pod is :class:`PodExists`; a server that
answers 5xx or 429, or cannot be reached, is :class:`BackendUnavailable` (nothing was done;
the agent tries again). A pod the executor created but whose answer it lost is found by its
run label and taken as created.

A pod is bound to its node (``nodeName``), so the kube-scheduler does not wait for room on
it: the kubelet admits it or refuses it (``OutOfcpu``). The backend therefore waits to
create a pod on a node where pods are still stopping (those preempted for it), for up to
``podDeletionTimeout`` past the end of their grace period, and a pod refused for room all
the same has its lease returned rather than failed (``status``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from armada.core.config import Executor as ExecutorConfig
from armada.core.podchecks import PodCheckRunner, parse_time
from armada.core.quantity import Resources
from armada.core.utilisation import UsageSample
from armada.executor.backends.base import (
    BackendUnavailable,
    ClusterNode,
    LogPosition,
    LogRead,
    PodCreationFailed,
    PodExists,
    PodRequest,
    PodStatus,
)
from armada.executor.backends.kubernetes.companions import Companions, refusal
from armada.executor.backends.kubernetes.connect import api_client
from armada.executor.backends.kubernetes.informer import Informer, Obj
from armada.executor.backends.kubernetes.logs import PodLogs
from armada.executor.backends.kubernetes.manifests import (
    EXECUTOR,
    RUN_ID,
    ingress_addresses,
    pod_manifest,
)
from armada.executor.backends.kubernetes.nodes import cluster_nodes, node_id, pod_usage
from armada.executor.backends.kubernetes.status import pod_status
from armada.executor.backends.kubernetes.usage import MetricsReader

log = logging.getLogger(__name__)

#: How long a deletion asked for is not asked again while the pod shows no deletion yet.
DELETE_AGAIN_AFTER = 10.0


class KubernetesBackend:
    """A backend for one executor on one cluster (see the module docstring)."""

    def __init__(self, config: ExecutorConfig, api: client.ApiClient | None = None) -> None:
        self.config = config
        self.settings = config.kubernetes
        self.api = api or api_client(self.settings)
        self.core = client.CoreV1Api(self.api)
        self.net = client.NetworkingV1Api(self.api)
        self.checks = PodCheckRunner(config.pod_checks)
        self._timeout = self.settings.request_timeout
        ours = f"{RUN_ID},{EXECUTOR}={config.id}"
        common = {
            "watch_timeout": self.settings.watch_timeout,
            "request_timeout": self._timeout,
        }
        self.pods = Informer(
            "pods", self.core.list_pod_for_all_namespaces, label_selector=ours, **common
        )
        self.other_pods = Informer(
            "other-pods",
            self.core.list_pod_for_all_namespaces,
            label_selector=f"{EXECUTOR}!={config.id}",
            field_selector="status.phase!=Succeeded,status.phase!=Failed",
            **common,
        )
        self.node_cache = Informer("nodes", self.core.list_node, **common)
        self.events = Informer(
            "events",
            self.core.list_event_for_all_namespaces,
            field_selector="involvedObject.kind=Pod",
            **common,
        )
        self.services = Informer(
            "services", self.core.list_service_for_all_namespaces, label_selector=ours, **common
        )
        self.ingresses = Informer(
            "ingresses", self.net.list_ingress_for_all_namespaces, label_selector=ours, **common
        )
        self.informers = [
            self.pods,
            self.other_pods,
            self.node_cache,
            self.events,
            self.services,
            self.ingresses,
        ]
        self.metrics = MetricsReader(self.api, config.id, self._timeout)
        self.logs = PodLogs(self.api, self._timeout)
        self._asked_delete: dict[str, float] = {}
        # Each pod's status as last read, with the pod's resourceVersion then: a pod that has
        # not changed is not read again (10,000 running pods cost a dict lookup each).
        self._statuses: dict[tuple[str, str], tuple[str, PodStatus]] = {}
        self._namespaces: dict[str, str] = {}  # pod name -> namespace, as last polled
        # By node, when the pods being deleted there are due to be gone (ours, others').
        self._stopping_ours: dict[str, datetime] = {}
        self._stopping_others: dict[str, datetime] = {}
        # What each other pod takes of its node, with its resourceVersion then.
        self._requests: dict[tuple[str, str], tuple[str, tuple[str, Resources] | None]] = {}
        for informer in self.informers:
            informer.start()

    def close(self) -> None:
        for informer in self.informers:
            informer.stop()
        self.api.close()

    def wait_synced(self, timeout: float) -> bool:
        """Wait until every cache has been listed once (tests and start-up)."""
        deadline = time.monotonic() + timeout
        for informer in self.informers:
            if not informer.synced.wait(max(0.0, deadline - time.monotonic())):
                return False
        return True

    # --- reading -------------------------------------------------------------------------

    def _synced(self, *informers: Informer) -> bool:
        return all(i.synced.is_set() for i in informers)

    def nodes(self) -> list[ClusterNode] | None:
        if not self._synced(self.node_cache, self.other_pods):
            return None
        others = self.other_pods.snapshot()
        self._stopping_others = _stopping(others.values())
        for gone in self._requests.keys() - others.keys():
            del self._requests[gone]
        usage = []
        for key, pod in others.items():
            version = (pod.get("metadata") or {}).get("resourceVersion") or ""
            held = self._requests.get(key)
            if held is None or held[0] != version or not version:
                held = self._requests[key] = (version, pod_usage(pod))
            usage.append(held[1])
        return cluster_nodes(self.node_cache.items(), usage, self.settings, self.config.pool)

    def poll(self, now: datetime) -> list[PodStatus]:
        if not self._synced(self.pods, self.events, self.services, self.ingresses):
            raise BackendUnavailable("the cluster's pods have not been read yet")
        pods = self.pods.snapshot()
        waiting = {k for k, p in pods.items() if (p.get("status") or {}).get("phase") == "Pending"}
        events: dict[tuple[str, str], list[Obj]] = {}
        if waiting:
            for event in self.events.items():
                involved = event.get("involvedObject") or {}
                key = (involved.get("namespace") or "", involved.get("name") or "")
                if key in waiting:
                    events.setdefault(key, []).append(event)
        with_ingress = self._ingress_objects()
        for gone in self._statuses.keys() - pods.keys():
            del self._statuses[gone]
            self._namespaces.pop(gone[1], None)
        out = []
        self._stopping_ours = _stopping(pods.values())
        for key, pod in pods.items():
            status = self._status(pod, key, events.get(key), now, key in waiting)
            if with_ingress and status.running_at and not status.finished_at:
                objects = with_ingress.get(status.run_id)
                if objects is not None:
                    status = replace(status, ingress_addresses=ingress_addresses(pod, *objects))
            out.append(status)
        return out

    def _status(
        self,
        pod: Obj,
        key: tuple[str, str],
        events: list[Obj] | None,
        now: datetime,
        pending: bool,
    ) -> PodStatus:
        """The pod's status; read again only when the pod changed (its resourceVersion), or
        while it is Pending (the pod checks depend on the time and on its events)."""
        version = pod["metadata"].get("resourceVersion") or ""
        held = self._statuses.get(key)
        if not pending and held is not None and held[0] == version and version:
            return held[1]
        status = pod_status(pod, events or [], now, self.checks)
        if held is None:
            self._namespaces[key[1]] = key[0]
        self._statuses[key] = (version, status)
        return status

    def usage(self, pods: list[PodStatus], now: datetime) -> dict[str, UsageSample]:
        """Readings of the running ``pods`` from the metrics API (``usage``)."""
        running = [
            (self._namespaces.get(p.name, ""), p.name)
            for p in pods
            if p.running_at is not None and p.finished_at is None
        ]
        return self.metrics.read([(ns, name) for ns, name in running if ns], now)

    def _ingress_objects(self) -> dict[str, tuple[list[Obj], list[Obj]]]:
        """The Services and Ingresses of the executor's jobs, by run id."""
        out: dict[str, tuple[list[Obj], list[Obj]]] = {}
        for index, informer in ((0, self.services), (1, self.ingresses)):
            for obj in informer.items():
                run_id = ((obj.get("metadata") or {}).get("labels") or {}).get(RUN_ID, "")
                out.setdefault(run_id, ([], []))[index].append(obj)
        return out

    def _find(self, name: str) -> Obj | None:
        """Our pod of that name (pod names are unique across namespaces: the job id is in
        them), by the namespaces the last poll saw, else by a look through the cache."""
        namespace = self._namespaces.get(name)
        if namespace is not None:
            pod = self.pods.get(namespace, name)
            if pod is not None:
                return pod
        for pod in self.pods.items():
            if (pod.get("metadata") or {}).get("name") == name:
                return pod
        return None

    def read_log(self, name: str, limit_bytes: int = 1_000_000) -> str:
        pod = self._find(name)
        return self.logs.tail(pod, limit_bytes) if pod is not None else ""

    def read_log_since(
        self, name: str, since: Mapping[str, LogPosition], limit_bytes: int, now: datetime
    ) -> list[LogRead] | None:
        """What the pod's containers wrote past ``since`` (``kubernetes.logs``)."""
        pod = self._find(name)
        return self.logs.since(pod, since, limit_bytes) if pod is not None else None

    # --- acting --------------------------------------------------------------------------

    def _node_name(self, scheduler_name: str) -> str:
        """The Kubernetes name of the node the scheduler knows as ``scheduler_name``."""
        for node in self.node_cache.items():
            if node_id(node, self.settings) == scheduler_name:
                return node["metadata"]["name"]
        return scheduler_name

    def create_pod(self, pod: PodRequest, now: datetime) -> None:
        node_name = self._node_name(pod.node)
        self._wait_for_room(node_name, now)
        manifest = pod_manifest(pod, node_name, self.config.id)
        try:
            body = client.V1Pod.from_dict(manifest)
        except (ValidationError, ValueError, TypeError) as exc:
            raise PodCreationFailed(f"the pod spec is not a Kubernetes pod: {exc}") from exc
        try:
            created = self.core.create_namespaced_pod(
                pod.namespace, body, _request_timeout=self._timeout
            )
            created_obj = self.api.sanitize_for_serialization(created)
        except ApiException as exc:
            if exc.status == 409:
                created_obj = self._existing(pod)
            else:
                raise refusal(exc) from exc
        except Exception as exc:  # noqa: BLE001 - connection failures: nothing was done
            raise BackendUnavailable(f"creating pod {pod.name}: {exc}") from exc
        self.pods.put(created_obj)
        self._asked_delete.pop(pod.name, None)
        if pod.services or pod.ingress:
            Companions(self, pod).create(created_obj)

    def _wait_for_room(self, node_name: str, now: datetime) -> None:
        """A pod bound to a node where pods are still stopping (preempted for it, say) would
        be refused by the kubelet, which counts them until they are gone: wait for them, up
        to ``podDeletionTimeout`` past the end of their grace period."""
        deadlines = [
            d
            for d in (self._stopping_ours.get(node_name), self._stopping_others.get(node_name))
            if d is not None
        ]
        patience = timedelta(seconds=self.config.pod_deletion_timeout)
        if deadlines and now < max(deadlines) + patience:
            raise BackendUnavailable(f"pods on node {node_name} are still stopping")

    def _existing(self, pod: PodRequest) -> Obj:
        """A pod of that name exists: ours, created by an attempt whose answer was lost, or
        another run's (:class:`PodExists`)."""
        try:
            existing = self.core.read_namespaced_pod(
                pod.name, pod.namespace, _preload_content=False, _request_timeout=self._timeout
            )
            obj = json.loads(existing.data)
        except Exception as exc:  # noqa: BLE001 - cannot tell: try again later
            raise BackendUnavailable(f"reading pod {pod.name}: {exc}") from exc
        if ((obj.get("metadata") or {}).get("labels") or {}).get(RUN_ID) == pod.run_id:
            return obj
        raise PodExists(pod.name)

    def delete_pod(self, name: str, now: datetime, grace_seconds: float = 0.0) -> None:
        pod = self._find(name)
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        clock = time.monotonic()
        if clock - self._asked_delete.get(name, -DELETE_AGAIN_AFTER) < DELETE_AGAIN_AFTER:
            return
        phase = (pod.get("status") or {}).get("phase")
        if grace_seconds > 0:
            grace: int | None = int(grace_seconds)
        elif phase in ("Succeeded", "Failed"):
            grace = 0
        else:
            grace = None  # the pod's own terminationGracePeriodSeconds
        try:
            answer = self.core.delete_namespaced_pod(
                name,
                pod["metadata"].get("namespace", "default"),
                grace_period_seconds=grace,
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            gone = json.loads(answer.data)
        except ApiException as exc:
            if exc.status != 404:
                log.warning("deleting pod %s: %s %s; trying again", name, exc.status, exc.reason)
            return
        except Exception as exc:  # noqa: BLE001 - tried again on a later tick
            log.warning("deleting pod %s: %s; trying again", name, exc)
            return
        self._asked_delete[name] = clock
        if (gone.get("metadata") or {}).get("deletionTimestamp"):
            self.pods.put(gone)
            self._stopping_ours.update(
                {k: max(v, self._stopping_ours.get(k, v)) for k, v in _stopping([gone]).items()}
            )
        self._forget_old_deletes(clock)

    def force_delete_pod(self, name: str, now: datetime) -> None:
        """Delete the pod with no grace (``gracePeriodSeconds: 0``), even while it is being
        deleted: the API server removes it at once (the agent's escalation for a pod that
        outlives its deadline, ``executor.metrics``)."""
        pod = self._find(name)
        if pod is None:
            return
        namespace = pod["metadata"].get("namespace", "default")
        try:
            self.core.delete_namespaced_pod(
                name,
                namespace,
                grace_period_seconds=0,
                _preload_content=False,
                _request_timeout=self._timeout,
            )
        except ApiException as exc:
            if exc.status != 404:  # 404: gone already
                log.warning("force deleting pod %s: %s %s", name, exc.status, exc.reason)
        except Exception as exc:  # noqa: BLE001 - the escalation is not tried again
            log.warning("force deleting pod %s: %s", name, exc)

    def _forget_old_deletes(self, clock: float) -> None:
        for name in [n for n, at in self._asked_delete.items() if clock - at > 600]:
            del self._asked_delete[name]


def _stopping(pods: Any) -> dict[str, datetime]:
    """By node, when the last of its pods being deleted is due to be gone (Kubernetes sets
    ``deletionTimestamp`` to the end of the pod's grace period)."""
    out: dict[str, datetime] = {}
    for pod in pods:
        due = parse_time((pod.get("metadata") or {}).get("deletionTimestamp"))
        node = (pod.get("spec") or {}).get("nodeName")
        if (
            due is not None
            and node
            and (pod.get("status") or {}).get("phase")
            not in (
                "Succeeded",
                "Failed",
            )
        ):
            out[node] = max(due, out.get(node, due))
    return out


def _key(pod: Obj) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")
