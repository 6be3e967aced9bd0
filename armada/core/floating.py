"""Floating resources: what a pool has of a resource no node owns (licences, connections to
a server outside the cluster), asked for by jobs like any other resource.

The scheduler counts them against the pool's amount (``core.limits``); they are kept apart
from what a node must offer (:func:`split_floating`), and taken out of the pod a cluster is
given (:func:`strip_floating`), since no node has them to give.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def split_floating(
    requests: Mapping[str, int], names: frozenset[str] | set[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """A job's requests as (what nodes must offer, what floating resources it asks)."""
    if not names or not any(r in names for r in requests):
        return dict(requests), {}
    on_node = {r: v for r, v in requests.items() if r not in names}
    floating = {r: v for r, v in requests.items() if r in names}
    return on_node, floating


def strip_floating(pod_spec: Mapping[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """``pod_spec`` without requests or limits of the floating resources ``names``: the
    scheduler accounts for them, and a node would refuse a pod asking for a resource it
    does not have. Containers and init containers alike; the rest is kept as it is."""
    out = dict(pod_spec)
    for key in ("containers", "initContainers"):
        containers = pod_spec.get(key)
        if not isinstance(containers, list):
            continue
        kept = []
        for container in containers:
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict):
                container = dict(container)
                container["resources"] = {
                    part: (
                        {r: v for r, v in values.items() if r not in names}
                        if part in ("requests", "limits") and isinstance(values, dict)
                        else values
                    )
                    for part, values in resources.items()
                }
            kept.append(container)
        out[key] = kept
    return out
