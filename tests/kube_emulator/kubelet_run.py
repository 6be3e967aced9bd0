"""What the kubelet knows of one pod it runs (``Run``), its delays (``Timings``), the
messages it writes, and a pod's effective resource requests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from armada.core.fakepod import FakeOutcome
from armada.core.quantity import parse_quantity

MEMORY_NEEDED = "emulator.armadaproject.io/memoryNeeded"
EVICTED_MESSAGE = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. "
)
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
Obj = dict[str, Any]


@dataclass
class Timings:
    """Kubelet delays in seconds (before the timeline's scale)."""

    admit: float = 0.01
    pull: float = 0.05
    start: float = 0.02
    init_run: float = 0.05
    stop: float = 0.05
    pull_backoff: float = 0.3
    crash_backoff: float = 0.3
    mount_retry: float = 0.5
    oom_after: float = 0.05


@dataclass
class Run:
    """What the kubelet knows of one pod it runs."""

    ns: str
    name: str
    uid: str
    node: str
    spec: Obj
    outcome: FakeOutcome
    host_ip: str
    annotations: Obj = field(default_factory=dict)
    pod_ip: str = ""
    epoch: int = 0
    start_time: str = ""
    started_mono: float = 0.0
    ended: bool = False
    phase: str = "Pending"
    reason: str = ""
    message: str = ""
    conds: dict[str, tuple[str, str, str, str]] = field(default_factory=dict)
    cs: dict[str, Obj] = field(default_factory=dict)  # container name -> status parts
    # container name -> when it started running, by the wall clock (its log lines' times)
    started_wall: dict[str, float] = field(default_factory=dict)

    @property
    def ref(self) -> dict[str, str]:
        return {"kind": "Pod", "namespace": self.ns, "name": self.name, "uid": self.uid}

    def mains(self) -> list[Obj]:
        return self.spec.get("containers", [])

    def inits(self) -> list[Obj]:
        return self.spec.get("initContainers") or []


def pod_requests(spec: Obj) -> dict[str, int]:
    """The pod's effective requests (max of the init containers, sum of the others)."""
    total: dict[str, int] = {}
    for c in spec.get("containers", []):
        for name, q in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0) + parse_quantity(q)
    for c in spec.get("initContainers") or []:
        for name, q in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total.get(name, 0), parse_quantity(q))
    return total
