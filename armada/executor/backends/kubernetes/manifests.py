"""What the executor creates on the cluster for a run: the pod, and the services and
ingresses that live with it. Plain Kubernetes JSON, checked by the client's models when sent.

The pod is the job's pod spec as submitted (containers, init containers, volumes,
tolerations, node selector, affinity, security context, service account, priority class and
scheduler name untouched) with three things set: ``nodeName`` (the node the scheduler chose,
so that the pod is bound there and not placed again), ``restartPolicy: Never`` (a run is
one attempt; retries are the control plane's), and Armada's own metadata, which tooling and
a restarted executor read:

- labels ``armada_job_id``, ``armada_job_run_id``, ``armada_queue_id`` (when the queue name
  is a valid label value), ``armada_pod_number`` ``"0"``, ``armada_pod_count`` ``"1"``, and
  ``armadaproject.io/executor`` (the executor's id: two executors sharing a cluster leave
  each other's pods alone);
- annotations ``armada_jobset_id`` and ``armada_owner`` (free text, so not labels), the
  job's own annotations, and ``has_ingress`` / ``associated_services_count`` /
  ``associated_ingresses_count`` when the job has services or ingresses.

Services and ingresses carry the same labels and an owner reference to the pod, so that
Kubernetes' garbage collector deletes them with it. A ``services`` item becomes a Service
of type ``NodePort``, or a headless one (``clusterIP: None``) for ``Headless``; an
``ingress`` item becomes a ClusterIP Service for its ports and an Ingress with one rule per
port, host ``<pod>-<port>.<namespace>.<hostnameSuffix>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from armada.core.config_kubernetes import IngressSettings
from armada.executor.backends.base import PodRequest

JOB_ID = "armada_job_id"
RUN_ID = "armada_job_run_id"
QUEUE = "armada_queue_id"
POD_NUMBER = "armada_pod_number"
POD_COUNT = "armada_pod_count"
JOB_SET = "armada_jobset_id"
OWNER = "armada_owner"
EXECUTOR = "armadaproject.io/executor"
HAS_INGRESS = "has_ingress"
SERVICES_COUNT = "associated_services_count"
INGRESSES_COUNT = "associated_ingresses_count"

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


def run_labels(pod: PodRequest, executor_id: str) -> dict[str, str]:
    labels = {
        JOB_ID: pod.job_id,
        RUN_ID: pod.run_id,
        POD_NUMBER: "0",
        POD_COUNT: "1",
        EXECUTOR: executor_id,
    }
    if pod.queue and _label_value(pod.queue):
        labels[QUEUE] = pod.queue
    return labels


def pod_manifest(pod: PodRequest, node_name: str, executor_id: str) -> dict[str, Any]:
    annotations = dict(pod.annotations)
    annotations[JOB_SET] = pod.job_set
    annotations[OWNER] = pod.owner
    annotations[QUEUE] = pod.queue
    if pod.services or pod.ingress:
        annotations[HAS_INGRESS] = "true" if pod.ingress else "false"
        annotations[SERVICES_COUNT] = str(len(pod.services) + len(pod.ingress))
        annotations[INGRESSES_COUNT] = str(len(pod.ingress))
    spec = dict(pod.pod_spec)
    spec["nodeName"] = node_name
    spec["restartPolicy"] = "Never"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "labels": run_labels(pod, executor_id),
            "annotations": annotations,
        },
        "spec": spec,
    }


def _owner(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    meta = pod.get("metadata") or {}
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": False,
        }
    ]


def _ports(ports: list[int]) -> list[dict[str, Any]]:
    return [
        {"name": f"port-{p}", "port": int(p), "targetPort": int(p), "protocol": "TCP"}
        for p in ports
    ]


def service_manifests(
    pod: PodRequest, created: Mapping[str, Any], executor_id: str
) -> list[dict[str, Any]]:
    """The Services of the job's ``services`` and ``ingress`` items, owned by ``created``
    (the pod as the API server returned it, with its uid)."""
    labels = run_labels(pod, executor_id)
    selector = {JOB_ID: pod.job_id, RUN_ID: pod.run_id}
    out = []
    items = [("service", i, s) for i, s in enumerate(pod.services)]
    items += [("ingress", i, s) for i, s in enumerate(pod.ingress)]
    for kind, i, item in items:
        spec: dict[str, Any] = {"selector": selector, "ports": _ports(item.get("ports") or [])}
        if kind == "service" and item.get("type") == "Headless":
            spec["clusterIP"] = "None"
        elif kind == "service":
            spec["type"] = "NodePort"
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": service_name(pod.name, kind, i),
                    "namespace": pod.namespace,
                    "labels": labels,
                    "ownerReferences": _owner(created),
                },
                "spec": spec,
            }
        )
    return out


def service_name(pod_name: str, kind: str, index: int) -> str:
    return f"{pod_name}-{kind}-{index}"


def ingress_host(pod_name: str, port: int, namespace: str, settings: IngressSettings) -> str:
    suffix = settings.hostname_suffix or "cluster.local"
    return f"{pod_name}-{port}.{namespace}.{suffix}"


def ingress_manifests(
    pod: PodRequest,
    created: Mapping[str, Any],
    executor_id: str,
    settings: IngressSettings,
) -> list[dict[str, Any]]:
    out = []
    for i, item in enumerate(pod.ingress):
        service = service_name(pod.name, "ingress", i)
        ports = [int(p) for p in item.get("ports") or []]
        rules = [
            {
                "host": ingress_host(pod.name, port, pod.namespace, settings),
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": service, "port": {"number": port}}},
                        }
                    ]
                },
            }
            for port in ports
        ]
        spec: dict[str, Any] = {"rules": rules}
        if settings.ingress_class:
            spec["ingressClassName"] = settings.ingress_class
        if item.get("tlsEnabled"):
            secret = item.get("certName") or f"{pod.namespace}-{settings.cert_name_suffix}"
            spec["tls"] = [{"hosts": [r["host"] for r in rules], "secretName": secret}]
        out.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": {
                    "name": service,
                    "namespace": pod.namespace,
                    "labels": run_labels(pod, executor_id),
                    "annotations": {**settings.annotations, **(item.get("annotations") or {})},
                    "ownerReferences": _owner(created),
                },
                "spec": spec,
            }
        )
    return out


def ingress_addresses(
    pod: Mapping[str, Any],
    services: list[Mapping[str, Any]],
    ingresses: list[Mapping[str, Any]],
) -> dict[int, str]:
    """Where the job's ports can be reached from outside, by container port: a NodePort
    service's port is ``<node IP>:<node port>``; an ingress rule's is its host (with the
    load balancer's address once the ingress controller has given one, ``host@ip`` is not
    used: clients resolve the host)."""
    out: dict[int, str] = {}
    host_ip = (pod.get("status") or {}).get("hostIP") or ""
    for service in services:
        spec = service.get("spec") or {}
        if spec.get("type") != "NodePort" or not host_ip:
            continue
        for port in spec.get("ports") or []:
            if port.get("nodePort"):
                out[int(port.get("targetPort") or port["port"])] = f"{host_ip}:{port['nodePort']}"
    for ingress in ingresses:
        for rule in (ingress.get("spec") or {}).get("rules") or []:
            for path in (rule.get("http") or {}).get("paths") or []:
                number = (((path.get("backend") or {}).get("service") or {}).get("port") or {}).get(
                    "number"
                )
                if number and rule.get("host"):
                    out[int(number)] = rule["host"]
    return out
