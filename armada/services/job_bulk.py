"""Acting on many jobs picked by id: cancel, reprioritize or preempt a selection of the jobs
grid, across queues and job sets.

``jobs_act`` takes up to ``MAX_IDS`` job ids and does what it can, reporting the rest:
- ids that match no job, or a job of a queue the actor may not ``watch``, are *not found*
  (the answer never tells one from the other);
- jobs of a queue where the actor lacks the action's verb (``cancel``, ``reprioritize``,
  ``preempt``, checked with ``services.authz.can_on_queue``) are *refused*, per queue, naming
  the permission; the other queues' jobs are acted on;
- jobs that have already finished are *skipped*, as are (cancel, preempt) jobs whose active
  run is already being stopped, and (preempt) jobs that hold no run: nothing to preempt;
- the rest are acted on by the services that act on one job set, so permissions, events and
  transactions are theirs: ``stopping.jobs_cancel``, ``reprioritize.jobs_reprioritize`` and,
  for preempt, the many-job form of ``stopping.job_preempt`` (``runs_request_preemption``,
  after the same queue check ``job_preempt`` makes).

One transaction per (queue, job set) group, groups in (queue, job set) order, and within a
group the jobs locked in id order first (``services.locking``): the group's jobs are read
under their locks, so a job finished or stopped by someone else meanwhile is skipped, never
an error and never a second event. Holding the locks of one group at a time, in id order,
two operators acting on overlapping selections cannot deadlock each other. A group that
fails (a database error, a service refusing) is rolled back alone and reported *failed*
with the reason; the groups before and after it stay done.

``jobs_check`` answers the same report without changing anything, reading without locks:
what a confirmation says before the action.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby
from typing import Any

from django.db import DatabaseError, transaction

from armada.core.states import JobState
from armada.core.submission import MAX_PRIORITY
from armada.models import Job, Queue, Run
from armada.services.authz import (
    GLOBAL_FOR_VERB,
    can_on_queue,
    has_global,
    require_queue_verb,
    watchable_queues,
)
from armada.services.errors import (
    Conflict,
    FieldError,
    NotFound,
    PermissionDenied,
    Unavailable,
    ValidationFailed,
)
from armada.services.locking import lock
from armada.services.reprioritize import jobs_reprioritize
from armada.services.stopping import ACTIVE, jobs_cancel, runs_request_preemption

CANCEL, REPRIORITIZE, PREEMPT = "cancel", "reprioritize", "preempt"
ACTIONS = (CANCEL, REPRIORITIZE, PREEMPT)
#: The most ids one request may name.
MAX_IDS = 1000
MAX_REASON = 255
#: What a job id may look like (ids are 26-character ULIDs; shorter ones are accepted).
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,25}")
_ACTIVE_JOB_STATES = frozenset(s.value for s in JobState if s.active)
_TERMINAL = frozenset(s.value for s in JobState if s.terminal)
# A service refusing or failing for one group; anything else is a bug and propagates.
_GROUP_ERRORS = (Conflict, NotFound, PermissionDenied, Unavailable, ValidationFailed, DatabaseError)


@dataclass(frozen=True)
class Refused:
    """The selected jobs of one queue where the actor lacks the action's verb."""

    queue: str
    permission: str  # the queue verb
    global_permission: str  # the global permission that would grant it everywhere
    job_ids: tuple[str, ...]


@dataclass(frozen=True)
class Failed:
    """One (queue, job set) group whose transaction failed: nothing changed for its jobs."""

    queue: str
    job_set: str
    job_ids: tuple[str, ...]
    reason: str


@dataclass
class BulkResult:
    """What a bulk action did (or, from ``jobs_check``, would do) to each selected id. Every
    selected id is in exactly one list."""

    action: str
    checked_only: bool
    selected: int
    priority: int | None = None
    done: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)  # already finished: skipped
    stopping: list[str] = field(default_factory=list)  # active run already being stopped
    not_running: list[str] = field(default_factory=list)  # preempt: holds no run
    refused: list[Refused] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)
    failed: list[Failed] = field(default_factory=list)

    @property
    def refused_ids(self) -> list[str]:
        return [job_id for r in self.refused for job_id in r.job_ids]

    @property
    def failed_ids(self) -> list[str]:
        return [job_id for f in self.failed for job_id in f.job_ids]


# --- inputs -----------------------------------------------------------------------------------


def parse_action(action: Any) -> str:
    if action not in ACTIONS:
        raise ValidationFailed.one("action", f"must be one of {', '.join(ACTIONS)}")
    return action


def parse_ids(ids: Any, *, field: str = "jobIds") -> list[str]:
    """The selected ids without duplicates, in the order given; ValidationFailed naming
    ``field`` when there are none, more than ``MAX_IDS``, or one is not a job id."""
    if not isinstance(ids, list | tuple) or not ids:
        raise ValidationFailed.one(field, "select at least one job")
    errors = [
        FieldError(f"{field}[{i}]", f"{value!r} is not a job id")
        for i, value in enumerate(ids)
        if not isinstance(value, str) or not JOB_ID.fullmatch(value)
    ]
    if errors:
        raise ValidationFailed(errors)
    unique = list(dict.fromkeys(ids))
    if len(unique) > MAX_IDS:
        raise ValidationFailed.one(
            field, f"at most {MAX_IDS} jobs at once ({len(unique)} were selected)"
        )
    return unique


def parse_priority(priority: Any) -> int:
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not 0 <= priority <= MAX_PRIORITY
    ):
        raise ValidationFailed.one("priority", f"must be a whole number from 0 to {MAX_PRIORITY}")
    return priority


def parse_reason(reason: Any) -> str:
    if reason is None:
        return ""
    if not isinstance(reason, str) or len(reason) > MAX_REASON:
        raise ValidationFailed.one("reason", f"must be text of at most {MAX_REASON} characters")
    return reason.strip()


# --- the two entry points ---------------------------------------------------------------------


def jobs_check(*, actor: Any, action: Any, job_ids: Any, field: str = "jobIds") -> BulkResult:
    """What ``jobs_act`` would do to ``job_ids`` now, changing nothing; ``done`` lists the
    jobs it would act on."""
    action = parse_action(action)
    wanted = parse_ids(job_ids, field=field)
    result = BulkResult(action=action, checked_only=True, selected=len(wanted))
    for _group, jobs in _sorted_out(actor, action, wanted, result):
        acting, skipped = _split(action, jobs, _runs_stopping(action, jobs))
        result.done.extend(acting)
        _add_skipped(result, skipped)
    return result


def jobs_act(
    *,
    actor: Any,
    action: Any,
    job_ids: Any,
    reason: Any = "",
    priority: Any = None,
    now: datetime,
    field: str = "jobIds",
) -> BulkResult:
    """Do ``action`` to the jobs ``job_ids`` (see the module): ``reason`` for cancel and
    preempt, ``priority`` for reprioritize. Bad input is ValidationFailed naming the field,
    with nothing changed."""
    action = parse_action(action)
    wanted = parse_ids(job_ids, field=field)
    text = parse_reason(reason)
    new_priority = parse_priority(priority) if action == REPRIORITIZE else None
    result = BulkResult(
        action=action, checked_only=False, selected=len(wanted), priority=new_priority
    )
    for (queue, job_set), jobs in _sorted_out(actor, action, wanted, result):
        ids = [j.id for j in jobs]
        try:
            with transaction.atomic():
                done, skipped = _act_on_group(
                    actor, action, queue, job_set, ids, text, new_priority, now
                )
        except _GROUP_ERRORS as exc:
            result.failed.append(Failed(queue, job_set, tuple(ids), _reason_of(exc)))
            continue
        result.done.extend(done)
        _add_skipped(result, skipped)
    return result


def actions_allowed(actor: Any) -> set[str]:
    """The actions ``actor`` may do on at least one queue they may watch (the grid shows only
    those buttons; the server checks every job anyway)."""
    if not getattr(actor, "is_authenticated", False):
        return set()
    allowed = {a for a in ACTIONS if has_global(actor, GLOBAL_FOR_VERB[a])}
    if len(allowed) == len(ACTIONS):
        return allowed
    watchable = watchable_queues(actor)
    queues = Queue.objects.order_by("name")
    if watchable is not None:
        queues = queues.filter(name__in=watchable)
    for queue in queues:
        allowed |= {a for a in ACTIONS if a not in allowed and can_on_queue(actor, queue, a)}
        if len(allowed) == len(ACTIONS):
            break
    return allowed


# --- sorting the selection out ----------------------------------------------------------------


def _sorted_out(
    actor: Any, action: str, wanted: Sequence[str], result: BulkResult
) -> list[tuple[tuple[str, str], list[Job]]]:
    """Put the ids that match no watchable job in ``not_found`` and the jobs of queues where
    the verb is missing in ``refused``; the rest, grouped by (queue, job set) in that order,
    each group's jobs in id order."""
    watchable = watchable_queues(actor)
    jobs = Job.objects.filter(id__any=list(wanted)).only("id", "queue_id", "job_set", "state")
    if watchable is not None:
        jobs = jobs.filter(queue_id__in=watchable)
    found = {j.id: j for j in jobs}
    result.not_found.extend(i for i in wanted if i not in found)
    queues = {
        q.name: q for q in Queue.objects.filter(name__in={j.queue_id for j in found.values()})
    }
    ordered = sorted(found.values(), key=lambda j: (j.queue_id, j.job_set, j.id))
    groups = []
    for queue_name, of_queue in groupby(ordered, key=lambda j: j.queue_id):
        queue_jobs = list(of_queue)
        if not can_on_queue(actor, queues[queue_name], action):
            result.refused.append(
                Refused(
                    queue=queue_name,
                    permission=action,
                    global_permission=GLOBAL_FOR_VERB[action],
                    job_ids=tuple(j.id for j in queue_jobs),
                )
            )
            continue
        for job_set, of_set in groupby(queue_jobs, key=lambda j: j.job_set):
            groups.append(((queue_name, job_set), list(of_set)))
    return groups


def _runs_stopping(action: str, jobs: Iterable[Job]) -> dict[str, bool]:
    """For the jobs holding an active run (cancel and preempt): whether it is already being
    stopped, by job id. A job absent from the answer holds no active run."""
    if action == REPRIORITIZE:
        return {}
    ids = [j.id for j in jobs if j.state not in _TERMINAL]
    if not ids:
        return {}
    rows = Run.objects.filter(job_id__any=ids, state__in=ACTIVE).values_list(
        "job_id", "stop_requested_at"
    )
    return {job_id: stop is not None for job_id, stop in rows}


def _split(
    action: str, jobs: Iterable[Job], stopping: dict[str, bool]
) -> tuple[list[str], dict[str, list[str]]]:
    """The ids of the jobs the action applies to, and those it skips by kind: ``finished``,
    ``stopping`` (cancel, preempt) and ``not_running`` (preempt)."""
    acting: list[str] = []
    skipped: dict[str, list[str]] = {"finished": [], "stopping": [], "not_running": []}
    for job in jobs:
        if job.state in _TERMINAL:
            skipped["finished"].append(job.id)
        elif stopping.get(job.id):
            skipped["stopping"].append(job.id)
        elif action == PREEMPT and job.id not in stopping:
            skipped["not_running"].append(job.id)
        else:
            acting.append(job.id)
    return acting, skipped


def _add_skipped(result: BulkResult, skipped: dict[str, list[str]]) -> None:
    for name, ids in skipped.items():
        getattr(result, name).extend(ids)


# --- acting on one (queue, job set) -----------------------------------------------------------


def _act_on_group(
    actor: Any,
    action: str,
    queue: str,
    job_set: str,
    ids: list[str],
    reason: str,
    priority: int | None,
    now: datetime,
) -> tuple[list[str], dict[str, list[str]]]:
    """Inside the group's transaction: lock its jobs in id order, read them as they are now,
    and hand those the action applies to to the service. Returns the ids acted on and the
    skipped ones by kind."""
    rows = Job.objects.filter(queue_id=queue, job_set=job_set, id__any=ids).only("id", "state")
    locked = list(lock(rows))
    acting, skipped = _split(action, locked, _runs_stopping(action, locked))
    # A job that vanished since it was read (expired) counts as already finished.
    present = {j.id for j in locked}
    skipped["finished"].extend(i for i in ids if i not in present)
    if not acting:
        return [], skipped
    if action == CANCEL:
        done = jobs_cancel(
            actor=actor, queue=queue, job_set=job_set, job_ids=acting, reason=reason, now=now
        )
    elif action == REPRIORITIZE:
        done = jobs_reprioritize(
            actor=actor, queue=queue, job_set=job_set, priority=priority, job_ids=acting, now=now
        )
    else:
        done = _preempt(actor, queue, acting, reason, now)
    return sorted(done), skipped


def _preempt(actor: Any, queue: str, job_ids: list[str], reason: str, now: datetime) -> list[str]:
    """``stopping.job_preempt`` for many jobs of one queue: the same permission check, then
    its many-job form; returns the jobs whose run was marked."""
    row = Queue.objects.filter(name=queue).first()
    if row is None:
        raise NotFound(f"queue {queue!r} does not exist")
    require_queue_verb(actor, row, "preempt")
    runs = runs_request_preemption(
        job_ids=job_ids,
        reason=reason or "preempted by an operator",
        now=now,
        requestor=actor.get_username(),
    )
    return list(Run.objects.filter(id__any=runs).values_list("job_id", flat=True))


def _reason_of(exc: Exception) -> str:
    if isinstance(exc, DatabaseError):
        return "the database refused the change; nothing was changed for these jobs"
    return str(exc)
