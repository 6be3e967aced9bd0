"""What the API server fills in on create (defaulting and allocation), and the node and
namespace objects the test hooks add."""

from __future__ import annotations

import ipaddress
from typing import Any

from tests.kube_emulator.objects import new_uid, timestamp

Obj = dict[str, Any]
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
NODE_PORTS = range(30000, 32768)
K8S_VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.0"}


def stamp_meta(meta: Obj, namespace: str | None) -> Obj:
    out = dict(meta)
    if namespace is not None:
        out["namespace"] = namespace
    out["uid"] = new_uid()
    out["creationTimestamp"] = timestamp()
    for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
        out.pop(field, None)
    return out


def _pull_policy(image: str) -> str:
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        return "IfNotPresent"
    return "Always" if ":" not in tail or tail.endswith(":latest") else "IfNotPresent"


def _container(c: Obj) -> Obj:
    out = dict(c)
    out.setdefault("terminationMessagePath", "/dev/termination-log")
    out.setdefault("terminationMessagePolicy", "File")
    out.setdefault("imagePullPolicy", _pull_policy(str(c.get("image", ""))))
    res = dict(out.get("resources") or {})
    if res.get("limits") and not res.get("requests"):
        res["requests"] = dict(res["limits"])  # requests default to limits
    elif res.get("limits"):
        res["requests"] = {**res["limits"], **res["requests"]}
    out["resources"] = res
    out["ports"] = [{"protocol": "TCP", **p} for p in out.get("ports") or []] or None
    if out["ports"] is None:
        del out["ports"]
    return out


def qos_class(spec: Obj) -> str:
    containers = spec.get("containers", []) + spec.get("initContainers", [])
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get(k) and r.get("requests", {}).get(k) == r["limits"][k]
        for r in resources
        for k in ("cpu", "memory")
    )
    return "Guaranteed" if guaranteed else "Burstable"


def default_pod(pod: Obj, namespace: str) -> Obj:
    """The pod as stored after create: defaults filled in, status reset to Pending."""
    spec = dict(pod.get("spec") or {})
    spec["containers"] = [_container(c) for c in spec.get("containers", [])]
    if spec.get("initContainers"):
        spec["initContainers"] = [_container(c) for c in spec["initContainers"]]
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = list(spec.get("tolerations") or [])
    keys = {t.get("key") for t in tolerations}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if key not in keys:
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    spec["tolerations"] = tolerations
    return {
        "metadata": stamp_meta(pod.get("metadata") or {}, namespace),
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": qos_class(spec)},
    }


class Allocator:
    """Cluster IPs and node ports for services (the API server's allocators)."""

    def __init__(self) -> None:
        self.ips: set[str] = set()
        self.ports: set[int] = set()
        self._next_ip = 10
        self._next_port = NODE_PORTS.start

    def take_ip(self, wanted: str | None) -> str:
        if wanted:
            if ipaddress.ip_address(wanted) not in SERVICE_CIDR:
                raise ValueError(
                    f"failed to allocate IP {wanted}: the provided IP ({wanted}) is not in the "
                    f"valid range. The range of valid IPs is {SERVICE_CIDR}"
                )
            if wanted in self.ips:
                raise ValueError(
                    f"failed to allocate IP {wanted}: provided IP is already allocated"
                )
            self.ips.add(wanted)
            return wanted
        while True:
            ip = str(SERVICE_CIDR[self._next_ip])
            self._next_ip += 1
            if ip not in self.ips:
                self.ips.add(ip)
                return ip

    def take_port(self, wanted: int | None) -> int:
        if wanted:
            if wanted not in NODE_PORTS:
                raise ValueError(
                    "provided port is not in the valid range. The range of valid ports is "
                    "30000-32767"
                )
            if wanted in self.ports:
                raise ValueError("provided port is already allocated")
            self.ports.add(wanted)
            return wanted
        for _ in NODE_PORTS:
            port = self._next_port
            self._next_port = port + 1 if port + 1 in NODE_PORTS else NODE_PORTS.start
            if port not in self.ports:
                self.ports.add(port)
                return port
        raise ValueError("range is full")

    def release(self, svc: Obj) -> None:
        spec = svc.get("spec") or {}
        self.ips.discard(spec.get("clusterIP", ""))
        for p in spec.get("ports") or []:
            self.ports.discard(p.get("nodePort", 0))


def default_service_spec(spec: Obj) -> Obj:
    out = dict(spec)
    out.setdefault("type", "ClusterIP")
    out.setdefault("sessionAffinity", "None")
    if out["type"] != "ExternalName":
        out.setdefault("internalTrafficPolicy", "Cluster")
        out.setdefault("ipFamilies", ["IPv4"])
        out.setdefault("ipFamilyPolicy", "SingleStack")
    if out["type"] in ("NodePort", "LoadBalancer"):
        out.setdefault("externalTrafficPolicy", "Cluster")
    if out["type"] == "LoadBalancer":
        out.setdefault("allocateLoadBalancerNodePorts", True)
    out["ports"] = [
        {"protocol": "TCP", "targetPort": p.get("port"), **p} for p in out.get("ports") or []
    ]
    return out


def namespace_obj(name: str) -> Obj:
    return {
        "metadata": {
            "name": name,
            "uid": new_uid(),
            "creationTimestamp": timestamp(),
            "labels": {"kubernetes.io/metadata.name": name},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def node_conditions(ready: bool, reason: str = "", message: str = "") -> list[Obj]:
    """A node's conditions; ``reason`` NodeStatusUnknown is what the node lifecycle
    controller writes when the kubelet stops posting status."""
    now = timestamp()
    lost = not ready and reason == "NodeStatusUnknown"
    out = []
    for kind, why, msg in (
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ):
        status = "False"
        if lost:
            status, why, msg = "Unknown", reason, "Kubelet stopped posting node status."
        out.append(
            {
                "type": kind,
                "status": status,
                "reason": why,
                "message": msg,
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        )
    if ready:
        status, why, msg = "True", "KubeletReady", "kubelet is posting ready status"
    elif lost:
        status, why, msg = "Unknown", reason, "Kubelet stopped posting node status."
    else:
        status, why, msg = (
            "False",
            reason or "KubeletNotReady",
            message or "container runtime is down",
        )
    out.append(
        {
            "type": "Ready",
            "status": status,
            "reason": why,
            "message": msg,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
    )
    return out


def node_obj(
    name: str,
    index: int,
    labels: dict[str, str],
    taints: list[Obj],
    allocatable: dict[str, str],
    unschedulable: bool,
) -> Obj:
    ip = f"10.0.{index // 250}.{index % 250 + 2}"
    spec: Obj = {
        "podCIDR": f"10.244.{index % 256}.0/24",
        "podCIDRs": [f"10.244.{index % 256}.0/24"],
    }
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {
            "name": name,
            "uid": new_uid(),
            "creationTimestamp": timestamp(),
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                **labels,
            },
        },
        "spec": spec,
        "status": {
            "capacity": dict(allocatable),
            "allocatable": dict(allocatable),
            "conditions": node_conditions(True),
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": new_uid(),
                "containerRuntimeVersion": "containerd://1.7.22",
                "kernelVersion": "6.8.0-emulated",
                "kubeProxyVersion": K8S_VERSION["gitVersion"],
                "kubeletVersion": K8S_VERSION["gitVersion"],
                "machineID": new_uid().replace("-", ""),
                "operatingSystem": "linux",
                "osImage": "Emulated Linux",
                "systemUUID": new_uid(),
            },
        },
    }
