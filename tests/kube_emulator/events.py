"""core/v1 Events as the kubelet and controllers record them (aggregated: a repeat of the
same reason and message on the same object bumps ``count`` and ``lastTimestamp``)."""

from __future__ import annotations

import threading
import time

from tests.kube_emulator.objects import new_uid, timestamp
from tests.kube_emulator.store import Store


class Recorder:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, ...], tuple[str, str]] = {}  # aggregation key -> (ns, name)

    def record(
        self,
        involved: dict[str, str],
        type_: str,
        reason: str,
        message: str,
        component: str = "kubelet",
        host: str = "",
        field_path: str = "",
    ) -> None:
        """``involved``: kind, name, namespace, uid (and apiVersion) of the object."""
        ref = {"apiVersion": "v1", **involved}
        if field_path:
            ref["fieldPath"] = field_path
        ns = involved.get("namespace") or "default"
        key = (ref.get("uid", ""), field_path, type_, reason, message, component)
        now = timestamp()
        with self._lock:
            existing = self._seen.get(key)
            if existing is not None:

                def bump(ev: dict) -> None:
                    ev["count"] = ev.get("count", 1) + 1
                    ev["lastTimestamp"] = now

                if self.store.update("events", existing[0], existing[1], bump) is not None:
                    return
            name = f"{involved['name']}.{time.time_ns():x}"
            source = {"component": component}
            if host:
                source["host"] = host
            self.store.create(
                "events",
                {
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "uid": new_uid(),
                        "creationTimestamp": now,
                    },
                    "involvedObject": ref,
                    "reason": reason,
                    "message": message,
                    "type": type_,
                    "source": source,
                    "firstTimestamp": now,
                    "lastTimestamp": now,
                    "count": 1,
                    "reportingComponent": component,
                    "reportingInstance": host,
                },
            )
            self._seen[key] = (ns, name)
