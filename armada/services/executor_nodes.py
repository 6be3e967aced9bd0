"""The nodes an executor reports in each round, kept as its ``Node`` rows.

Every round carries the executor's whole node list. The list's digest is kept on the
executor, so an unchanged list (the usual case) writes nothing but the heartbeat; a changed
one replaces the rows in one transaction: nodes no longer reported go, new ones come, the
others are updated. Locks: the executor row, then its nodes (``docs/concurrency.md``); no job
or run is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from armada.models import Executor, Node
from armada.services.locking import lock


@dataclass(frozen=True)
class ReportedNode:
    """A node as the executor reported it; resources in milli-units (``core.quantity``)."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    allocatable: dict[str, int] = field(default_factory=dict)
    unschedulable: bool = False
    non_armada_allocated: dict[str, int] = field(default_factory=dict)


def executor_heartbeat_and_nodes(
    *,
    executor: Executor,
    pool: str,
    nodes: Sequence[ReportedNode] | None,
    digest: str,
    now: datetime,
) -> bool:
    """Record the round's heartbeat, and the nodes when their digest or the pool changed;
    returns whether the nodes were written. ``nodes`` may be None only when nothing changed."""
    if nodes is None or (digest == executor.nodes_digest and pool == executor.pool):
        Executor.objects.filter(id=executor.id).update(last_heartbeat=now)
        return False
    with transaction.atomic():
        if lock(Executor.objects.filter(id=executor.id)).first() is None:
            return False  # deleted while this round ran (``executor_delete``): nothing to keep
        existing = {n.name: n.pk for n in Node.objects.filter(executor_id=executor.id).only("name")}
        rows = [
            Node(
                pk=existing.get(n.name),
                executor_id=executor.id,
                name=n.name,
                pool=pool,
                labels=n.labels,
                taints=n.taints,
                allocatable=n.allocatable,
                unschedulable=n.unschedulable,
                non_armada_allocated=n.non_armada_allocated,
                last_seen=now,
            )
            for n in nodes
        ]
        wanted = {n.name for n in nodes}
        Node.objects.filter(executor_id=executor.id).exclude(name__in=list(wanted)).delete()
        Node.objects.bulk_create([r for r in rows if r.pk is None], batch_size=1000)
        Node.objects.bulk_update(
            [r for r in rows if r.pk is not None],
            [
                "pool",
                "labels",
                "taints",
                "allocatable",
                "unschedulable",
                "non_armada_allocated",
                "last_seen",
            ],
            batch_size=1000,
        )
        Executor.objects.filter(id=executor.id).update(
            last_heartbeat=now, nodes_digest=digest, pool=pool
        )
    executor.nodes_digest, executor.pool = digest, pool
    return True
