"""Queue services (writes) and selectors (reads)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from armada.core.errors import FieldError, ValidationFailed
from armada.core.queues import parse_queue, queue_warnings
from armada.core.states import JobState
from armada.models import Event, EventPurge, Job, Queue, RetryPolicy
from armada.services.authz import require_global
from armada.services.errors import AlreadyExists, FailedPrecondition, NotFound
from armada.services.events import lock_event_log
from armada.services.locking import lock
from armada.services.queue_actions import QueueSelection, queues_set_cordoned

log = logging.getLogger(__name__)


def default_owners(actor: Any) -> dict[str, list[str]]:
    """The owners of a queue created with none: its creator, or for a caller with no
    credentials the groups they act in (``auth.anonymousGroups``), so that they can use it."""
    if getattr(actor, "is_authenticated", False):
        return {"owners": [actor.get_username()]}
    return {"group_owners": sorted(getattr(actor, "anonymous_groups", ()))}


def queue_parse(data: Any, *, partial: bool = False) -> dict[str, Any]:
    """``core.queues.parse_queue`` with this installation's priority classes and pools, the
    names a queue's ``resourceLimitsByPriorityClassName`` may use (``scheduling.
    priorityClasses`` and ``scheduling.pools``). Every surface that takes a queue body (the
    REST and wire APIs, dry runs, the admin) validates it here."""
    scheduling = settings.ARMADA.scheduling
    return parse_queue(
        data,
        partial=partial,
        priority_classes=list(scheduling.priority_classes),
        pools=[pool.name for pool in scheduling.pools],
    )


def _log_warnings(actor: Any, name: Any, data: Any) -> None:
    """Log what the body asked for that is ignored (``core.queues.IGNORED_FIELDS``)."""
    for warning in queue_warnings(data):
        log.warning("queue %r from %s: %s", name, actor.get_username() or "anonymous", warning)


def queue_get(*, name: str) -> Queue:
    try:
        return Queue.objects.get(name=name)
    except Queue.DoesNotExist:
        raise NotFound(f"queue {name!r} does not exist") from None


def queue_list() -> list[Queue]:
    return list(Queue.objects.order_by("name"))


def queue_page(*, after: str = "", limit: int) -> list[Queue]:
    """At most ``limit`` queues whose names sort after ``after``, in name order (a keyset
    page: a long listing reads one page at a time)."""
    return list(Queue.objects.filter(name__gt=after).order_by("name")[:limit])


def _check_policies(names: list[str]) -> None:
    """Every named policy exists. Call inside the write's transaction: the rows are locked,
    so a concurrent delete of a policy waits, then sees the new reference and refuses."""
    if not names:
        return
    known = set(lock(RetryPolicy.objects.filter(name__in=names)).values_list("name", flat=True))
    missing = [n for n in names if n not in known]
    if missing:
        raise ValidationFailed.one(
            "retryPolicies",
            f"unknown retry polic{'y' if len(missing) == 1 else 'ies'}: {', '.join(missing)}",
        )


def new_queue_event_floor() -> int:
    """A new queue's ``event_floor``: the newest event id now. Event ids become visible in
    order (``services.events``), so every event of an earlier queue of the same name is at
    or below it, and every event of the new queue above it."""
    return Event.objects.aggregate(m=Max("id"))["m"] or 0


def queue_create(*, actor: Any, data: Any, now: datetime) -> Queue:
    """Create a queue. With no owners given, the creator becomes its owner."""
    require_global(actor, "create_queue", "create queues")
    fields = queue_parse(data)
    _log_warnings(actor, fields["name"], data)
    if not fields.get("owners") and not fields.get("group_owners"):
        fields.update(default_owners(actor))
    try:
        with transaction.atomic():
            _check_policies(fields.get("retry_policies", []))
            return Queue.objects.create(
                **fields, event_floor=new_queue_event_floor(), created_at=now, updated_at=now
            )
    except IntegrityError:
        raise AlreadyExists(f"queue {fields['name']!r} already exists") from None


def queue_update(*, actor: Any, name: str, data: Any, now: datetime) -> Queue:
    """Change the fields given; the name cannot change."""
    require_global(actor, "create_queue", "update queues")
    fields = queue_parse(data, partial=True)
    _log_warnings(actor, name, data)
    if fields.get("name", name) != name:
        raise ValidationFailed([FieldError("name", "a queue cannot be renamed")])
    fields.pop("name", None)
    with transaction.atomic():
        # The queue row, then its policies' rows (the lock order of ``services.locking``).
        queue = lock(Queue.objects.filter(name=name)).first()
        if queue is None:
            raise NotFound(f"queue {name!r} does not exist")
        _check_policies(fields.get("retry_policies", []))
        for key, value in fields.items():
            setattr(queue, key, value)
        queue.updated_at = now
        queue.save()
        return queue


def queue_set_cordoned(*, actor: Any, name: str, cordoned: bool, now: datetime) -> Queue:
    """Cordon or uncordon one queue (the one-queue case of
    ``queue_actions.queues_set_cordoned``, which every cordon goes through)."""
    queues_set_cordoned(
        actor=actor, selection=QueueSelection(names=(name,)), cordoned=cordoned, now=now
    )
    return queue_get(name=name)


def queue_delete(*, actor: Any, name: str, now: datetime) -> None:
    """Delete a queue, its jobs and runs; refused (FailedPrecondition, 409) while it has jobs
    that have not finished. Its events are not read again by anyone (a queue of the same
    name made later sees only newer ones: ``Queue.event_floor``) and are deleted later in
    short batches (``services.event_purge``), so the delete holds no long lock."""
    require_global(actor, "delete_queue", "delete queues")
    with transaction.atomic():
        queue = Queue.objects.select_for_update().filter(name=name).first()
        if queue is None:
            raise NotFound(f"queue {name!r} does not exist")
        live = (
            Job.objects.filter(queue=queue)
            .exclude(state__in=[s.value for s in JobState if s.terminal])
            .count()
        )
        if live:
            raise FailedPrecondition(
                f"queue {name!r} has {live} unfinished job(s); cancel them first"
            )
        Job.objects.filter(queue=queue).delete()
        queue.delete()
        # Under the event-log lock every event of this queue is committed and visible.
        lock_event_log()
        upto = Event.objects.aggregate(m=Max("id"))["m"] or 0
        EventPurge.objects.create(queue=name, upto=upto, created_at=now)
