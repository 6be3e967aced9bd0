"""Executors and nodes for operators: reading them, and cordoning an executor.

A cordoned executor keeps its running jobs but gets no new leases (the scheduler only
places jobs on the nodes of live, uncordoned executors). Cordoning or uncordoning one needs
the global ``update_executor_settings`` permission (Armada's name for it); a cordon may
give a reason, kept until the executor is uncordoned.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count

from armada.models import Executor, Node
from armada.services.authz import require_global
from armada.services.errors import NotFound, ValidationFailed

CORDON_EXECUTOR_PERMISSION = "update_executor_settings"
MAX_CORDON_REASON = 255


def _alive_since(now: datetime) -> datetime:
    return now - timedelta(seconds=float(settings.ARMADA.executor_timeout))


def executor_summary(executor: Executor, *, now: datetime) -> dict[str, Any]:
    return {
        "id": executor.id,
        "pool": executor.pool,
        "backend": executor.backend,
        "cordoned": executor.cordoned,
        "cordonReason": executor.cordon_reason,
        "alive": executor.last_heartbeat >= _alive_since(now),
        "registeredAt": executor.registered_at,
        "lastHeartbeat": executor.last_heartbeat,
        "trackedNodeLabels": executor.tracked_node_labels,
        "instance": executor.instance,
        "sessionOpenedAt": executor.session_opened_at,
        "nodeCount": getattr(executor, "node_count", None),
    }


def node_summary(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "pool": node.pool,
        "labels": node.labels,
        "taints": node.taints,
        "allocatable": node.allocatable,
        "unschedulable": node.unschedulable,
        "cordoned": node.cordoned,
        "cordonReason": node.cordon_reason,
        "nonArmadaAllocated": node.non_armada_allocated,
        "lastSeen": node.last_seen,
    }


def executor_list(*, now: datetime) -> list[dict[str, Any]]:
    rows = Executor.objects.annotate(node_count=Count("nodes")).order_by("id")
    return [executor_summary(e, now=now) for e in rows]


def executor_get(*, executor_id: str, now: datetime) -> dict[str, Any]:
    executor = Executor.objects.annotate(node_count=Count("nodes")).filter(id=executor_id).first()
    if executor is None:
        raise NotFound(f"executor {executor_id!r} does not exist")
    nodes = Node.objects.filter(executor=executor).order_by("name")
    return {**executor_summary(executor, now=now), "nodes": [node_summary(n) for n in nodes]}


def require_executor_settings(actor: Any) -> None:
    """PermissionDenied naming ``update_executor_settings`` unless ``actor`` holds it."""
    require_global(actor, CORDON_EXECUTOR_PERMISSION, "cordon or uncordon executors")


def executor_set_cordoned(
    *, actor: Any, executor_id: str, cordoned: bool, reason: Any = "", now: datetime
) -> dict[str, Any]:
    """Cordon (no new leases) or uncordon an executor; idempotent. A cordon stores
    ``reason`` (text, at most 255 characters; a cordon again replaces it); an uncordon
    clears it and takes no reason."""
    require_executor_settings(actor)
    if not isinstance(reason, str) or len(reason) > MAX_CORDON_REASON:
        raise ValidationFailed.one(
            "reason", f"must be text of at most {MAX_CORDON_REASON} characters"
        )
    if reason and not cordoned:
        raise ValidationFailed.one("reason", "an uncordon takes no reason")
    with transaction.atomic():
        changed = Executor.objects.filter(id=executor_id).update(
            cordoned=cordoned, cordon_reason=reason.strip() if cordoned else ""
        )
        if not changed:
            raise NotFound(f"executor {executor_id!r} does not exist")
    return executor_get(executor_id=executor_id, now=now)
