"""Memory and cpu cgroups for the local backend's pods (v2 where usable, else v1, else
an address-space limit as a logged fallback)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from armada.executor.backends import local_pod_files as pod_files
from armada.executor.backends.base import (
    PodCreationFailed,
)

log = logging.getLogger(__name__)

CgroupMode = Literal["auto", "v2", "v1", "none"]
_rlimit_warned = False


def _warn_rlimit_once() -> None:
    global _rlimit_warned
    if not _rlimit_warned:
        _rlimit_warned = True
        log.warning(
            "local backend: no writable memory cgroup (v2 or v1) on this machine; pod memory "
            "limits fall back to RLIMIT_AS per process, which limits address space rather "
            "than memory, and OOM kills cannot be reported"
        )


# --- cgroups -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cgroups:
    """Where this executor's pods get their cgroups."""

    version: int
    memory: Path  # <hierarchy>/armada/<executor_id>
    cpu: Path | None  # v1: in the cpu hierarchy; v2: == memory when cpu can be delegated


def _mounts() -> list[tuple[Path, str, set[str]]]:
    try:
        text = Path("/proc/self/mounts").read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[1])
            out.append((Path(point), parts[2], set(parts[3].split(","))))
    return out


def _enable(cgroup: Path, controller: str) -> None:
    """Make ``controller`` available to the children of ``cgroup`` (v2)."""
    if controller not in (cgroup / "cgroup.subtree_control").read_text().split():
        (cgroup / "cgroup.subtree_control").write_text(f"+{controller}")


def _try_enable(cgroup: Path, controller: str) -> bool:
    try:
        _enable(cgroup, controller)
    except OSError:
        return False
    return True


def _probe_v2(executor_id: str) -> _Cgroups | None:
    for point, fstype, _ in _mounts():
        if fstype != "cgroup2":
            continue
        try:
            controllers = (point / "cgroup.controllers").read_text().split()
            if "memory" not in controllers:
                continue
            cpu = "cpu" in controllers
            base = point / "armada" / executor_id
            parent = point
            for child in (point / "armada", base):
                _enable(parent, "memory")
                cpu = cpu and _try_enable(parent, "cpu")
                child.mkdir(exist_ok=True)
                parent = child
            _enable(base, "memory")
            cpu = cpu and _try_enable(base, "cpu")
        except OSError:
            continue
        return _Cgroups(2, base, base if cpu else None)
    return None


def _probe_v1(executor_id: str) -> _Cgroups | None:
    memory = cpu = None
    for point, fstype, options in _mounts():
        if fstype == "cgroup":
            if "memory" in options and memory is None:
                memory = point
            if "cpu" in options and cpu is None:
                cpu = point
    if memory is None:
        return None
    try:
        base = memory / "armada" / executor_id
        base.mkdir(parents=True, exist_ok=True)
        if not (base / "memory.limit_in_bytes").exists():
            return None
    except OSError:
        return None
    cpu_base = None
    if cpu is not None:
        with contextlib.suppress(OSError):
            candidate = cpu / "armada" / executor_id
            candidate.mkdir(parents=True, exist_ok=True)
            if (candidate / "cpu.shares").exists():
                cpu_base = candidate
    return _Cgroups(1, base, cpu_base)


def _cpu_shares(millicores: int) -> int:
    return max(2, min(262144, millicores * 1024 // 1000))


def _cpu_weight(millicores: int) -> int:
    """Kubernetes' conversion of cpu.shares to cgroup v2 cpu.weight."""
    return 1 + ((_cpu_shares(millicores) - 2) * 9999) // 262142


def _rmdir_tree(cgroup: Path) -> bool:
    """Remove a cgroup and its child cgroups; False when processes keep it busy."""
    if not cgroup.is_dir():
        return True
    ok = True
    for child in cgroup.iterdir():
        if child.is_dir():
            ok = _rmdir_tree(child) and ok
    try:
        cgroup.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return ok


def remove_leftovers(setup: _Cgroups, live_pods: set[str]) -> None:
    """When an executor stops: remove the cgroups of its pods that are gone (every pod
    cgroup not named in ``live_pods``: a live pod keeps its own, processes and all, since
    pods outlive their executor), then this executor's directory and the shared ``armada``
    one if nothing is left in them. Only empty cgroups can be removed, so nothing in use
    goes; what cannot be removed stays, without a complaint."""
    for base in {setup.memory, *([setup.cpu] if setup.cpu else [])}:
        with contextlib.suppress(OSError):
            for child in base.iterdir():
                if child.is_dir() and child.name not in live_pods:
                    _rmdir_tree(child)
        for empty in (base, base.parent):
            with contextlib.suppress(OSError):
                empty.rmdir()


def _remove_cgroups(info: Mapping[str, Any]) -> bool:
    """Remove a pod's cgroups; processes still in them are SIGKILLed and False returned (the
    next call finishes the job)."""
    ok = True
    dirs = [*info.get("containers", {}).values(), info.get("pod"), info.get("cpu")]
    for d in dirs:
        if not d:
            continue
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError:
            ok = False
            pod_files.kill_cgroup(d)
    return ok


def _make_pod_cgroups(
    setup: _Cgroups,
    name: str,
    containers: list[str],
    memory_limit: int | None,
    cpu_millis: int,
) -> dict[str, Any]:
    pod = setup.memory / name
    cpu_dir = setup.cpu / name if setup.version == 1 and setup.cpu is not None else None
    for stale in (pod, cpu_dir):
        if stale is not None and not _rmdir_tree(stale):
            raise PodCreationFailed(
                f"cgroup {stale} is left over from an earlier pod {name} and still has processes"
            )
    info: dict[str, Any] = {"version": setup.version, "pod": str(pod), "cpu": None}
    info["containers"] = {}
    try:
        pod.mkdir()
        if setup.version == 2:
            if memory_limit:
                (pod / "memory.max").write_text(str(memory_limit))
                with contextlib.suppress(OSError):
                    (pod / "memory.swap.max").write_text("0")
            _enable(pod, "memory")
            if setup.cpu is not None:
                with contextlib.suppress(OSError):
                    (pod / "cpu.weight").write_text(str(_cpu_weight(cpu_millis)))
                    _enable(pod, "cpu")
        elif memory_limit:
            (pod / "memory.limit_in_bytes").write_text(str(memory_limit))
            memsw = pod / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(str(memory_limit))
            with contextlib.suppress(OSError):
                (pod / "memory.swappiness").write_text("0")
        for container in containers:
            child = pod / f"ctr-{container}"
            child.mkdir()
            info["containers"][container] = str(child)
            if setup.version == 2:
                with contextlib.suppress(OSError):
                    (child / "memory.oom.group").write_text("1")
    except OSError as exc:
        _remove_cgroups(info)
        raise PodCreationFailed(f"cannot set up the memory cgroup {pod}: {exc}") from exc
    if cpu_dir is not None:
        try:
            cpu_dir.mkdir()
            info["cpu"] = str(cpu_dir)
            (cpu_dir / "cpu.shares").write_text(str(_cpu_shares(cpu_millis)))
        except OSError as exc:  # best effort: the pod runs without its cpu share
            log.warning("local backend: cpu cgroup %s not set up: %s", cpu_dir, exc)
    return info


# --- pod specs -----------------------------------------------------------------------------
