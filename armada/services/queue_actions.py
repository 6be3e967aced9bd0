"""Acting on many queues at once: cancel, preempt, cordon and uncordon every queue picked by
name or by a label selector (``armadactl cancel queues -l team=ml``), and listing queues the
same way.

A request picks its queues with exactly one of ``queues`` (names) or ``selector``
(``core.labels.parse_selector``); ``inverse`` turns the pick around (every queue *except*
those). A name that no queue has is an error (NotFound) even with ``inverse``, since a
misspelt exception would otherwise widen the action to the queue meant to be spared.

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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from armada.core.errors import FieldError
from armada.core.labels import Selector, parse_selector
from armada.core.states import JobState
from armada.models import Job, Queue, Run
from armada.services.authz import GLOBAL_FOR_VERB, can_on_queue, has_global
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.services.locking import CHUNK, lock, lock_runs_with_jobs
from armada.services.stopping import (
    ACTIVE,
    CANCELLABLE_STATES,
    PREEMPT,
    _cancel_locked,
    runs_request_stops,
)

PREEMPTIBLE_STATES = [JobState.LEASED.value, JobState.PENDING.value, JobState.RUNNING.value]
MAX_REASON = 255  # a run's stop reason
CANCEL, PREEMPT_ACTION, CORDON = "cancel", "preempt", "cordon"
_SELECTION_KEYS = ("queues", "selector", "inverse", "dryRun")
BODY_KEYS = {
    CANCEL: (*_SELECTION_KEYS, "states", "priorityClasses", "pools", "reason"),
    PREEMPT_ACTION: (*_SELECTION_KEYS, "priorityClasses", "pools", "reason"),
    CORDON: _SELECTION_KEYS,
}


@dataclass(frozen=True)
class QueueSelection:
    """Which queues a request acts on: ``names`` or ``selector`` (exactly one), turned around
    by ``inverse``."""

    names: tuple[str, ...] | None = None
    selector: Selector | None = None
    inverse: bool = False

    def __post_init__(self) -> None:
        if (self.names is None) == (self.selector is None):
            raise ValueError("a selection has names or a selector, not both and not neither")

    def matches(self, queue: Queue) -> bool:
        if self.names is not None:
            hit = queue.name in self.names
        else:
            assert self.selector is not None
            hit = self.selector.matches(queue.labels)
        return hit != self.inverse


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


# --- parsing a request ------------------------------------------------------------------------


def _bool(data: Mapping[str, Any], key: str, errors: list[FieldError]) -> bool:
    value = data.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        errors.append(FieldError(key, "must be true or false"))
        return False
    return value


def _strings(value: Any, key: str, errors: list[FieldError]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        errors.append(FieldError(key, "must be a list of non-empty names"))
        return []
    return list(dict.fromkeys(value))


def parse_selection(data: Mapping[str, Any], errors: list[FieldError]) -> QueueSelection | None:
    """The ``queues``/``selector``/``inverse`` of a request body; problems go to ``errors``."""
    inverse = _bool(data, "inverse", errors)
    has_names = data.get("queues") is not None
    has_selector = data.get("selector") is not None
    if has_names == has_selector:
        errors.append(
            FieldError(
                "queues" if has_names else "selector",
                "give exactly one of queues (a list of names) or selector (labels such as "
                "team=ml,gpu)",
            )
        )
        return None
    if has_names:
        names = _strings(data["queues"], "queues", errors)
        if not names and isinstance(data["queues"], list):
            errors.append(FieldError("queues", "must name at least one queue"))
        return QueueSelection(names=tuple(names), inverse=inverse) if names else None
    try:
        return QueueSelection(selector=parse_selector(data["selector"]), inverse=inverse)
    except ValidationFailed as exc:
        errors.extend(exc.errors)
        return None


def parse_action_body(data: Any, action: str) -> dict[str, Any]:
    """Validate the body of ``POST /api/v1/queues/<action>`` (``cancel``, ``preempt`` or
    ``cordon``/``uncordon``, which take the same body) and return the keyword arguments of
    the service (``selection``, ``dry_run`` and the action's own); raises ValidationFailed
    naming every bad field. Filters are checked by the services themselves."""
    if not isinstance(data, Mapping):
        raise ValidationFailed.one("", "the body is a mapping")
    allowed = BODY_KEYS[action]
    errors = [
        FieldError(str(key), f"unknown field; allowed: {', '.join(allowed)}")
        for key in sorted(set(data) - set(allowed), key=str)
    ]
    out: dict[str, Any] = {
        "selection": parse_selection(data, errors),
        "dry_run": _bool(data, "dryRun", errors),
    }
    if action in (CANCEL, PREEMPT_ACTION):
        out["priority_classes"] = data.get("priorityClasses")
        out["pools"] = data.get("pools")
        reason = data.get("reason")
        if reason is not None and not isinstance(reason, str):
            errors.append(FieldError("reason", "must be text"))
        out["reason"] = reason if isinstance(reason, str) else ""
    if action == CANCEL:
        out["states"] = data.get("states")
    if errors:
        raise ValidationFailed(errors)
    return out


def _check_filters(
    *, states: Any = None, priority_classes: Any, pools: Any, reason: str, cancel: bool
) -> tuple[list[str], list[str], list[str]]:
    """The filters of a cancel or preempt, checked against the configuration; raises
    ValidationFailed naming every bad one."""
    errors: list[FieldError] = []
    wanted_states = CANCELLABLE_STATES if cancel else PREEMPTIBLE_STATES
    if cancel and states is not None:
        given = _strings(states, "states", errors)
        if not given and isinstance(states, list):
            errors.append(
                FieldError("states", "give at least one state, or leave states out for all")
            )
        for i, state in enumerate(given):
            if state not in CANCELLABLE_STATES:
                errors.append(
                    FieldError(
                        f"states[{i}]",
                        f"{state!r} is not an unfinished job state; choose from "
                        f"{', '.join(CANCELLABLE_STATES)}",
                    )
                )
        wanted_states = [s for s in CANCELLABLE_STATES if s in given] or wanted_states
    scheduling = settings.ARMADA.scheduling
    classes = _strings(priority_classes, "priorityClasses", errors)
    _known(
        classes, sorted(scheduling.priority_classes), "priorityClasses", "priority class", errors
    )
    pool_names = _strings(pools, "pools", errors)
    _known(pool_names, [p.name for p in scheduling.pools], "pools", "pool", errors)
    if len(reason) > MAX_REASON:
        errors.append(FieldError("reason", f"must be at most {MAX_REASON} characters"))
    if errors:
        raise ValidationFailed(errors)
    return wanted_states, classes, pool_names


def _known(
    given: list[str], known: Sequence[str], field: str, what: str, errors: list[FieldError]
) -> None:
    for i, name in enumerate(given):
        if name not in known:
            errors.append(
                FieldError(f"{field}[{i}]", f"unknown {what} {name!r}; known: {', '.join(known)}")
            )


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
    wanted, classes, pool_names = _check_filters(
        states=states, priority_classes=priority_classes, pools=pools, reason=reason, cancel=True
    )
    reason = reason or f"cancelled by {actor.get_username()}"
    if dry_run:
        queues = _picked(selection, for_update=False)
        _require_on_each(actor, queues, CANCEL)
        rows = _jobs(queues, states=wanted, priority_classes=classes, pools=pool_names)
        return _by_queue(queues, rows.order_by("id"))
    with transaction.atomic():
        queues = _picked(selection, for_update=True)
        _require_on_each(actor, queues, CANCEL)
        jobs = list(lock(_jobs(queues, states=wanted, priority_classes=classes, pools=pool_names)))
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
    wanted, classes, pool_names = _check_filters(
        priority_classes=priority_classes, pools=pools, reason=reason, cancel=False
    )
    reason = reason or "preempted by an operator"
    if dry_run:
        queues = _picked(selection, for_update=False)
        _require_on_each(actor, queues, PREEMPT_ACTION)
        rows = _jobs(queues, states=wanted, priority_classes=classes, pools=pool_names)
        return _by_queue(queues, rows.order_by("id"))
    with transaction.atomic():
        queues = _picked(selection, for_update=True)
        _require_on_each(actor, queues, PREEMPT_ACTION)
        jobs = list(lock(_jobs(queues, states=wanted, priority_classes=classes, pools=pool_names)))
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
