"""Cancel or preempt every job on one executor (Armada's CancelOnExecutor and
PreemptOnExecutor), and delete an executor.

Selection of a cancel or preempt: the jobs whose active run (leased, pending or running) is
on executor ``executor``, limited to ``queues``, ``priority_classes`` and ``pools`` when those
are given (empty or left out: all). Queued jobs are on no executor and are never selected. A
selected run already being stopped is left as it is and its job is still answered: asking
twice changes nothing more.

Order of checks, each refusing the whole request with nothing written:
1. the global permission, as Armada asks it: ``cancel_any_jobs`` or ``preempt_any_jobs``
   (403);
2. the body: ``queues`` a list of queue names, ``priorityClasses`` a list of configured
   priority classes, ``pools`` a list of configured pools, ``reason`` text of at most 255
   characters (400 naming the field);
3. the executor exists, or still has active runs (404); every named queue exists (404).

One transaction, in the lock order of ``docs/concurrency.md``: the selected jobs in id order,
then their runs (a run that ended or was re-leased elsewhere while its lock was awaited drops
out, and one leased onto the executor after the selection was read is not taken: the request
came first), then the event-log lock once, last (``services.stopping`` marks the runs and
appends ``cancelling`` or ``preempting``). The executor stops each pod with its grace period
and reports the run cancelled or preempted, as for any cancel or preemption.

Deleting an executor (Armada's DeleteExecutor) needs ``update_executor_settings``. Armada
removes the executor's record and nothing else, so a live executor reappears at its next
call; here the executor is *retired*: in one transaction its credentials are revoked (its
process is refused from its next call and cannot register again), its nodes and its record
are removed (it leaves ``get executors`` and the scheduler places nothing more on it). Its
runs that are still active are then those of a lost executor: the next lease-expiry pass
(``services.expiry``, every scheduling cycle) ends them ``lease_expired``, a genuine failure
that the job's retry policy decides on, as if the executor had stopped heart-beating.
Stop them first (``executor_jobs_cancel`` or ``executor_jobs_preempt``) to end them another
way. To bring the cluster back, make it a new credential: it registers afresh.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from armada.models import Executor, ExecutorCredential, Node, Run
from armada.services import stop_selection as selection
from armada.services.authz import require_global
from armada.services.errors import NotFound
from armada.services.stopping import ACTIVE, CANCEL, PREEMPT, runs_request_stops

PERMISSION = {CANCEL: "cancel_any_jobs", PREEMPT: "preempt_any_jobs"}
DELETE_PERMISSION = "update_executor_settings"


def executor_jobs_cancel(
    *,
    actor: Any,
    executor: str,
    queues: Any = None,
    priority_classes: Any = None,
    pools: Any = None,
    reason: Any = "",
    now: datetime,
) -> list[str]:
    """Cancel the selected jobs on the executor; returns their ids, sorted. See the module."""
    return _stop_on_executor(
        actor=actor,
        kind=CANCEL,
        executor=executor,
        queues=queues,
        priority_classes=priority_classes,
        pools=pools,
        reason=reason,
        now=now,
    )


def executor_jobs_preempt(
    *,
    actor: Any,
    executor: str,
    queues: Any = None,
    priority_classes: Any = None,
    pools: Any = None,
    reason: Any = "",
    now: datetime,
) -> list[str]:
    """Preempt the selected jobs on the executor (each ends preempted and is not retried);
    returns their ids, sorted. See the module."""
    return _stop_on_executor(
        actor=actor,
        kind=PREEMPT,
        executor=executor,
        queues=queues,
        priority_classes=priority_classes,
        pools=pools,
        reason=reason,
        now=now,
    )


def require_stop_permission(actor: Any, kind: str) -> None:
    """PermissionDenied naming the global permission unless ``actor`` holds it."""
    verb = "cancel" if kind == CANCEL else "preempt"
    require_global(actor, PERMISSION[kind], f"{verb} jobs on an executor")


def _stop_on_executor(
    *,
    actor: Any,
    kind: str,
    executor: str,
    queues: Any,
    priority_classes: Any,
    pools: Any,
    reason: Any,
    now: datetime,
) -> list[str]:
    require_stop_permission(actor, kind)
    queue_names = selection.names("queues", queues)
    classes = selection.priority_classes(priority_classes)
    pool_names = selection.pools(pools)
    text = selection.reason(reason)
    runs = Run.objects.filter(executor=executor, state__in=ACTIVE)
    if not Executor.objects.filter(id=executor).exists() and not runs.exists():
        raise NotFound(f"executor {executor!r} does not exist")
    selection.queues(queue_names)  # NotFound naming the first missing queue
    if queue_names:
        runs = runs.filter(job__queue_id__in=queue_names)
    if classes:
        runs = runs.filter(job__priority_class__in=classes)
    if pool_names:
        runs = runs.filter(pool__in=pool_names)
    text = text or f"{selection.DONE[kind]} on executor {executor} by {selection.username(actor)}"
    with transaction.atomic():
        locked = selection.lock_selected(runs)
        job_ids = sorted({r.job_id for r in locked})
        if job_ids:
            runs_request_stops(
                reasons=dict.fromkeys(job_ids, text),
                kind=kind,
                now=now,
                requestor=selection.username(actor),
            )
    return job_ids


def executor_delete(*, actor: Any, executor_id: str, now: datetime) -> dict[str, Any]:
    """Retire the executor (see the module); returns ``{"id", "credentialsRevoked",
    "nodesRemoved", "activeRuns"}``, the last being the runs that lease expiry will end.
    404 when there is no such executor (Armada answers success then; a script that deletes
    twice sees the second refused)."""
    require_global(actor, DELETE_PERMISSION, "delete executors")
    with transaction.atomic():
        found = Executor.objects.select_for_update(of=("self",)).filter(id=executor_id).first()
        if found is None:
            raise NotFound(f"executor {executor_id!r} does not exist")
        revoked = ExecutorCredential.objects.filter(
            cluster_id=executor_id, revoked_at__isnull=True
        ).update(revoked_at=now)
        nodes, _ = Node.objects.filter(executor_id=executor_id).delete()
        found.delete()
        active = Run.objects.filter(executor=executor_id, state__in=ACTIVE).count()
    return {
        "id": executor_id,
        "credentialsRevoked": revoked,
        "nodesRemoved": nodes,
        "activeRuns": active,
    }
