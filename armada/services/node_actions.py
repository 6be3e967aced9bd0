"""Cancel or preempt every job on one node (Armada's CancelOnNode and PreemptOnNode).

Selection: the jobs whose active run (leased, pending or running) is on node ``node`` of
executor ``executor``, limited to ``queues`` and to ``priority_classes`` when those are given
(empty or left out: every queue, every class). A selected run that is already being stopped
is left as it is, and its job is still answered: the request is idempotent.

Order of checks, each refusing the whole request with nothing written:
1. the body: ``queues`` a list of queue names, ``priorityClasses`` a list of configured
   priority classes, ``reason`` text of at most 255 characters (400 naming the field);
2. the executor exists, and the node is one of its nodes or still has an active run there
   (a node removed from the configuration keeps its jobs until they are stopped) (404);
3. every named queue exists (404) and the actor has the verb (``cancel`` or ``preempt``) on it
   (403);
4. under the locks, the actor has the verb on the queue of every selected job (403): the
   permission funnel (``services.authz``) grants it through the global ``cancel_any_jobs`` or
   ``preempt_any_jobs`` as well. All or nothing: one refused queue refuses every job.

One transaction, in the lock order of ``docs/concurrency.md``: the selected jobs in id order,
then their runs, then the event-log lock once, last (``services.stopping`` marks the runs and
appends ``cancelling`` or ``preempting``). A run that left the node or ended while its lock
was awaited is no longer selected. The executor then stops each pod with its grace period
and reports the run cancelled or preempted, as for any cancel or preemption.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from armada.models import Executor, Node, Run
from armada.services import stop_selection as selection
from armada.services.authz import can_on_queue, require_queue_verb
from armada.services.errors import NotFound
from armada.services.stopping import ACTIVE, CANCEL, PREEMPT, runs_request_stops

_VERB = {CANCEL: "cancel", PREEMPT: "preempt"}


def node_jobs_cancel(
    *,
    actor: Any,
    executor: str,
    node: str,
    queues: Any = None,
    priority_classes: Any = None,
    reason: Any = "",
    now: datetime,
) -> list[str]:
    """Cancel the selected jobs on the node; returns their ids, sorted. See the module."""
    return _stop_on_node(
        actor=actor,
        kind=CANCEL,
        executor=executor,
        node=node,
        queues=queues,
        priority_classes=priority_classes,
        reason=reason,
        now=now,
    )


def node_jobs_preempt(
    *,
    actor: Any,
    executor: str,
    node: str,
    queues: Any = None,
    priority_classes: Any = None,
    reason: Any = "",
    now: datetime,
) -> list[str]:
    """Preempt the selected jobs on the node (each ends preempted and is not retried);
    returns their ids, sorted. See the module."""
    return _stop_on_node(
        actor=actor,
        kind=PREEMPT,
        executor=executor,
        node=node,
        queues=queues,
        priority_classes=priority_classes,
        reason=reason,
        now=now,
    )


def _stop_on_node(
    *,
    actor: Any,
    kind: str,
    executor: str,
    node: str,
    queues: Any,
    priority_classes: Any,
    reason: Any,
    now: datetime,
) -> list[str]:
    verb = _VERB[kind]
    queue_names = selection.names("queues", queues)
    classes = selection.priority_classes(priority_classes)
    text = selection.reason(reason)
    runs = Run.objects.filter(executor=executor, node=node, state__in=ACTIVE)
    _require_node(executor, node, runs)
    for queue in selection.queues(queue_names):
        require_queue_verb(actor, queue, verb)
    if queue_names:
        runs = runs.filter(job__queue_id__in=queue_names)
    if classes:
        runs = runs.filter(job__priority_class__in=classes)
    text = (
        text or f"{selection.DONE[kind]} on node {executor}/{node} by {selection.username(actor)}"
    )
    with transaction.atomic():
        locked = selection.lock_selected(runs)
        refused = sorted(
            {
                r.job.queue.name: r.job.queue
                for r in locked
                if not can_on_queue(actor, r.job.queue, verb)
            }.items()
        )
        if refused:
            require_queue_verb(actor, refused[0][1], verb)  # raises, naming the first queue
        job_ids = sorted({r.job_id for r in locked})
        if job_ids:
            runs_request_stops(reasons=dict.fromkeys(job_ids, text), kind=kind, now=now)
    return job_ids


def _require_node(executor: str, node: str, runs: Any) -> None:
    if not Executor.objects.filter(id=executor).exists():
        raise NotFound(f"executor {executor!r} does not exist")
    if not Node.objects.filter(executor_id=executor, name=node).exists() and not runs.exists():
        raise NotFound(f"node {node!r} does not exist on executor {executor!r}")
