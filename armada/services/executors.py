"""Executors and their nodes: registration from config, heartbeats, and what is leased to them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from armada.core.config import Executor as ExecutorConfig
from armada.core.states import RunState
from armada.models import Executor, Node, Run


def executor_register(*, config: ExecutorConfig, now: datetime) -> Executor:
    """Create or refresh the executor and its nodes from config; nodes no longer listed go.

    Each node carries the label ``kubernetes.io/hostname`` (its name) besides its configured
    labels, but only the labels in ``trackedNodeLabels`` are reported: the others are
    invisible to the scheduler (node selectors, gang uniformity, avoiding a node)."""
    with transaction.atomic():
        executor, _ = Executor.objects.update_or_create(
            id=config.id,
            defaults={
                "pool": config.pool,
                "backend": config.backend,
                "tracked_node_labels": list(config.tracked_node_labels),
                "last_heartbeat": now,
            },
            create_defaults={
                "pool": config.pool,
                "backend": config.backend,
                "tracked_node_labels": list(config.tracked_node_labels),
                "last_heartbeat": now,
                "registered_at": now,
            },
        )
        existing = {n.name: n for n in Node.objects.filter(executor=executor)}
        tracked = set(config.tracked_node_labels)
        wanted: dict[str, Node] = {}
        for group in config.nodes:
            taints = [t.model_dump() for t in group.taints]
            for name in group.node_names():
                # Only tracked labels reach the scheduler, as with a real cluster's executor.
                every_label = {"kubernetes.io/hostname": name, **group.labels}
                labels = {k: v for k, v in every_label.items() if k in tracked}
                wanted[name] = Node(
                    executor=executor,
                    name=name,
                    pool=config.pool,
                    labels=labels,
                    taints=taints,
                    allocatable=dict(group.allocatable),
                    last_seen=now,
                )
        Node.objects.filter(executor=executor).exclude(name__in=list(wanted)).delete()
        fresh = [n for name, n in wanted.items() if name not in existing]
        stale = []
        for name, node in wanted.items():
            if name in existing:
                node.pk = existing[name].pk
                stale.append(node)
        Node.objects.bulk_create(fresh, batch_size=1000)
        Node.objects.bulk_update(
            stale, ["pool", "labels", "taints", "allocatable", "last_seen"], batch_size=1000
        )
    return executor


def executor_heartbeat(*, executor_id: str, now: datetime) -> bool:
    """Record that the executor is alive; False when it is not registered."""
    return bool(Executor.objects.filter(id=executor_id).update(last_heartbeat=now))


@dataclass(frozen=True)
class ActiveRun:
    id: str
    job_id: str
    state: RunState
    node: str
    pod_name: str
    pod_spec: dict[str, Any]
    annotations: dict[str, str]
    stop_requested: bool = False
    stop_kind: str = ""
    namespace: str = "default"


def runs_active_for_executor(*, executor_id: str) -> list[ActiveRun]:
    """Runs leased to this executor that have not ended, oldest lease first."""
    rows = (
        Run.objects.filter(
            executor=executor_id, state__in=[RunState.LEASED, RunState.PENDING, RunState.RUNNING]
        )
        .order_by("leased_at", "id")
        .values(
            "id",
            "job_id",
            "state",
            "node",
            "pod_name",
            "job__pod_spec",
            "job__annotations",
            "job__namespace",
            "stop_requested_at",
            "stop_kind",
        )
    )
    return [
        ActiveRun(
            id=r["id"],
            job_id=r["job_id"],
            state=RunState(r["state"]),
            node=r["node"],
            pod_name=r["pod_name"],
            pod_spec=r["job__pod_spec"],
            annotations=r["job__annotations"],
            stop_requested=r["stop_requested_at"] is not None,
            stop_kind=r["stop_kind"],
            namespace=r["job__namespace"],
        )
        for r in rows
    ]
