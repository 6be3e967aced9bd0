"""What a request to stop many jobs at once (every job on a node, or on an executor) takes
and checks, shared by ``services.node_actions`` and ``services.executor_actions``: the lists
of names in its body (``queues``, ``priorityClasses``, ``pools``: lists of non-empty strings
naming what is configured or stored, each wrong entry named ``queues[2]``), its ``reason``,
and the locking of the selected runs in the lock order of ``docs/concurrency.md``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from armada.models import Queue, Run
from armada.services.errors import FieldError, NotFound, ValidationFailed
from armada.services.locking import lock, lock_jobs
from armada.services.stopping import CANCEL, PREEMPT

MAX_REASON = 255
DONE = {CANCEL: "cancelled", PREEMPT: "preempted"}


def lock_selected(runs: QuerySet) -> list[Run]:
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


def names(field: str, value: Any) -> list[str]:
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


def priority_classes(value: Any) -> list[str]:
    given = names("priorityClasses", value)
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
    return given


def reason(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_REASON:
        raise ValidationFailed.one("reason", f"must be text of at most {MAX_REASON} characters")
    return value


def queues(wanted: Sequence[str]) -> list[Queue]:
    """The queues named, in order; NotFound naming the first that does not exist."""
    found = {q.name: q for q in Queue.objects.filter(name__in=wanted)}
    for name in wanted:
        if name not in found:
            raise NotFound(f"queue {name!r} does not exist")
    return [found[name] for name in wanted]


def username(actor: Any) -> str:
    """The requestor's name for a stop's reason and events."""
    return (
        actor.get_username() if getattr(actor, "is_authenticated", False) else ""
    ) or "anonymous"


def pools(value: Any) -> list[str]:
    given = names("pools", value)
    known = [p.name for p in settings.ARMADA.scheduling.pools]
    errors = [
        FieldError(f"pools[{i}]", f"unknown pool {name!r}; configured: {', '.join(known)}")
        for i, name in enumerate(value or [])
        if name not in known
    ]
    if errors:
        raise ValidationFailed(errors)
    return given
