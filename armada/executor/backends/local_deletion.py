"""Deleting a ``local`` backend pod (``local.LocalBackend``'s deletion half): the grace
period written for the pod's shim, which stops the containers; a finished or lost pod's
processes, cgroups and directory removed at once. See ``local``'s module docstring,
*Deletion*."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from armada.executor.backends import local_pod_files as pod_files
from armada.executor.backends.cgroups import _remove_cgroups
from armada.executor.backends.local_plan import valid_pod_name


class LocalDeletion:
    """The deletion methods of ``LocalBackend``, which gives ``_pods`` (the pods' directory),
    ``_boot_id`` and ``_observe``."""

    _pods: Path
    _boot_id: str
    _observe: Callable[[Path], tuple[dict, dict, dict | None] | None]

    def delete_pod(self, name: str, now: datetime, grace_seconds: float = 0.0) -> None:
        """Grace: ``grace_seconds`` when positive, else the pod's
        ``terminationGracePeriodSeconds``, else ``default_grace_seconds``. A second call may
        shorten the grace, never lengthen it."""
        if not valid_pod_name(name):
            return
        pod_dir = self._pods / name
        observed = self._observe(pod_dir)
        if observed is None:
            return
        doc, st, lost = observed
        grace = grace_seconds if grace_seconds > 0 else float(doc["plan"]["grace_seconds"])
        t = time.time()
        previous = pod_files.read_json(pod_dir / pod_files.DELETE_FILE)
        request = {"requested_at": t, "kill_at": t + grace, "grace_seconds": grace}
        if isinstance(previous, dict):
            request["requested_at"] = previous.get("requested_at", t)
            request["kill_at"] = min(request["kill_at"], previous.get("kill_at", t))
        try:
            pod_files.write_json(pod_dir / pod_files.DELETE_FILE, request)
        except FileNotFoundError:
            return  # removed meanwhile
        if st.get("done") or lost is not None:
            if lost is not None:
                self._kill_lost(doc, st)
            self._remove(pod_dir, doc)
            return
        info = pod_files.read_json(pod_dir / pod_files.SHIM_FILE) or {}
        pid = int(info.get("pid") or 0)
        if pod_files.is_alive(pid, info.get("start_ticks"), self._boot_id):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1)  # look at delete.json now

    def _kill_lost(self, doc: Mapping[str, Any], st: Mapping[str, Any]) -> None:
        """SIGKILL what is left of a pod whose shim is gone (nobody times a grace period)."""
        cgroups = doc.get("cgroups")
        if cgroups:
            for cgroup in cgroups.get("containers", {}).values():
                pod_files.kill_cgroup(cgroup)
            return
        for record in st.get("containers") or []:
            pid = record.get("pid")
            # Only a group whose leader is provably ours: pids are reused.
            if pid and pod_files.is_alive(pid, record.get("start_ticks"), self._boot_id):
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)

    def _remove(self, pod_dir: Path, doc: Mapping[str, Any]) -> bool:
        """Remove the pod's cgroups and directory; False while processes remain."""
        cgroups = doc.get("cgroups")
        if cgroups and not _remove_cgroups(cgroups):
            return False
        self._trash(pod_dir)
        return True

    def _trash(self, pod_dir: Path) -> None:
        """Remove a pod directory: renamed first, so that it vanishes at once for readers."""
        trash = pod_dir.with_name(f".trash-{pod_dir.name}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(pod_dir, trash)
        except FileNotFoundError:
            return
        shutil.rmtree(trash, ignore_errors=True)
