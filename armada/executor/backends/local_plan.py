"""What the ``local`` backend's shim runs for a pod: the pod spec checked and resolved into a
plan (``pod.json``'s ``plan``): each container's argv with ``$(VAR)`` expanded, its
environment, working directory, log and termination-message paths, the pod's deadline and
grace, and its memory limit and cpu request. Anything the backend cannot run (no command, an
image entrypoint to fall back on, ``envFrom``, ``valueFrom``, sidecars, a restart policy
other than ``Never``) is a ``PodCreationFailed`` naming the field."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from armada.executor.backends import local_pod_files as pod_files
from armada.executor.backends.base import PodCreationFailed, PodRequest
from armada.executor.backends.local_spec import (
    _cpu_request,
    _expand,
    _memory_limit,
    _number,
    _strings,
)

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
K8S_TERMINATION_LOG = "/dev/termination-log"
CONTAINER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
POD_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def ingress_ports(pod: PodRequest) -> list[int]:
    """The ports of the pod's ingress items (each gets an address once the pod runs)."""
    return sorted({p for item in pod.ingress for p in item.get("ports") or ()})


def valid_pod_name(name: str) -> bool:
    return isinstance(name, str) and bool(POD_NAME.match(name)) and ".." not in name


def pod_plan(
    pod: PodRequest, pod_dir: Path, default_grace_seconds: float
) -> tuple[dict[str, Any], int | None, int]:
    """Check the spec and resolve what the shim runs, with the pod's memory limit and cpu
    request; PodCreationFailed naming the field if it cannot."""
    spec = pod.pod_spec
    if not isinstance(spec, Mapping):
        raise PodCreationFailed("podSpec must be a mapping")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise PodCreationFailed("podSpec.containers: at least one container is required")
    init = spec.get("initContainers") or []
    if not isinstance(init, list):
        raise PodCreationFailed("podSpec.initContainers must be a list")
    for where, items in (("initContainers", init), ("containers", containers)):
        for i, c in enumerate(items):
            if not isinstance(c, Mapping):
                raise PodCreationFailed(f"podSpec.{where}[{i}] must be a mapping")
    restart = spec.get("restartPolicy") or "Never"
    if restart != "Never":
        raise PodCreationFailed(
            f"podSpec.restartPolicy {restart!r} is not supported: the local backend runs "
            "each container once (Never)"
        )
    deadline = _number(spec, "activeDeadlineSeconds", 1)
    grace = _number(spec, "terminationGracePeriodSeconds", 0)
    names: set[str] = set()
    plans = {
        where: [
            _container_plan(c, f"podSpec.{where}[{i}]", pod, pod_dir, names)
            for i, c in enumerate(items)
        ]
        for where, items in (("initContainers", init), ("containers", containers))
    }
    plan = {
        "init_containers": plans["initContainers"],
        "containers": plans["containers"],
        "deadline_seconds": deadline,
        "grace_seconds": default_grace_seconds if grace is None else grace,
        "rlimit_as": None,
        "cgroup_version": None,
    }
    return plan, _memory_limit(containers, init), _cpu_request(containers, init)


def _container_plan(
    c: Mapping[str, Any],
    where: str,
    pod: PodRequest,
    pod_dir: Path,
    names: set[str],
) -> dict[str, Any]:
    name = c.get("name")
    if not isinstance(name, str) or not CONTAINER_NAME.match(name):
        raise PodCreationFailed(f"{where}.name is required and must be an RFC 1123 label")
    if name in names:
        raise PodCreationFailed(f"{where}.name: duplicate container name {name!r}")
    names.add(name)
    where = f"{where} ({name})"
    if c.get("restartPolicy") is not None:
        raise PodCreationFailed(f"{where}.restartPolicy: sidecar containers are not supported")
    command = c.get("command")
    if not command:
        raise PodCreationFailed(
            f"{where}.command is required: the local backend runs processes and has no "
            "image entrypoint to fall back on"
        )
    command = _strings(command, f"{where}.command")
    args = _strings(c.get("args") or [], f"{where}.args")
    if c.get("envFrom"):
        raise PodCreationFailed(f"{where}.envFrom is not supported by the local backend")
    env_list = c.get("env") or []
    if not isinstance(env_list, list):
        raise PodCreationFailed(f"{where}.env must be a list")
    user_env: dict[str, str] = {}
    for i, item in enumerate(env_list):
        key = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise PodCreationFailed(f"{where}.env[{i}].name must be a variable name")
        if item.get("valueFrom") is not None:
            raise PodCreationFailed(
                f"{where}.env[{i}] ({key}): valueFrom is not supported by the local backend"
            )
        value = item.get("value")
        value = "" if value is None else value
        if not isinstance(value, str) or "\0" in value:
            raise PodCreationFailed(f"{where}.env[{i}] ({key}).value must be a string")
        user_env[key] = _expand(value, user_env)
    argv = [_expand(a, user_env) for a in [*command, *args]]
    if any("\0" in a for a in argv):
        raise PodCreationFailed(f"{where}: command and args must not contain NUL")

    work = pod_dir / pod_files.WORK_DIR
    working_dir = c.get("workingDir")
    if working_dir is not None and not isinstance(working_dir, str):
        raise PodCreationFailed(f"{where}.workingDir must be a string")
    cwd = str(work / working_dir) if working_dir else str(work)  # absolute stays absolute
    termination = pod_dir / pod_files.TERMINATION_DIR / name
    extra = c.get("terminationMessagePath")
    if extra is not None and not isinstance(extra, str):
        raise PodCreationFailed(f"{where}.terminationMessagePath must be a string")
    if extra in ("", K8S_TERMINATION_LOG):
        extra = None
    policy = c.get("terminationMessagePolicy") or "FallbackToLogsOnError"
    if policy not in ("File", "FallbackToLogsOnError"):
        raise PodCreationFailed(
            f"{where}.terminationMessagePolicy must be File or FallbackToLogsOnError"
        )
    env = {
        "PATH": DEFAULT_PATH,
        "HOME": str(work),
        "HOSTNAME": pod.name,
        **user_env,
        "ARMADA_TERMINATION_MESSAGE_PATH": str(termination),
    }
    return {
        "name": name,
        "argv": argv,
        "env": env,
        "cwd": cwd,
        "log": str(pod_dir / pod_files.LOG_DIR / f"{name}.log"),
        "termination_path": str(termination),
        "extra_termination_path": os.path.join(cwd, extra) if extra else None,
        "fallback_to_logs": policy == "FallbackToLogsOnError",
        "cgroup": None,
        "join": [],
        "join_optional": [],
    }
