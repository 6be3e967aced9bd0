"""Acting on many queues at once: cancel, preempt, cordon and uncordon every queue picked by
name or by a label selector (``armadactl cancel queues -l team=ml``), and listing queues the
same way.

A request picks its queues with exactly one of ``queues`` (names) or ``selector``
(``core.labels.parse_selector``); ``inverse`` turns the pick around (every queue *except*
those); requests are parsed and their filters checked in ``services.queue_action_inputs``.
A name that no queue has is an error (NotFound) even with ``inverse``, since a misspelt
exception would otherwise widen the action to the queue meant to be spared.

Every action is all or nothing, in one transaction, in the lock order of
``services.locking``:
1. the picked queues' rows, in name order (a selector is read first without locks, then the
   queues it picked are locked and checked again: one whose labels changed meanwhile so
   that it no longer matches is left out);
2. the permission on every picked queue, before anything changes: one denied queue and
   the whole request is refused (PermissionDenied naming each denied queue);
3. the jobs, in id order, then their active runs in id order, then the event-log lock.

``dry_run`` checks the same (permission included) and answers with what would be affected,
reading without locks and changing nothing.

Filters of cancel and preempt (each empty list meaning "any"):
- ``states`` (cancel only): unfinished job states; none given means every unfinished state.
  Preempt acts on jobs that hold a run (leased, pending or running).
- ``priority_classes``: the jobs' priority classes, each one of ``scheduling.priorityClasses``.
- ``pools``: jobs whose active run is in one of these pools (``scheduling.pools``). A queued
  job has no run yet and may be scheduled in any pool, so it matches every pool filter (in
  Armada, a queued job matches the pools it may be scheduled in).

Permissions: cancel and preempt need the queue verb (``cancel``, ``preempt``) on each queue,
through the one funnel (``services.authz``); cordon and uncordon need the global
``cordon_queue``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from armada.core.labels import Selector
from armada.core.states import JobState
from armada.models import Job, Queue, Run
from armada.services.authz import GLOBAL_FOR_VERB, can_on_queue, has_global
from armada.services.errors import NotFound, PermissionDenied
from armada.services.locking import CHUNK, lock, lock_runs_with_jobs
from armada.services.queue_action_inputs import (
    CANCEL,
    CORDON,
    MAX_REASON,
    PREEMPT_ACTION,
    QueueSelection,
    check_filters,
    parse_action_body,
)
from armada.services.stopping import ACTIVE, PREEMPT, _cancel_locked, runs_request_stops

# What the callers of these services need from the inputs module, in one import.
__all__ = [
    "CANCEL",
    "CORDON",
    "MAX_REASON",
    "PREEMPT_ACTION",
    "QueueCordon",
    "QueueJobs",
    "QueueSelection",
    "parse_action_body",
    "queues_cancel",
    "queues_filter",
    "queues_preempt",
    "queues_set_cordoned",
]


@dataclass(frozen=True)
class QueueJobs:
    """One queue's part of a cancel or preempt: the jobs acted on (or that would be)."""

    name: str
    job_ids: list[str]


@dataclass(frozen=True)
class QueueCordon:
    """One queue's part of a cordon or uncordon: its state after the request (or that it
    would have after it, on a dry run)."""

    name: str
    cordoned: bool


# --- selecting --------------------------------------------------------------------------------


def queues_filter(
    *, selector: Selector | None = None, inverse: bool = False, only_cordoned: bool = False
) -> list[Queue]:
    """The queues that match ``selector`` (every queue without one) and, with
    ``only_cordoned``, are cordoned; ``inverse`` turns the whole test around, as Armada's
    ``armadactl get queues --inverse`` does. In name order."""
    out = []
    for queue in Queue.objects.order_by("name"):
        hit = (selector is None or selector.matches(queue.labels)) and (
            queue.cordoned or not only_cordoned
        )
        if hit != inverse:
            out.append(queue)
    return out


def _picked(selection: QueueSelection, *, for_update: bool) -> list[Queue]:
    """The queues ``selection`` picks, in name order; locked (``FOR NO KEY UPDATE`` of the
    queue rows, in name order) when ``for_update``. NotFound names any unknown name."""
    if selection.names is not None:
        known = set(Queue.objects.filter(name__in=selection.names).values_list("name", flat=True))
        missing = [n for n in selection.names if n not in known]
        if missing:
            raise NotFound(
                f"no queue {', '.join(map(repr, missing))}: nothing was changed"
                if len(missing) > 1
                else f"queue {missing[0]!r} does not exist: nothing was changed"
            )
    if selection.names is not None and not selection.inverse:
        names = list(selection.names)
    else:
        names = [q.name for q in Queue.objects.only("name", "labels") if selection.matches(q)]
    rows = Queue.objects.filter(name__in=names)
    if for_update:
        rows = rows.select_for_update(no_key=True, of=("self",))
    # Checked again on the (locked) rows: labels may have changed since the first read.
    return [q for q in rows.order_by("name") if selection.matches(q)]


def _require_on_each(actor: Any, queues: Iterable[Queue], verb: str) -> None:
    """PermissionDenied naming every queue of ``queues`` on which ``actor`` may not ``verb``
    (``cordon`` is the global ``cordon_queue``; the others go through the queue funnel)."""
    if verb == CORDON:
        denied = [] if has_global(actor, "cordon_queue") else [q.name for q in queues]
        needs = "the global 'cordon_queue' permission"
    else:
        denied = [q.name for q in queues if not can_on_queue(actor, q, verb)]
        needs = (
            f"the {verb!r} permission on each queue or the global "
            f"{GLOBAL_FOR_VERB[verb]!r} permission"
        )
    if denied:
        user = getattr(actor, "username", "") or "anonymous"
        raise PermissionDenied(
            f"user {user!r} may not {verb} on queue(s) {', '.join(map(repr, denied))}: needs "
            f"{needs}; nothing was changed"
        )


def _jobs(
    queues: list[Queue], *, states: list[str], priority_classes: list[str], pools: list[str]
) -> QuerySet:
    """The jobs of ``queues`` that pass the filters, with only the fields stopping them reads
    (a pod spec is large, and tens of thousands of jobs may be picked)."""
    rows = Job.objects.filter(queue_id__in=[q.name for q in queues], state__in=states).only(
        "id", "queue_id", "job_set", "state"
    )
    if priority_classes:
        rows = rows.filter(priority_class__in=priority_classes)
    if pools:
        in_pool = Run.objects.filter(job_id=OuterRef("pk"), state__in=ACTIVE, pool__in=pools)
        rows = rows.filter(Q(state=JobState.QUEUED) | Exists(in_pool))
    return rows


def _by_queue(queues: list[Queue], jobs: Iterable[Job]) -> list[QueueJobs]:
    ids: dict[str, list[str]] = {q.name: [] for q in queues}
    for job in jobs:
        ids[job.queue_id].append(job.id)
    return [QueueJobs(name, sorted(job_ids)) for name, job_ids in ids.items()]


# --- acting -----------------------------------------------------------------------------------


def _picked_jobs(
    actor: Any, selection: QueueSelection, verb: str, filters: dict, *, for_update: bool
) -> tuple[list[Queue], QuerySet]:
    """The picked queues (locked when ``for_update``), once ``actor`` may ``verb`` on every
    one of them, and their jobs that pass ``filters`` (not yet locked)."""
    queues = _picked(selection, for_update=for_update)
    _require_on_each(actor, queues, verb)
    return queues, _jobs(queues, **filters)


def queues_cancel(
    *,
    actor: Any,
    selection: QueueSelection,
    states: Any = None,
    priority_classes: Any = None,
    pools: Any = None,
    reason: str = "",
    dry_run: bool = False,
    now: datetime,
) -> list[QueueJobs]:
    """Cancel the jobs of the picked queues that pass the filters (see the module
    docstring): queued ones at once, the others by asking their executors to stop them
    (``services.stopping``). Returns each picked queue with the ids of its jobs cancelled
    (or, on a dry run, that would be)."""
    wanted, classes, pool_names = check_filters(
        states=states, priority_classes=priority_classes, pools=pools, reason=reason, cancel=True
    )
    reason = reason or f"cancelled by {actor.get_username()}"
    filters = {"states": wanted, "priority_classes": classes, "pools": pool_names}
    if dry_run:
        queues, rows = _picked_jobs(actor, selection, CANCEL, filters, for_update=False)
        return _by_queue(queues, rows.order_by("id"))
    with transaction.atomic():
        queues, rows = _picked_jobs(actor, selection, CANCEL, filters, for_update=True)
        jobs = list(lock(rows))
        # Every active run is locked before the first queue's events take the event-log
        # lock: the cancels of the later queues then wait for no row.
        ids = [j.id for j in jobs if j.state != JobState.QUEUED]
        for start in range(0, len(ids), CHUNK):
            lock_runs_with_jobs(
                Run.objects.filter(job_id__in=ids[start : start + CHUNK], state__in=ACTIVE)
            )
        result = _by_queue(queues, jobs)
        by_id = {j.id: j for j in jobs}
        for part in result:
            if part.job_ids:
                _cancel_locked(
                    [by_id[i] for i in part.job_ids],
                    queue=part.name,
                    reason=reason,
                    now=now,
                    requestor=actor.get_username(),
                )
    return result


def queues_preempt(
    *,
    actor: Any,
    selection: QueueSelection,
    priority_classes: Any = None,
    pools: Any = None,
    reason: str = "",
    dry_run: bool = False,
    now: datetime,
) -> list[QueueJobs]:
    """Preempt the jobs of the picked queues that hold a run (leased, pending, running) and
    pass the filters: their runs are asked to stop (``services.stopping``); a preempted job
    is not retried and its retry budget is untouched. Returns each picked queue with the ids
    of its jobs preempted (or, on a dry run, that would be)."""
    wanted, classes, pool_names = check_filters(
        priority_classes=priority_classes, pools=pools, reason=reason, cancel=False
    )
    reason = reason or "preempted by an operator"
    filters = {"states": wanted, "priority_classes": classes, "pools": pool_names}
    if dry_run:
        queues, rows = _picked_jobs(actor, selection, PREEMPT_ACTION, filters, for_update=False)
        return _by_queue(queues, rows.order_by("id"))
    with transaction.atomic():
        queues, rows = _picked_jobs(actor, selection, PREEMPT_ACTION, filters, for_update=True)
        jobs = list(lock(rows))
        if jobs:
            runs_request_stops(
                reasons={j.id: reason for j in jobs},
                kind=PREEMPT,
                now=now,
                requestor=actor.get_username(),
            )
    return _by_queue(queues, jobs)


def queues_set_cordoned(
    *, actor: Any, selection: QueueSelection, cordoned: bool, dry_run: bool = False, now: datetime
) -> list[QueueCordon]:
    """Cordon (no new jobs may be submitted) or uncordon every picked queue; returns each
    with its state after the request (or that it would have, on a dry run)."""
    if dry_run:
        queues = _picked(selection, for_update=False)
        _require_on_each(actor, queues, CORDON)
        return [QueueCordon(q.name, cordoned) for q in queues]
    with transaction.atomic():
        queues = _picked(selection, for_update=True)
        _require_on_each(actor, queues, CORDON)
        Queue.objects.filter(pk__in=[q.pk for q in queues]).update(
            cordoned=cordoned, updated_at=now
        )
    return [QueueCordon(q.name, cordoned) for q in queues]
