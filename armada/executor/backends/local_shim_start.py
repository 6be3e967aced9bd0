"""Starting a ``local`` pod's shim (``local_shim.py``): a Python process in a session of its
own, isolated from the executor's environment (``-I -S``), that reports one line when it is
ready. Its pid, start time and boot id go to ``shim.json`` before it is waited for, so that a
backend in any process can tell later whether this shim is still the one alive."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from armada.executor.backends import local_pod_files as pod_files
from armada.executor.backends import local_shim as shim
from armada.executor.backends.base import PodCreationFailed

SHIM_PATH = Path(shim.__file__).resolve()
SHIM_START_TIMEOUT = 10.0


def start_shim(name: str, pod_dir: Path, boot_id: str) -> subprocess.Popen[bytes]:
    """Start the pod's shim in a session of its own, record it in ``shim.json`` and wait
    until it says it is ready (PodCreationFailed with its output if it does not within
    ``SHIM_START_TIMEOUT``); the process, for its starter to reap."""
    if not sys.executable:
        raise PodCreationFailed("no Python interpreter to run the pod's shim with")
    with open(pod_dir / pod_files.SHIM_LOG, "ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(SHIM_PATH), str(pod_dir)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
    assert proc.stdout is not None
    try:
        # Our child and not reaped yet, so the pid cannot name another process.
        pod_files.write_json(
            pod_dir / pod_files.SHIM_FILE,
            {
                "pid": proc.pid,
                "start_ticks": pod_files.start_ticks(proc.pid),
                "boot_id": boot_id,
            },
        )
        ready = _read_line(proc.stdout.fileno(), SHIM_START_TIMEOUT)
    finally:
        proc.stdout.close()
    if ready != shim.READY:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
        tail = pod_files.read_tail(pod_dir / pod_files.SHIM_LOG, 2000).decode("utf-8", "replace")
        raise PodCreationFailed(
            f"the shim of pod {name} did not start: {tail.strip() or 'no output'}"
        )
    return proc


def _read_line(fd: int, timeout: float) -> bytes:
    """One line from ``fd`` within ``timeout`` seconds (less on EOF or timeout)."""
    data = b""
    give_up = time.monotonic() + timeout
    while not data.endswith(b"\n"):
        left = give_up - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 64)
        if not chunk:
            break
        data += chunk
    return data
