"""What the API server does on create, read and delete (beyond storage): decoding,
validation, defaulting, allocation, graceful deletion. Controllers that react to writes
(node lifecycle, garbage collector, ingress controller) live here too."""

from __future__ import annotations

import contextlib
import json
import random
import string
import threading
from typing import Any

from kubernetes import client

from tests.kube_emulator import defaults, validation
from tests.kube_emulator.events import Recorder
from tests.kube_emulator.kubelet import Kubelet
from tests.kube_emulator.objects import (
    RESOURCES,
    ApiError,
    already_exists,
    bad_request,
    invalid,
    not_found,
    success_status,
    timestamp,
)
from tests.kube_emulator.store import Change, Store
from tests.kube_emulator.timeline import Timeline

Obj = dict[str, Any]
_API = client.ApiClient()


class Cluster:
    """The API server's behaviour and the control-plane controllers."""

    def __init__(self, store: Store, timeline: Timeline) -> None:
        self.store = store
        self.timeline = timeline
        self.events = Recorder(store)
        self.kubelet = Kubelet(store, timeline, self.events)
        self.kubelet.node_ready = self.node_is_ready
        self.kubelet.on_node_lost = self.lose_node
        self.alloc = defaults.Allocator()
        self.lost: set[str] = set()
        self.node_count = 0
        self.lock = threading.RLock()
        self.node_eviction_delay = 0.3  # node lifecycle controller, after a node is lost
        self.pod_gc_delay = 0.3  # pod GC force-deletes terminating pods on a lost node
        self.gc_delay = 0.05
        self.ingress_delay = 0.05
        store.listeners.append(self._on_change)

    # -- reactions to writes -----------------------------------------------------------
    def _on_change(self, change: Change) -> None:
        if change.plural == "pods":
            if change.type == "ADDED" and change.new["spec"].get("nodeName"):
                self.kubelet.pod_added(change.new)
            elif change.type == "DELETED":
                uid = change.new["metadata"]["uid"]
                # On the timeline's thread: this runs under the store's lock, and a kubelet
                # step holds the kubelet's lock while it writes to the store.
                self.timeline.after(0.0, lambda: self.kubelet.forget(uid))
                self.timeline.after(self.gc_delay, lambda: self._collect(uid))
        elif change.plural == "ingresses" and change.type == "ADDED":
            ns, name = change.key
            uid = change.new["metadata"]["uid"]
            self.timeline.after(self.ingress_delay, lambda: self._ingress_ip(ns, name, uid))
        elif change.plural == "services" and change.type == "DELETED":
            self.alloc.release(change.new)

    def _collect(self, owner_uid: str) -> None:
        """Garbage collector: delete what the gone object owned."""
        for plural in ("services", "ingresses"):
            for obj in self.store.items(plural)[0]:
                refs = obj["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == owner_uid for r in refs):
                    meta = obj["metadata"]
                    with contextlib.suppress(ApiError):
                        self.store.delete(plural, meta["namespace"], meta["name"])

    def _ingress_ip(self, ns: str, name: str, uid: str) -> None:
        def put(ing: Obj) -> object:
            if ing["metadata"]["uid"] != uid:
                return False
            ing["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}
            return True

        self.store.update("ingresses", ns, name, put)

    # -- create ------------------------------------------------------------------------
    def create(
        self, plural: str, ns: str, body: Any, field_validation: str | None
    ) -> tuple[Obj, list[str]]:
        """Create from a request body; returns (object, warnings)."""
        resource = RESOURCES[plural]
        model, warnings = validation.decode(resource, body, field_validation)
        data = _API.sanitize_for_serialization(model) if model is not None else body
        meta = dict(data.get("metadata") or {})
        if meta.get("namespace") not in (None, "", ns):
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
            meta["name"] = meta["generateName"] + suffix
        data = dict(data, metadata=meta)
        validation.check(resource, data)
        if model is None:  # the model refused only missing values and the check found none
            raise bad_request(
                f'{resource.kind} in version "v1" cannot be handled as a {resource.kind}'
            )
        if self.store.find("namespaces", "", ns) is None:
            raise not_found(RESOURCES["namespaces"], ns)
        if plural == "pods":
            obj = defaults.default_pod(data, ns)
        elif plural == "services":
            obj = self._service(data, ns)
        else:
            obj = {
                "metadata": defaults.stamp_meta(meta, ns),
                "spec": data.get("spec") or {},
                "status": {"loadBalancer": {}},
            }
        with self.lock:
            try:
                return self.store.create(plural, obj), warnings
            except ApiError:
                if plural == "services":
                    self.alloc.release(obj)
                raise

    def _service(self, data: Obj, ns: str) -> Obj:
        spec = defaults.default_service_spec(data.get("spec") or {})
        name = data["metadata"]["name"]
        resource = RESOURCES["services"]
        if self.store.find("services", ns, name) is not None:
            raise already_exists(resource, name)
        taken: list[Obj] = []
        try:
            if spec["type"] != "ExternalName" and spec.get("clusterIP") != "None":
                spec["clusterIP"] = self.alloc.take_ip(spec.get("clusterIP"))
                taken.append({"spec": {"clusterIP": spec["clusterIP"]}})
            if spec.get("clusterIP"):
                spec["clusterIPs"] = [spec["clusterIP"]]
            if spec["type"] in ("NodePort", "LoadBalancer"):
                for i, port in enumerate(spec["ports"]):
                    try:
                        port["nodePort"] = self.alloc.take_port(port.get("nodePort"))
                    except ValueError as exc:
                        raise invalid(
                            resource,
                            name,
                            [
                                validation.bad_value(
                                    f"spec.ports[{i}].nodePort", port.get("nodePort"), str(exc)
                                )
                            ],
                        ) from None
                    taken.append({"spec": {"ports": [{"nodePort": port["nodePort"]}]}})
        except ValueError as exc:
            raise invalid(
                resource,
                name,
                [validation.bad_value("spec.clusterIPs", [spec.get("clusterIP")], str(exc))],
            ) from None
        except ApiError:
            for t in taken:
                self.alloc.release(t)
            raise
        return {
            "metadata": defaults.stamp_meta(data["metadata"], ns),
            "spec": spec,
            "status": {"loadBalancer": {}},
        }

    # -- delete ------------------------------------------------------------------------
    def delete(self, plural: str, ns: str, name: str, body: Any, query_grace: str | None) -> Obj:
        resource = RESOURCES[plural]
        opts: Obj = {}
        if body:
            if not isinstance(body, dict):
                raise bad_request(
                    'DeleteOptions in version "v1" cannot be handled as a DeleteOptions'
                )
            try:
                opts = _API.sanitize_for_serialization(client.V1DeleteOptions.from_dict(body))
            except Exception as exc:
                raise bad_request(
                    f'DeleteOptions in version "v1" cannot be handled as a DeleteOptions: {exc}'
                ) from None
        grace = opts.get("gracePeriodSeconds")
        if query_grace is not None:
            try:
                grace = int(query_grace)
            except ValueError:
                raise bad_request(
                    f'invalid value for gracePeriodSeconds: "{query_grace}"'
                ) from None
        if grace is not None and grace < 0:
            raise invalid(
                resource,
                name,
                [
                    validation.bad_value(
                        "gracePeriodSeconds", grace, "must be greater than or equal to 0"
                    )
                ],
            )
        current = self.store.get(plural, ns, name)
        uid_pre = (opts.get("preconditions") or {}).get("uid")
        if uid_pre and uid_pre != current["metadata"]["uid"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {plural} "{name}": Precondition failed: UID in precondition: {uid_pre}, UID in object meta: {current["metadata"]["uid"]}',
                {"name": name, "kind": plural},
            )
        if plural == "pods":
            return self._delete_pod(current, grace)
        deleted = self.store.delete(plural, ns, name)
        if plural == "ingresses":
            return success_status(resource, name, deleted["metadata"]["uid"])
        return deleted

    def _delete_pod(self, pod: Obj, grace: int | None) -> Obj:
        meta, spec = pod["metadata"], pod["spec"]
        ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        node = spec.get("nodeName") or ""
        phase = (pod.get("status") or {}).get("phase")
        if (
            grace == 0
            or not node
            or self.store.find("nodes", "", node) is None
            or phase in ("Succeeded", "Failed")
        ):
            return self.store.delete("pods", ns, name)
        if meta.get("deletionTimestamp") and grace >= (meta.get("deletionGracePeriodSeconds") or 0):
            return pod  # already terminating, no shorter grace asked

        def mark(p: Obj) -> None:
            p["metadata"]["deletionTimestamp"] = timestamp(_now() + grace)
            p["metadata"]["deletionGracePeriodSeconds"] = grace

        updated = self.store.update("pods", ns, name, mark) or pod
        if node in self.lost:
            return updated  # no kubelet there: pod GC removes it
        self.kubelet.terminate(ns, name, uid, node, float(grace))
        return updated

    # -- nodes -------------------------------------------------------------------------
    def node_is_ready(self, name: str) -> bool:
        node = self.store.find("nodes", "", name)
        if node is None or name in self.lost:
            return False
        conds = node["status"].get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)

    def add_node(
        self,
        name: str,
        labels: dict[str, str],
        taints: list[Obj],
        allocatable: dict[str, str],
        unschedulable: bool,
    ) -> Obj:
        with self.lock:
            self.node_count += 1
            obj = defaults.node_obj(
                name, self.node_count, labels, taints, allocatable, unschedulable
            )
        node = self.store.create("nodes", obj)
        self.kubelet.node_ready_again(name)
        return node

    def set_node_ready(self, name: str, ready: bool) -> None:
        self.store.get("nodes", "", name)
        with self.lock:
            was_lost = name in self.lost
            self.lost.discard(name)

        def put(node: Obj) -> None:
            node["status"]["conditions"] = defaults.node_conditions(ready)
            if ready:
                taints = [
                    t
                    for t in node["spec"].get("taints") or []
                    if not t["key"].startswith("node.kubernetes.io/")
                ]
                node["spec"]["taints"] = taints or None
                if not taints:
                    node["spec"].pop("taints")

        self.store.update("nodes", "", name, put)
        if was_lost:
            self.timeline.resume(name)
        if ready:
            self.kubelet.node_ready_again(name)

    def lose_node(self, name: str) -> None:
        """The node stops posting status: NotReady (Unknown), tainted unreachable, its pods
        marked for deletion by the taint manager and then removed by the pod GC."""
        self.store.get("nodes", "", name)
        with self.lock:
            if name in self.lost:
                return
            self.lost.add(name)
        self.timeline.pause(name)

        def unknown(node: Obj) -> None:
            node["status"]["conditions"] = defaults.node_conditions(False, "NodeStatusUnknown")
            taint = {
                "key": "node.kubernetes.io/unreachable",
                "effect": "NoExecute",
                "timeAdded": timestamp(),
            }
            node["spec"]["taints"] = [*(node["spec"].get("taints") or []), taint]

        self.store.update("nodes", "", name, unknown)
        self.timeline.after(self.node_eviction_delay, lambda: self._evict_node(name))

    def _evict_node(self, name: str) -> None:
        if name not in self.lost:
            return
        for pod in self.store.items("pods")[0]:
            if pod["spec"].get("nodeName") != name:
                continue
            meta = pod["metadata"]
            ns, pname, uid = meta["namespace"], meta["name"], meta["uid"]

            def disrupt(p: Obj, uid: str = uid) -> object:
                if p["metadata"]["uid"] != uid:
                    return False
                status = p.setdefault("status", {})
                conds = [
                    c for c in status.get("conditions") or [] if c["type"] != "DisruptionTarget"
                ]
                conds.insert(0, {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                                 "message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": timestamp()})  # fmt: skip
                status["conditions"] = conds
                if not p["metadata"].get("deletionTimestamp"):
                    p["metadata"]["deletionTimestamp"] = timestamp()
                    p["metadata"]["deletionGracePeriodSeconds"] = p["spec"].get(
                        "terminationGracePeriodSeconds", 30
                    )
                return True

            self.events.record({"kind": "Pod", "namespace": ns, "name": pname, "uid": uid}, "Normal",
                               "TaintManagerEviction", f"Marking for deletion Pod {ns}/{pname}",
                               component="taint-eviction-controller")  # fmt: skip
            self.store.update("pods", ns, pname, disrupt)
            self.timeline.after(
                self.pod_gc_delay,
                lambda ns=ns, pname=pname, uid=uid: self._force_delete(ns, pname, uid),
            )

    def _force_delete(self, ns: str, name: str, uid: str) -> None:
        pod = self.store.find("pods", ns, name)
        if pod is not None and pod["metadata"]["uid"] == uid:
            self.store.delete("pods", ns, name)


def _now() -> float:
    import time

    return time.time()


def parse_body(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise bad_request(f"the body of the request was in an unknown format: {exc}") from None
