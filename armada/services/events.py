"""The append-only event log: writing batches of events and reading after a cursor.

Ordering guarantee: an event's id is its cursor, and a watcher must never see id N before
every smaller id has been committed, or it would skip events for good. PostgreSQL hands out
sequence values at insert time, not commit time, so every writer takes one transaction-level
advisory lock just before it inserts events; the lock is held until commit, so commits happen
in id order. SQLite has a single writer already. Callers must be inside ``transaction.atomic``
and should append once per transaction, as late as possible, to keep the lock short.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet, Subquery

from armada.core.states import EventType
from armada.models import Event, Queue
from armada.services.bulk import array_literal, insert_rows
from armada.services.event_notify import publish_on_commit

_EVENT_LOCK_KEY = 0x41524D41  # "ARMA"


@dataclass
class NewEvent:
    type: EventType
    queue: str
    job_set: str
    job_id: str
    created: datetime
    run_id: str = ""
    payload: dict[str, Any] = field(default_factory=dict)


def lock_event_log() -> None:
    """Take the event-log lock (held until the transaction ends; taking it twice is free).
    It is the last lock a transaction takes (``services.locking``); the database counters
    are written only under it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_EVENT_LOCK_KEY])


def events_append(*, events: Sequence[NewEvent]) -> int:
    """Insert ``events`` in order, in the caller's transaction; returns how many."""
    if not events:
        return 0
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events_append must run inside transaction.atomic")
    lock_event_log()
    rows = [
        {
            "created": e.created,
            "queue": e.queue,
            "job_set": e.job_set,
            "job_id": e.job_id,
            "run_id": e.run_id,
            "type": str(e.type),
            "payload": e.payload,
        }
        for e in events
    ]
    count = insert_rows(Event, rows)
    # After the commit, wake the streams watching these job sets (a no-op without Redis).
    publish_on_commit({f"{e.queue}/{e.job_set}" for e in events})
    return count


def events_append_columns(
    *,
    type_: EventType,
    created: datetime,
    queues: Sequence[str],
    job_sets: Sequence[str],
    job_ids: Sequence[str],
    run_ids: Sequence[str],
    payloads: Sequence[str],
) -> int:
    """PostgreSQL's :func:`events_append` for many events of one type and time, given column
    by column (``payloads`` as JSON text): one ``INSERT ... SELECT`` over array literals, in
    the order given, with no row object made per event (a cycle's ten thousand ``leased``
    events). The same lock, and the same wake-up after the commit. Returns how many."""
    if not job_ids:
        return 0
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events_append_columns must run inside transaction.atomic")
    columns = (queues, job_sets, job_ids, run_ids, payloads)
    if len({len(c) for c in columns}) != 1:
        raise ValueError("events_append_columns: every column must have one value per event")
    lock_event_log()
    table = connection.ops.quote_name(Event._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (created, queue, job_set, job_id, run_id, type, payload)"
            " SELECT %s, e.q, e.s, e.j, e.r, %s, e.p::jsonb"
            " FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[])"
            " WITH ORDINALITY AS e(q, s, j, r, p, n) ORDER BY e.n",
            [created, str(type_), *map(array_literal, columns)],
        )
    publish_on_commit({f"{q}/{s}" for q, s in zip(queues, job_sets, strict=True)})
    return len(job_ids)


# Payload keys as they were spelled before they took Armada's spelling (docs/armada-api-events.md).
# Events stored before the rename keep their old keys in the database; they are read with
# the new ones, so that every reader sees one spelling.
RENAMED_KEYS = {
    "cluster": "clusterId",
    "node": "nodeName",
    "failure_category": "failureCategory",
    "failure_subcategory": "failureSubcategory",
}
# ``priority`` was renamed only where it is the new priority; ``submitted`` keeps it.
RENAMED_KEYS_BY_TYPE = {
    "reprioritizing": {**RENAMED_KEYS, "priority": "newPriority"},
    "reprioritized": {**RENAMED_KEYS, "priority": "newPriority"},
}
_OLD_KEYS = frozenset(RENAMED_KEYS) | {"priority"}


def current_payload(type_: str, payload: dict[str, Any] | None) -> dict[str, Any]:
    """``payload`` with today's key names. A payload written since the rename is returned as
    it is (one set intersection); an older one is copied with its keys renamed."""
    if not payload:
        return {}
    if _OLD_KEYS.isdisjoint(payload):
        return payload
    renames = RENAMED_KEYS_BY_TYPE.get(type_, RENAMED_KEYS)
    if renames.keys().isdisjoint(payload):
        return payload
    return {renames.get(key, key): value for key, value in payload.items()}


def event_as_dict(event: Event) -> dict[str, Any]:
    """The public shape of an event, as streamed and as printed by ``armadactl watch``."""
    return {
        "id": event.id,
        "type": event.type,
        "created": event.created.isoformat(),
        "queue": event.queue,
        "jobSetId": event.job_set,
        "jobId": event.job_id,
        "runId": event.run_id,
        **current_payload(event.type, event.payload),
    }


def queue_events(queue: str) -> QuerySet[Event]:
    """The events of the queue named ``queue`` that exists now: none of an earlier queue of
    that name (their ids are at most its ``event_floor``), none when there is no such queue
    (one query: the floor is a subquery)."""
    floor = Queue.objects.filter(name=queue).values("event_floor")[:1]
    return Event.objects.filter(queue=queue, id__gt=Subquery(floor))


def events_for_job_set(
    *, queue: str, job_set: str, after: int = 0, limit: int = 1000
) -> list[Event]:
    """Events of one job set of the queue as it is now (``queue_events``) with an id greater
    than ``after``, oldest first."""
    return list(queue_events(queue).filter(job_set=job_set, id__gt=after).order_by("id")[:limit])


def events_for_job(*, job_id: str) -> Iterable[Event]:
    return Event.objects.filter(job_id=job_id).order_by("id")


def job_sets_with_events_after(after: int | None, *, limit: int) -> tuple[int, list[str] | None]:
    """What the log holds beyond ``after``: ``(newest id, keys)``, the keys being the
    ``"queue/jobSet"`` of every job set with an event whose id is greater than ``after``
    (at most ``limit``; None when there are more, or when ``after`` is None: "any job set").

    Ids become visible in order (the module docstring), so an event not yet visible will
    have an id greater than the newest returned: asking again from it misses nothing. Two
    statements in one transaction: the newest id by the primary key, then the range."""
    with transaction.atomic():
        newest = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
        if after is None:
            return newest, None
        if newest <= after:
            return after, []
        pairs = list(
            Event.objects.filter(id__gt=after, id__lte=newest)
            .order_by()
            .values_list("queue", "job_set")
            .distinct()[: limit + 1]
        )
    if len(pairs) > limit:
        return newest, None
    return newest, [f"{queue}/{job_set}" for queue, job_set in pairs]
