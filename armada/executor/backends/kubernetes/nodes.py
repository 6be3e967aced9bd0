"""The cluster's nodes as the executor reports them: which serve its pool, what they offer,
and what pods the executor did not start already take of them.

A node serves the executor when it matches ``nodePoolLabel`` (if set) and has no
``NoSchedule``/``NoExecute`` taint outside ``toleratedTaints``. A cordoned node is reported
as unschedulable (the scheduler places nothing new there; what runs there goes on). Its name
for the scheduler is the value of its ``nodeIdLabel`` (its Kubernetes name when it lacks the
label). ``non_armada_allocated`` sums what every other live pod on the node requests
(daemon sets, system pods, pods of other tools), so that the scheduler sees the real free
capacity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from armada.core.config_kubernetes import KubernetesCluster
from armada.core.quantity import Resources, format_quantity
from armada.executor.backends.base import ClusterNode

AVOIDED_EFFECTS = ("NoSchedule", "NoExecute")
ENDED_PHASES = ("Succeeded", "Failed")


def node_id(node: Mapping[str, Any], settings: KubernetesCluster) -> str:
    meta = node.get("metadata") or {}
    return (meta.get("labels") or {}).get(settings.node_id_label) or meta.get("name", "")


def serves(node: Mapping[str, Any], settings: KubernetesCluster, pool: str) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    if settings.node_pool_label and labels.get(settings.node_pool_label) != pool:
        return False
    tolerated = set(settings.tolerated_taints)
    return not any(
        t.get("effect") in AVOIDED_EFFECTS and t.get("key") not in tolerated
        for t in (node.get("spec") or {}).get("taints") or []
    )


def _container(container: Any) -> Resources:
    resources = container.get("resources") or {} if isinstance(container, Mapping) else {}
    asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return Resources.parse(asked)


def requested(pod: Mapping[str, Any]) -> Resources:
    """What a pod requests, by Kubernetes' rules: the sum over its containers (a limit
    stands for a missing request), or the largest init container if larger, plus the pod's
    overhead. Nothing for a spec that cannot be read (the pod is not ours to judge)."""
    spec = pod.get("spec") or {}
    try:
        total = Resources()
        for container in spec.get("containers") or []:
            total = total + _container(container)
        for container in spec.get("initContainers") or []:
            total = total.maximum(_container(container))
        return total + Resources.parse(spec.get("overhead") or {})
    except (ValueError, TypeError, AttributeError):
        return Resources()


def pod_usage(pod: Mapping[str, Any]) -> tuple[str, Resources] | None:
    """The node a live pod is on and what it requests there; None for a pod that takes
    nothing (not placed yet, or ended)."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or (pod.get("status") or {}).get("phase") in ENDED_PHASES:
        return None
    return node, requested(pod)


def used_by_others(usage: Iterable[tuple[str, Resources] | None]) -> dict[str, Resources]:
    """What live pods request, by the Kubernetes name of their node."""
    out: dict[str, Resources] = {}
    for item in usage:
        if item is not None:
            node, amount = item
            out[node] = out.get(node, Resources()) + amount
    return out


def cluster_nodes(
    nodes: Iterable[Mapping[str, Any]],
    usage: Iterable[tuple[str, Resources] | None],
    settings: KubernetesCluster,
    pool: str,
) -> list[ClusterNode]:
    """The nodes that serve the executor; ``usage`` is what other pods take (``pod_usage``
    of each)."""
    used_by = used_by_others(usage)
    out = []
    for node in nodes:
        if not serves(node, settings, pool):
            continue
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        used = used_by.get(meta.get("name", ""), Resources())
        out.append(
            ClusterNode(
                name=node_id(node, settings),
                labels=dict(meta.get("labels") or {}),
                taints=tuple(
                    (t.get("key", ""), t.get("value", "") or "", t.get("effect", ""))
                    for t in spec.get("taints") or []
                ),
                allocatable={k: str(v) for k, v in allocatable.items()},
                unschedulable=bool(spec.get("unschedulable")),
                non_armada_allocated={k: format_quantity(v, k) for k, v in used.items()},
            )
        )
    return out
