"""Turning rows into the core's scheduling objects (nodes, queued jobs)."""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings

from armada.core.floating import split_floating
from armada.core.quantity import Resources
from armada.core.scheduling import NodeState, QueuedJob, Taint, Toleration
from armada.models import Job, Node


def pod_tolerations(pod_spec: Mapping) -> list[Toleration]:
    out = []
    for t in pod_spec.get("tolerations") or []:
        if isinstance(t, dict):
            out.append(
                Toleration(
                    key=str(t.get("key", "")),
                    operator=str(t.get("operator", "Equal")),
                    value=str(t.get("value", "")),
                    effect=str(t.get("effect", "")),
                )
            )
    return out


def armada_allocatable(allocatable: Mapping, others: Mapping | None) -> dict[str, int]:
    """What of a node's allocatable Armada may use: less what pods it did not start use
    (reported by the executor), never below zero."""
    used = others or {}
    return {k: max(0, int(v) - int(used.get(k, 0))) for k, v in allocatable.items()}


def node_state(node: Node) -> NodeState:
    return NodeState(
        id=f"{node.executor_id}/{node.name}",
        executor=node.executor_id,
        name=node.name,
        allocatable=Resources(armada_allocatable(node.allocatable, node.non_armada_allocated)),
        labels=node.labels,
        taints=[
            Taint(t.get("key", ""), t.get("value", ""), t.get("effect", "NoSchedule"))
            for t in node.taints
        ],
        unschedulable=node.unschedulable or node.cordoned,
    )


def queued_job(
    job: Job, *, urgency: int = 0, avoid_nodes: frozenset[str] = frozenset()
) -> QueuedJob:
    on_node, floating = split_floating(job.requests, settings.ARMADA.scheduling.floating_names)
    return QueuedJob(
        id=job.id,
        queue=job.queue_id,
        requests=Resources(on_node),
        floating=floating,
        priority_class=job.priority_class,
        priority=job.priority,
        urgency=urgency,
        node_selector=job.pod_spec.get("nodeSelector") or {},
        tolerations=pod_tolerations(job.pod_spec),
        avoid_nodes=avoid_nodes,
        gang_id=job.gang_id,
        gang_cardinality=job.gang_cardinality,
        gang_uniformity_label=job.gang_uniformity_label,
    )
