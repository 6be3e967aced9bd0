"""What a local pod's files say: its recorded results as a ``PodStatus``, and its log (its
tail, and what it gained since a position, for the live logs)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from armada.executor.backends import local_pod_files as pod_files
from armada.executor.backends.base import (
    ContainerResult,
    LogPosition,
    LogRead,
    PodStatus,
    log_read,
)

log = logging.getLogger(__name__)


def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


def _status(
    doc: Mapping[str, Any], st: Mapping[str, Any], lost: Mapping[str, Any] | None, deleting: bool
) -> PodStatus:
    """A pod's PodStatus from its files."""
    records = st.get("containers") or []
    base: dict[str, Any] = {
        "name": doc["name"],
        "run_id": doc["run_id"],
        "pending_at": _ts(doc.get("created_at")),
        "running_at": _ts(st.get("running_at")),
        "containers": tuple(
            ContainerResult(
                r["name"], r.get("exit_code"), r.get("reason") or "", r.get("message") or ""
            )
            for r in records
        ),
        "deleting": deleting,
        "uid": str(doc.get("uid") or ""),
    }
    if st.get("running_at") is not None and doc.get("ingress_ports"):
        host = doc.get("host") or "localhost"
        base["ingress_addresses"] = {int(p): f"{host}:{p}" for p in doc["ingress_ports"]}
    oom = any(r.get("reason") == "OOMKilled" for r in records)
    if lost is not None:
        return PodStatus(
            **base,
            finished_at=_ts(lost["detected_at"]),
            conditions=("OOMKilled",) if oom else (),
            reason="ProcessLost",
            message=lost["message"],
            pod_error=lost["message"],
            lost=True,
        )
    if not st.get("done"):
        return PodStatus(**base)
    plan = doc["plan"]
    deadline = bool(st.get("deadline_exceeded"))
    conditions = [c for c, hit in (("DeadlineExceeded", deadline), ("OOMKilled", oom)) if hit]
    failed = next((r for r in records if r.get("exit_code") != 0), None)
    all_ran = len(records) == len(plan["init_containers"]) + len(plan["containers"])
    succeeded = not deadline and failed is None and all_ran
    reason = message = ""
    if deadline:
        reason = "DeadlineExceeded"
        message = (
            "Pod was active on the node longer than the specified deadline "
            f"({plan['deadline_seconds']:g}s)"
        )
    elif failed is not None:
        reason = failed.get("reason") or "Error"
        message = failed.get("message") or _describe_failure(failed, doc)
    elif not succeeded:
        reason = "Deleted" if st.get("stop") == "deleted" else "Terminated"
        message = f"pod {doc['name']} was stopped before all its containers ran"
    return PodStatus(
        **base,
        finished_at=_ts(st.get("finished_at")),
        succeeded=succeeded,
        conditions=tuple(conditions),
        reason=reason,
        message=message,
    )


def _describe_failure(record: Mapping[str, Any], doc: Mapping[str, Any]) -> str:
    if record.get("reason") == "OOMKilled":
        return (
            f"container {record['name']} was OOM-killed: the pod's memory limit is "
            f"{doc.get('memory_limit')} bytes"
        )
    return f"container {record['name']} exited with code {record.get('exit_code')}"


def pod_log(pod_dir: Path, limit_bytes: int) -> str:
    """The tail of the pod's containers' logs, at most ``limit_bytes`` (init containers
    first, in spec order); with more than one container each log is headed by
    ``==> <container> <==``. Empty when the pod has no plan (yet)."""
    doc = pod_files.read_json(pod_dir / pod_files.POD_FILE)
    if not isinstance(doc, dict):
        return ""
    plans = doc["plan"]["init_containers"] + doc["plan"]["containers"]
    logs = [(p["name"], Path(p["log"])) for p in plans if Path(p["log"]).exists()]
    if len(logs) == 1:
        return pod_files.read_tail(logs[0][1], limit_bytes).decode("utf-8", "replace")
    parts: list[bytes] = []
    remaining = limit_bytes
    for container, path in reversed(logs):
        body = pod_files.read_tail(path, remaining)
        parts.append(body)
        remaining -= len(body)
        header = f"==> {container} <==\n".encode()
        if remaining <= 0:
            break
        parts.append(header[-remaining:])
        remaining -= len(header)
        if remaining <= 0:
            break
    return b"".join(reversed(parts)).decode("utf-8", "replace")


def pod_log_since(
    pod_dir: Path, since: Mapping[str, LogPosition], limit_bytes: int
) -> list[LogRead] | None:
    """What each container's log file gained past ``since`` (keyed by the container's name,
    or ``""`` for a pod of one container), the last ``limit_bytes`` of it at most; None when
    the pod has no plan (it is unknown, or not made yet)."""
    doc = pod_files.read_json(pod_dir / pod_files.POD_FILE)
    if not isinstance(doc, dict):
        return None
    plans = doc["plan"]["init_containers"] + doc["plan"]["containers"]
    out: list[LogRead] = []
    for plan in plans:
        key = plan["name"] if len(plans) > 1 else ""
        known = since.get(key, LogPosition()).offset
        try:
            with open(plan["log"], "rb") as f:
                size = f.seek(0, os.SEEK_END)
                if size <= known:
                    continue
                start = max(known, size - limit_bytes)
                f.seek(start)
                data = f.read(size - start)
        except OSError:
            continue
        read = log_read(key, start, data, skipped=start > known)
        if read is not None:
            out.append(read)
    return out
