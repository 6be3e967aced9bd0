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

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from armada.models import Executor, Node, Queue, Run
from armada.services.authz import can_on_queue, require_queue_verb
from armada.services.errors import FieldError, NotFound, ValidationFailed
from armada.services.locking import lock, lock_jobs
from armada.services.stopping import ACTIVE, CANCEL, PREEMPT, runs_request_stops

MAX_REASON = 255
_VERB = {CANCEL: "cancel", PREEMPT: "preempt"}
_DONE = {CANCEL: "cancelled", PREEMPT: "preempted"}


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
    queue_names = _names("queues", queues)
    classes = _priority_classes(priority_classes)
    text = _reason(reason)
    runs = Run.objects.filter(executor=executor, node=node, state__in=ACTIVE)
    _require_node(executor, node, runs)
    for queue in _queues(queue_names):
        require_queue_verb(actor, queue, verb)
    if queue_names:
        runs = runs.filter(job__queue_id__in=queue_names)
    if classes:
        runs = runs.filter(job__priority_class__in=classes)
    text = text or f"{_DONE[kind]} on node {executor}/{node} by {_username(actor)}"
    with transaction.atomic():
        locked = _lock_selected(runs)
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


def _lock_selected(runs: QuerySet) -> list[Run]:
    """Lock the jobs of the selected runs in id order, then those runs, each run with its
    locked job (and the job's queue) attached. The runs are locked only among the jobs locked
    first: a run leased onto the node after the selection was read is not taken (the
    request came first), and one that ended or left the node meanwhile drops out."""
    jobs = lock_jobs(runs.values_list("job_id", flat=True), with_queue=True)
    if not jobs:
        return []
    locked = list(lock(runs.filter(job_id__any=sorted(jobs))))
    for run in locked:
        run.job = jobs[run.job_id]
    return locked


def _names(field: str, value: Any) -> list[str]:
    """A list of non-empty strings (None: empty), without duplicates, in the order given."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationFailed.one(field, "must be a list of names")
    errors = [
        FieldError(f"{field}[{i}]", "must be a non-empty string")
        for i, v in enumerate(value)
        if not isinstance(v, str) or not v
    ]
    if errors:
        raise ValidationFailed(errors)
    return list(dict.fromkeys(value))


def _priority_classes(value: Any) -> list[str]:
    names = _names("priorityClasses", value)
    known = settings.ARMADA.scheduling.priority_classes
    errors = [
        FieldError(
            f"priorityClasses[{i}]",
            f"unknown priority class {name!r}; configured: {', '.join(sorted(known))}",
        )
        for i, name in enumerate(value or [])
        if name not in known
    ]
    if errors:
        raise ValidationFailed(errors)
    return names


def _reason(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_REASON:
        raise ValidationFailed.one("reason", f"must be text of at most {MAX_REASON} characters")
    return value


def _require_node(executor: str, node: str, runs: Any) -> None:
    if not Executor.objects.filter(id=executor).exists():
        raise NotFound(f"executor {executor!r} does not exist")
    if not Node.objects.filter(executor_id=executor, name=node).exists() and not runs.exists():
        raise NotFound(f"node {node!r} does not exist on executor {executor!r}")


def _queues(names: Sequence[str]) -> list[Queue]:
    found = {q.name: q for q in Queue.objects.filter(name__in=names)}
    for name in names:
        if name not in found:
            raise NotFound(f"queue {name!r} does not exist")
    return [found[name] for name in names]


def _username(actor: Any) -> str:
    return (
        actor.get_username() if getattr(actor, "is_authenticated", False) else ""
    ) or "anonymous"
