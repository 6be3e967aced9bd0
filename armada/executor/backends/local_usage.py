"""What a local pod uses, read from its cgroups (for the ``utilisation`` events).

Memory is the pod cgroup's charge now (cgroup v2 ``memory.current``, v1
``memory.usage_in_bytes``). Cpu is cumulative: v2 ``cpu.stat``'s ``usage_usec``; v1 has no
cpu accounting in the hierarchies we use, so the cpu time (user and system, with reaped
children's) of the processes in the pod's container cgroups is summed from ``/proc``. The
current cpu rate is worked out between two readings (``core.utilisation``). A pod without
cgroups (``cgroups: none``) has no reading.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from armada.core.quantity import CPU, MEMORY
from armada.core.utilisation import UsageSample

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _v2_cpu_seconds(pod: Path) -> float | None:
    try:
        for line in (pod / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1_000_000
    except (OSError, ValueError):
        return None
    return None


def _process_cpu_seconds(pid: int) -> float:
    """User and system time of ``pid`` and of its reaped children; 0 when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text.rpartition(")")[2].split()
    with contextlib.suppress(ValueError, IndexError):
        # After the command: state is field 3, utime..cstime are fields 14..17.
        return sum(int(fields[i]) for i in range(11, 15)) / _TICKS
    return 0.0


def _v1_cpu_seconds(containers: Mapping[str, str]) -> float | None:
    pids: set[int] = set()
    for cgroup in containers.values():
        with contextlib.suppress(OSError, ValueError):
            pids.update(int(p) for p in Path(cgroup, "cgroup.procs").read_text().split())
    if not pids:
        return None
    return sum(_process_cpu_seconds(pid) for pid in pids)


def pod_usage(cgroups: Mapping[str, Any] | None, now: datetime) -> UsageSample | None:
    """A reading of the pod whose cgroups ``cgroups`` are (pod.json's ``cgroups``)."""
    if not cgroups or not cgroups.get("pod"):
        return None
    pod = Path(cgroups["pod"])
    if cgroups.get("version") == 2:
        memory = _read_int(pod / "memory.current")
        cpu = _v2_cpu_seconds(pod)
    else:
        memory = _read_int(pod / "memory.usage_in_bytes")
        cpu = _v1_cpu_seconds(cgroups.get("containers") or {})
    current = {MEMORY: memory * 1000} if memory is not None else {}
    cumulative = {CPU: round(cpu * 1000)} if cpu is not None else {}
    if not current and not cumulative:
        return None
    return UsageSample(now, current, cumulative)
