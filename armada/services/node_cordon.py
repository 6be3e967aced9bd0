"""Cordoning one node at the control plane: no new leases on it, whatever its executor
reports, until it is uncordoned. Jobs already there carry on (stop them with
``services.node_actions``). It is Armada's Binoculars ``Cordon`` here, which in Armada cordons
the node in its Kubernetes cluster; this control plane changes nothing in a cluster, so the
cordon is its own: the scheduler counts a cordoned node as unschedulable
(``services.snapshot.node_state``) and leaves it out of the pool's capacity.

The cordon lives on the node's row (``Node.cordoned``, ``cordon_reason``), which an executor's
report of its nodes updates without touching those two fields; a node the executor stops
reporting is removed, cordon and all, as in a cluster where the node is deleted.

Order of checks, each refusing with nothing written: the caller holds
``update_executor_settings`` (403, Armada's permission for cordons); ``reason`` is text of at
most 255 characters and only a cordon takes one (400); a node of that name exists, on
``executor`` when one is named (404). One UPDATE in one transaction: idempotent, and safe
beside an executor's report (which updates other columns of the same rows).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from armada.models import Node
from armada.services.errors import NotFound, ValidationFailed
from armada.services.executors_admin import MAX_CORDON_REASON, require_executor_settings


def nodes_set_cordoned(
    *, actor: Any, node: str, cordoned: bool, executor: str | None = None, reason: Any = ""
) -> list[str]:
    """Cordon or uncordon every node named ``node`` (of ``executor`` only, when given);
    returns them as ``executor/node``, sorted."""
    require_executor_settings(actor)
    if not isinstance(reason, str) or len(reason) > MAX_CORDON_REASON:
        raise ValidationFailed.one(
            "reason", f"must be text of at most {MAX_CORDON_REASON} characters"
        )
    if reason and not cordoned:
        raise ValidationFailed.one("reason", "an uncordon takes no reason")
    rows = Node.objects.filter(name=node)
    if executor is not None:
        rows = rows.filter(executor_id=executor)
    with transaction.atomic():
        found = sorted(f"{e}/{n}" for e, n in rows.values_list("executor_id", "name"))
        if not found:
            where = f" of executor {executor!r}" if executor is not None else ""
            raise NotFound(f"no node {node!r}{where} is reported by any executor")
        rows.update(cordoned=cordoned, cordon_reason=reason.strip() if cordoned else "")
    return found
