"""Deleting the events of deleted queues, in short batches.

A queue's delete writes an ``EventPurge`` row (its name and the newest event id then) and
deletes nothing else of the event log: its events are already read by no one (a queue of the
same name made later reads only ids above its ``Queue.event_floor``). This deletes them
afterwards, a batch of :data:`BATCH` per transaction, so no transaction holds many row locks
or runs long, and the event log stays open to writers throughout (deleting takes no
event-log lock: ids that exist keep their order). A row goes once none of its events are
left. Run by the periodic task ``armada.events.purge``; safe to run twice at once (the second
waits for the first's rows and finds them gone).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import transaction

from armada.models import Event, EventPurge

BATCH = 5000


def events_purge(
    *, budget_seconds: float = 5.0, clock: Callable[[], float] = time.monotonic
) -> int:
    """Delete deleted queues' events until none are left or ``budget_seconds`` have passed
    (the next run goes on); returns how many were deleted."""
    deadline = clock() + budget_seconds
    deleted = 0
    for purge in list(EventPurge.objects.order_by("id")):
        while True:
            if clock() >= deadline:
                return deleted
            with transaction.atomic():
                ids = list(
                    Event.objects.filter(queue=purge.queue, id__lte=purge.upto)
                    .order_by()
                    .values_list("id", flat=True)[:BATCH]
                )
                if not ids:
                    EventPurge.objects.filter(pk=purge.pk).delete()
                    break
                Event.objects.filter(id__in=ids).delete()
                deleted += len(ids)
    return deleted
