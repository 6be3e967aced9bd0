"""The ``local`` executor backend: a pod is a group of processes on this machine.

There are no images: each container runs its ``command`` + ``args`` (Kubernetes semantics,
including ``$(VAR)`` expansion) with its ``env`` and ``workingDir``; ``image``, volumes, probes
and security contexts are ignored, and the processes run as the executor's own user.

Design
------
*State.* Everything about a pod lives in ``<state_dir>/pods/<pod name>/`` (file names in
``local_pod_files``): ``pod.json`` (the request and the resolved plan, written once by
``create_pod``), ``shim.json`` (pid, start time and boot id of the pod's shim),
``status.json`` (progress and results, kept by the shim), ``delete.json`` (written by
``delete_pod``), ``lost.json`` (written when the shim is found gone without a result),
``logs/<container>.log``, ``termination/<container>`` and ``work/`` (default working
directory and HOME). The directory is the pod: it exists from ``create_pod`` until deletion
has completed, which is what makes ``PodExists`` race-free (``mkdir``) across processes.

*Shim.* ``create_pod`` starts ``local_shim.py`` for the pod in a session of its own and waits
only until it reports ready. The shim runs the init containers in order, then the containers
side by side, records start and end times (wall clock), exit codes, OOM kills and
termination messages in ``status.json``, enforces ``activeDeadlineSeconds`` and performs
deletions. The worker keeps nothing in memory that matters: a new ``LocalBackend`` on the same
``state_dir``, in any process, sees every pod from its files. A pod whose shim is no longer
alive (checked by pid, start time and boot id) and left no final status is reported failed
with ``lost`` and ``pod_error`` set (the agent reports it internal / pod-missing).

*Memory.* One cgroup per pod with the pod's memory limit (Kubernetes' rule: the sum of the
containers' limits, or the largest init container's if that is larger; no limit when any
container has none), and below it one cgroup per container, so that an OOM kill is
attributed to the container it hit. cgroup v2 (``memory.max``, swap off) is preferred where a
v2 hierarchy with the memory controller can be delegated; else v1
(``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``) under
``<memory mount>/armada/<executor_id>/<pod>``. Only where neither can be made, each process
gets ``RLIMIT_AS`` = the pod's limit (address space, not memory; OOM kills cannot be seen),
with a warning logged once. Cgroups are removed when the pod is deleted.

*CPU.* Best effort: v1 ``cpu.shares`` (1024 per cpu) or v2 ``cpu.weight`` from the pod's cpu
request; no quota.

*Time.* Timestamps come from the wall clock of the processes that saw the events (the shim,
or this backend when it created the pod or found it lost), never from ``now``. Deadlines and
grace periods are timed by the shim on its own clocks, because it keeps running when the
worker does not; the ``now`` arguments are accepted for the interface and otherwise unused.

*Network.* A job's ``services`` are accepted and not created (there is no cluster network to
make them in). Its ``ingress`` ports are served by the processes themselves: once the pod
runs, each ingress port has the address ``<host name of this machine>:<port>``.

*Deletion.* ``delete_pod`` records the time after which SIGKILL is due (grace: the argument
when positive, else the pod's ``terminationGracePeriodSeconds``, else
``default_grace_seconds``) and wakes the shim, which sends SIGTERM to each container's main
process and SIGKILL to everything in the container once that time has come. ``poll`` (or
``delete_pod`` on a finished pod) removes the cgroups and the directory once no process is
left; until then the pod is listed with ``deleting``. A lost pod is SIGKILLed at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from armada.core.utilisation import UsageSample
from armada.executor.backends import local_pod_files as pod_files
from armada.executor.backends.base import (
    LogPosition,
    LogRead,
    PodCreationFailed,
    PodExists,
    PodRequest,
    PodStatus,
    check_namespace,
)
from armada.executor.backends.cgroups import (
    CgroupMode,
    _Cgroups,
    _make_pod_cgroups,
    _probe_v1,
    _probe_v2,
    _remove_cgroups,
    _warn_rlimit_once,
    remove_leftovers,
)
from armada.executor.backends.local_deletion import LocalDeletion
from armada.executor.backends.local_plan import (
    CONTAINER_NAME,
    ingress_ports,
    pod_plan,
    valid_pod_name,
)
from armada.executor.backends.local_shim_start import start_shim
from armada.executor.backends.local_status import _status, pod_log, pod_log_since
from armada.executor.backends.local_usage import pod_usage

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30.0  # Kubernetes' terminationGracePeriodSeconds default
# A pod directory without pod.json (or a pod without shim.json) younger than this is taken to
# be in the middle of create_pod in some process; older, it is a creation that died.
CREATION_WINDOW = 60.0


class LocalBackend(LocalDeletion):
    """Runs pods as processes on this machine; see the module docstring.

    ``state_dir`` holds the pods (``<state_dir>/pods``) and must survive worker restarts;
    ``executor_id`` names this executor's cgroup directory. ``cgroups`` chooses the memory
    cgroup version (``auto`` prefers v2, then v1; ``none`` uses RLIMIT_AS);
    ``default_grace_seconds`` is the grace of a deletion or deadline when neither the caller
    nor the pod spec gives one. ``namespaces`` are those this machine, as a cluster, has: a
    pod in another is refused (``PodRejected``).
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        executor_id: str,
        cgroups: CgroupMode = "auto",
        default_grace_seconds: float = DEFAULT_GRACE_SECONDS,
        namespaces: Iterable[str] = ("default",),
    ) -> None:
        if cgroups not in ("auto", "v2", "v1", "none"):
            raise ValueError(f"cgroups must be auto, v2, v1 or none, not {cgroups!r}")
        if not CONTAINER_NAME.match(executor_id):
            raise ValueError(f"executor_id {executor_id!r} must be a lower-case RFC 1123 label")
        self.state_dir = Path(state_dir)
        self.executor_id = executor_id
        self.default_grace_seconds = float(default_grace_seconds)
        self.namespaces = frozenset(namespaces)
        self._pods = self.state_dir / "pods"
        self._cgroup_choice = cgroups
        self._cgroups: _Cgroups | None = None
        self._probed = False
        self._children: list[subprocess.Popen[bytes]] = []  # shims we started, to reap
        self._boot_id = pod_files.boot_id()

    # --- cgroups ---------------------------------------------------------------------------

    def _cgroup_setup(self) -> _Cgroups | None:
        if not self._probed:
            self._probed = True
            choice = self._cgroup_choice
            if choice in ("auto", "v2"):
                self._cgroups = _probe_v2(self.executor_id)
            if self._cgroups is None and choice in ("auto", "v1"):
                self._cgroups = _probe_v1(self.executor_id)
            if self._cgroups is None:
                _warn_rlimit_once()
        return self._cgroups

    @property
    def cgroup_mode(self) -> str:
        """``v2``, ``v1`` or ``none`` (RLIMIT_AS): how new pods get their memory limit."""
        setup = self._cgroup_setup()
        return f"v{setup.version}" if setup else "none"

    @property
    def executor_cgroups(self) -> list[Path]:
        """This executor's cgroup directories (parents of the pods' cgroups)."""
        setup = self._cgroup_setup()
        if setup is None:
            return []
        return sorted({setup.memory, *([setup.cpu] if setup.cpu else [])})

    def close(self) -> None:
        """The executor stops: the cgroups of pods already gone are removed, with this
        executor's cgroup directories when they are left empty (``cgroups.remove_leftovers``;
        the pods themselves, and their cgroups, outlive the executor)."""
        if not self._probed or self._cgroups is None:
            return
        live = set()
        with contextlib.suppress(OSError):
            live = {p.name for p in self._pods.iterdir() if not p.name.startswith(".trash")}
        remove_leftovers(self._cgroups, live)

    # --- create ----------------------------------------------------------------------------

    def create_pod(self, pod: PodRequest, now: datetime) -> None:
        check_namespace(pod, self.namespaces)
        if not valid_pod_name(pod.name):
            raise PodCreationFailed(f"pod name {pod.name!r} is not a lower-case RFC 1123 name")
        pod_dir = self._pods / pod.name
        plan, memory_limit, cpu_millis = pod_plan(pod, pod_dir, self.default_grace_seconds)
        self._pods.mkdir(parents=True, exist_ok=True)
        self._claim(pod_dir)
        cgroups: dict[str, Any] | None = None
        try:
            for sub in (pod_files.LOG_DIR, pod_files.TERMINATION_DIR, pod_files.WORK_DIR):
                (pod_dir / sub).mkdir()
            setup = self._cgroup_setup()
            names = [c["name"] for c in plan["init_containers"] + plan["containers"]]
            if setup is not None:
                cgroups = _make_pod_cgroups(setup, pod.name, names, memory_limit, cpu_millis)
                plan["cgroup_version"] = setup.version
                for c in plan["init_containers"] + plan["containers"]:
                    c["cgroup"] = cgroups["containers"][c["name"]]
                    c["join"] = [str(Path(c["cgroup"], "cgroup.procs"))]
                    if cgroups["cpu"]:
                        c["join_optional"] = [str(Path(cgroups["cpu"], "cgroup.procs"))]
            else:
                plan["rlimit_as"] = memory_limit
            pod_files.write_json(
                pod_dir / pod_files.POD_FILE,
                {
                    "name": pod.name,
                    "run_id": pod.run_id,
                    "job_id": pod.job_id,
                    "namespace": pod.namespace,
                    "node": pod.node,
                    "annotations": dict(pod.annotations),
                    "pod_spec": pod.pod_spec,
                    "executor_id": self.executor_id,
                    "created_at": time.time(),
                    "uid": str(uuid.uuid4()),
                    "memory_limit": memory_limit,
                    "cgroups": cgroups,
                    "plan": plan,
                    "ingress_ports": ingress_ports(pod),
                    "host": socket.gethostname(),
                },
            )
            self._start_shim(pod.name, pod_dir)
        except BaseException:
            if cgroups is not None:
                _remove_cgroups(cgroups)
            self._trash(pod_dir)
            raise

    def _claim(self, pod_dir: Path) -> None:
        """Take the pod's name: ``mkdir`` is atomic across processes."""
        for _ in range(2):
            try:
                pod_dir.mkdir()
                return
            except FileExistsError:
                try:
                    age = time.time() - pod_dir.stat().st_mtime
                except FileNotFoundError:
                    continue
                if (pod_dir / pod_files.POD_FILE).exists() or age < CREATION_WINDOW:
                    raise PodExists(pod_dir.name) from None
                self._trash(pod_dir)  # a creation that died half-way
        raise PodExists(pod_dir.name)

    def _start_shim(self, name: str, pod_dir: Path) -> None:
        self._children.append(start_shim(name, pod_dir, self._boot_id))

    # --- poll ------------------------------------------------------------------------------

    def poll(self, now: datetime) -> list[PodStatus]:
        self._reap()
        out: list[PodStatus] = []
        try:
            entries = sorted(os.scandir(self._pods), key=lambda e: e.name)
        except FileNotFoundError:
            return out
        for entry in entries:
            if entry.name.startswith(".trash-"):
                shutil.rmtree(entry.path, ignore_errors=True)
                continue
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            status = self._pod_status(Path(entry.path))
            if status is not None:
                out.append(status)
        return out

    def usage(self, pods: list[PodStatus], now: datetime) -> dict[str, UsageSample]:
        """Readings of the running ``pods`` from their cgroups (``local_usage``)."""
        out = {}
        for status in pods:
            if status.running_at is None or status.finished_at is not None:
                continue
            doc = pod_files.read_json(self._pods / status.name / pod_files.POD_FILE)
            sample = pod_usage(doc.get("cgroups"), now) if isinstance(doc, dict) else None
            if sample is not None:
                out[status.name] = sample
        return out

    def _reap(self) -> None:
        self._children = [p for p in self._children if p.poll() is None]

    def _shim_alive(self, pod_dir: Path, doc: Mapping[str, Any]) -> bool:
        info = pod_files.read_json(pod_dir / pod_files.SHIM_FILE)
        if not isinstance(info, dict):  # create_pod under way in some process, or died
            return time.time() - float(doc.get("created_at", 0)) < CREATION_WINDOW
        return pod_files.is_alive(int(info.get("pid") or 0), info.get("start_ticks"), self._boot_id)

    def _mark_lost(
        self, pod_dir: Path, doc: Mapping[str, Any], st: Mapping[str, Any]
    ) -> dict | None:
        info = pod_files.read_json(pod_dir / pod_files.SHIM_FILE) or {}
        pid = info.get("pid", "unknown")
        message = (
            f"the processes of pod {doc['name']} are gone without a recorded result: its shim "
            f"(pid {pid}) was killed or the machine restarted"
        )
        if st.get("shim_error"):
            message += f"; the shim failed with {st['shim_error']}"
        lost = {"detected_at": time.time(), "message": message}
        try:
            pod_files.write_json(pod_dir / pod_files.LOST_FILE, lost)
        except FileNotFoundError:
            return None  # not lost: removed meanwhile (by another process's poll)
        return lost

    def _observe(self, pod_dir: Path) -> tuple[dict, dict, dict | None] | None:
        """pod.json, status.json and lost.json of a pod, marking it lost when its shim is
        gone without a final status; None when there is no (complete) pod."""
        doc = pod_files.read_json(pod_dir / pod_files.POD_FILE)
        if not isinstance(doc, dict):
            return None
        st = pod_files.read_json(pod_dir / pod_files.STATUS_FILE) or {}
        lost = pod_files.read_json(pod_dir / pod_files.LOST_FILE)
        if lost is None and not st.get("done") and not self._shim_alive(pod_dir, doc):
            st = (
                pod_files.read_json(pod_dir / pod_files.STATUS_FILE) or {}
            )  # it may just have ended
            if not st.get("done"):
                lost = self._mark_lost(pod_dir, doc, st)
                if lost is None:
                    return None
        return doc, st, lost

    def _pod_status(self, pod_dir: Path) -> PodStatus | None:
        observed = self._observe(pod_dir)
        if observed is None:
            return None
        doc, st, lost = observed
        deleting = (pod_dir / pod_files.DELETE_FILE).exists()
        if deleting and (st.get("done") or lost is not None):
            if lost is not None:
                self._kill_lost(doc, st)
            if self._remove(pod_dir, doc):
                return None
        return _status(doc, st, lost, deleting)

    # --- logs ------------------------------------------------------------------------------

    def read_log(self, name: str, limit_bytes: int = 1_000_000) -> str:
        """The tail of the containers' logs (init containers first, in spec order); with more
        than one container each log is headed by ``==> <container> <==``."""
        if not valid_pod_name(name) or limit_bytes <= 0:
            return ""
        return pod_log(self._pods / name, limit_bytes)

    def read_log_since(
        self, name: str, since: Mapping[str, LogPosition], limit_bytes: int, now: datetime
    ) -> list[LogRead] | None:
        """What each container's log gained past ``since`` (``local_status.pod_log_since``)."""
        if not valid_pod_name(name) or limit_bytes <= 0:
            return None
        return pod_log_since(self._pods / name, since, limit_bytes)
