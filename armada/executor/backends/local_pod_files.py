"""What the ``local`` backend and its per-pod shim (``local_shim.py``) share: the files of a
pod's directory, how each is written and read, how to tell that a recorded process is still
the one alive, a cgroup's processes and OOM kills, and a finished container's termination
message.

``local_shim.py`` runs by path (``python -I -S``) and loads this file by its path, so it too
must import nothing but the standard library.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

# The files of a pod's directory. Each has one writer; every write replaces the file
# atomically, so a reader in any process sees either the old or the new content.
POD_FILE = "pod.json"  # backend, once: the request and the resolved plan
SHIM_FILE = "shim.json"  # backend, once: pid, start time and boot id of the shim
STATUS_FILE = "status.json"  # shim: progress and results
DELETE_FILE = "delete.json"  # backend: deletion asked for, and when to SIGKILL
LOST_FILE = "lost.json"  # backend: the shim vanished without a result, found at this time
SHIM_LOG = "shim.log"  # the shim's own stderr
LOG_DIR = "logs"  # <container>.log: stdout and stderr of each container
TERMINATION_DIR = "termination"  # <container>: ARMADA_TERMINATION_MESSAGE_PATH
WORK_DIR = "work"  # default working directory and HOME of the pod's containers

MAX_MESSAGE_BYTES = 4096  # termination messages, as in Kubernetes
FALLBACK_LOG_LINES = 80  # FallbackToLogsOnError takes at most this many last lines


def write_json(path: Path, data: Any) -> None:
    """Replace ``path`` with ``data`` atomically (write a temporary file, then rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    """The content of ``path``, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (``/proc/<pid>/stat`` field 22, clock ticks since boot);
    None when there is no such process or it is a zombie. With the pid and the boot id it
    names a process for good: a pid reused later has another start time."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data.rsplit(")", 1)[-1].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def is_alive(pid: int, ticks: int | None, boot: str) -> bool:
    """Whether the process recorded as (``pid``, ``ticks``, ``boot``) is still running."""
    return bool(pid) and ticks is not None and boot == boot_id() and start_ticks(pid) == ticks


def cgroup_pids(cgroup: str | None) -> list[int]:
    """The processes in ``cgroup`` (its own, not its children's)."""
    if not cgroup:
        return []
    try:
        text = Path(cgroup, "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def kill_cgroup(cgroup: str | None, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to every process in ``cgroup``; True when it had any."""
    pids = cgroup_pids(cgroup)
    if not pids:
        return False
    if sig == signal.SIGKILL and Path(cgroup or "", "cgroup.kill").exists():
        with contextlib.suppress(OSError):
            Path(cgroup or "", "cgroup.kill").write_text("1")
            return True
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return True


def oom_kills(cgroup: str, version: int) -> int | None:
    """How many processes the kernel OOM-killed in ``cgroup``: ``oom_kill`` of
    ``memory.events`` (v2) or ``memory.oom_control`` (v1); None when the kernel has no such
    counter."""
    name = "memory.events" if version == 2 else "memory.oom_control"
    try:
        text = Path(cgroup, name).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return None


def failcnt(cgroup: str) -> int:
    try:
        return int(Path(cgroup, "memory.failcnt").read_text())
    except (OSError, ValueError):
        return 0


def read_tail(path: str | Path, limit: int) -> bytes:
    """The last ``limit`` bytes of ``path``; empty when it cannot be read."""
    if limit <= 0:
        return b""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - limit))
            return f.read(limit)
    except OSError:
        return b""


def log_tail_message(path: str | Path) -> str:
    """Kubernetes' FallbackToLogsOnError: the last lines of a log, at most 4096 bytes."""
    data = read_tail(path, MAX_MESSAGE_BYTES + 1)
    if len(data) > MAX_MESSAGE_BYTES:  # cut: drop the partial first line
        data = data[1:]
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else data
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return "\n".join(lines[-FALLBACK_LOG_LINES:])


def termination_message(plan: dict[str, Any], started_at: float, failed: bool) -> str:
    """The container's termination message: the file at ARMADA_TERMINATION_MESSAGE_PATH,
    else its own ``terminationMessagePath`` when that was written during its run, else (when
    it failed and the policy allows) the tail of its log."""
    own = read_tail(plan["termination_path"], MAX_MESSAGE_BYTES).decode("utf-8", "replace")
    if own.strip():
        return own.strip()
    extra = plan.get("extra_termination_path")
    if extra:
        with contextlib.suppress(OSError):
            if os.stat(extra).st_mtime >= started_at - 1:
                text = read_tail(extra, MAX_MESSAGE_BYTES).decode("utf-8", "replace")
                if text.strip():
                    return text.strip()
    if failed and plan.get("fallback_to_logs", True):
        return log_tail_message(plan["log"])
    return ""
