"""Armada's queue calls (``api.Submit`` and ``api.QueueService``), over the same services as
our REST API (``services.queues``, ``services.queue_actions``).

Semantics, as Armada's queue service has them (docs/armada-api-queues.md lists every
difference):
- CreateQueue of a name that is taken: ALREADY_EXISTS. UpdateQueue replaces the whole queue
  (every field of the message, as Armada's does; a field left out is reset), and of a queue
  that does not exist: NOT_FOUND.
- DeleteQueue of a queue that does not exist succeeds (Armada's delete is idempotent); of a
  queue with unfinished jobs: FAILED_PRECONDITION.
- CreateQueues and UpdateQueues do each queue in a transaction of its own and list the
  failed ones with their error (``rpc error: code = ... desc = ...``, as Armada's text
  reads); the others are done.
- GetQueues streams every queue (at most ``num`` when it is above 0) then one message with
  ``end``, reading a page at a time and holding no database connection between pages.
- GetQueue and GetQueues answer every caller let in, as Armada's do; a queue's owners and
  permissions are left empty for a caller who may neither watch it nor change queues.
- CancelOnQueue needs at least one of QUEUED, LEASED, PENDING, RUNNING in ``jobStates``
  (Armada cancels nothing without one); it and PreemptOnQueue act at once, all or nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from typing import Any

from armada_client.armada import submit_pb2
from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone
from google.protobuf import empty_pb2
from google.protobuf.message import Message

from armada.core.errors import FieldError, ValidationFailed
from armada.core.states import JobState
from armada.models import Queue
from armada.services import queue_actions
from armada.services.authz import may_read_queue_access
from armada.services.dbfaults import read_again_if_lost
from armada.services.errors import NotFound
from armada.services.queue_actions import QueueSelection
from armada.services.queues import queue_create, queue_delete, queue_get, queue_page, queue_update
from armada.wire.errors import wire_error
from armada.wire.queue_messages import armada_names, queue_body, queue_message
from armada.wire.registry import Call, stream, unary

PAGE = 500
# Armada's active job states, the ones CancelOnQueue takes.
CANCEL_STATES = {
    submit_pb2.QUEUED: JobState.QUEUED,
    submit_pb2.LEASED: JobState.LEASED,
    submit_pb2.PENDING: JobState.PENDING,
    submit_pb2.RUNNING: JobState.RUNNING,
}


def required_name(name: str) -> str:
    if not name:
        raise ValidationFailed.one("name", "is required")
    return name


def _one(name: str) -> QueueSelection:
    return QueueSelection(names=(required_name(name),))


@unary("api.Submit/CreateQueue", "api.QueueService/CreateQueue")
def create_queue(call: Call, request: submit_pb2.Queue) -> empty_pb2.Empty:
    with armada_names(request):
        queue_create(actor=call.actor, data=queue_body(request), now=call.now)
    return empty_pb2.Empty()


@unary("api.Submit/UpdateQueue", "api.QueueService/UpdateQueue")
def update_queue(call: Call, request: submit_pb2.Queue) -> empty_pb2.Empty:
    with armada_names(request):
        queue_update(actor=call.actor, name=request.name, data=queue_body(request), now=call.now)
    return empty_pb2.Empty()


def status_text(exc: Exception) -> str | None:
    """Armada's text of a failed call (``rpc error: code = AlreadyExists desc = ...``), or
    None for an error that is a bug."""
    error = wire_error(exc)
    if error is None:
        return None
    code = "".join(part.capitalize() for part in error.code.name.split("_"))
    return f"rpc error: code = {code} desc = {error.message}"


def _each(
    call: Call, queues: list[submit_pb2.Queue], one: Callable[[Call, submit_pb2.Queue], Message]
) -> list[tuple[submit_pb2.Queue, str]]:
    """``one`` for each queue, each in its own transaction; the failed ones with their text
    (a bug is not listed: it fails the whole call, as any bug does)."""
    failed = []
    for queue in queues:
        try:
            one(call, queue)
        except Exception as exc:
            text = status_text(exc)
            if text is None:
                raise
            failed.append((queue, text))
    return failed


@unary("api.Submit/CreateQueues", "api.QueueService/CreateQueues")
def create_queues(call: Call, request: submit_pb2.QueueList) -> submit_pb2.BatchQueueCreateResponse:
    failed = _each(call, list(request.queues), create_queue)
    return submit_pb2.BatchQueueCreateResponse(
        failed_queues=[submit_pb2.QueueCreateResponse(queue=q, error=e) for q, e in failed]
    )


@unary("api.Submit/UpdateQueues", "api.QueueService/UpdateQueues")
def update_queues(call: Call, request: submit_pb2.QueueList) -> submit_pb2.BatchQueueUpdateResponse:
    failed = _each(call, list(request.queues), update_queue)
    return submit_pb2.BatchQueueUpdateResponse(
        failed_queues=[submit_pb2.QueueUpdateResponse(queue=q, error=e) for q, e in failed]
    )


@unary("api.Submit/DeleteQueue", "api.QueueService/DeleteQueue")
def delete_queue(call: Call, request: submit_pb2.QueueDeleteRequest) -> empty_pb2.Empty:
    # Deleting a queue that does not exist succeeds, as in Armada.
    with suppress(NotFound):
        queue_delete(actor=call.actor, name=required_name(request.name), now=timezone.now())
    return empty_pb2.Empty()


@unary("api.Submit/GetQueue", "api.QueueService/GetQueue")
def get_queue(call: Call, request: submit_pb2.QueueGetRequest) -> submit_pb2.Queue:
    return _shown(call.actor, queue_get(name=required_name(request.name)))


def _shown(actor: Any, queue: Queue) -> submit_pb2.Queue:
    """``queue`` as ``actor`` may read it: who may act on it only if they may watch it or
    change it (``authz.may_read_queue_access``, as the REST API)."""
    return queue_message(queue, with_access=may_read_queue_access(actor, queue))


def _page(actor: Any, after: str, limit: int) -> list[submit_pb2.Queue]:
    """One page of queues as messages, on a connection handed back before returning."""
    try:
        return read_again_if_lost(
            lambda: [_shown(actor, q) for q in queue_page(after=after, limit=limit)],
            "a queue listing's read",
        )
    finally:
        connection.close()


@stream("api.Submit/GetQueues", "api.QueueService/GetQueues")
async def get_queues(
    call: Call, request: submit_pb2.StreamingQueueGetRequest
) -> AsyncIterator[submit_pb2.StreamingQueueMessage]:
    left = request.num or None  # 0: every queue
    read = sync_to_async(_page, thread_sensitive=False)
    after = ""
    while left is None or left > 0:
        size = PAGE if left is None else min(PAGE, left)
        page = await read(call.actor, after, size)
        for queue in page:
            yield submit_pb2.StreamingQueueMessage(queue=queue)
        if len(page) < size:
            break
        after = page[-1].name
        if left is not None:
            left -= len(page)
    yield submit_pb2.StreamingQueueMessage(end=submit_pb2.EndMarker())


@unary("api.QueueService/CordonQueue")
def cordon_queue(call: Call, request: submit_pb2.QueueCordonRequest) -> empty_pb2.Empty:
    queue_actions.queues_set_cordoned(
        actor=call.actor, selection=_one(request.name), cordoned=True, now=call.now
    )
    return empty_pb2.Empty()


@unary("api.QueueService/UncordonQueue")
def uncordon_queue(call: Call, request: submit_pb2.QueueUncordonRequest) -> empty_pb2.Empty:
    queue_actions.queues_set_cordoned(
        actor=call.actor, selection=_one(request.name), cordoned=False, now=call.now
    )
    return empty_pb2.Empty()


def cancel_states(job_states: list[int]) -> list[str]:
    """Our states for Armada's ``jobStates`` of CancelOnQueue: active states only, at least
    one; raises ValidationFailed naming each bad entry."""
    names = ", ".join(submit_pb2.JobState.Name(s) for s in CANCEL_STATES)
    if not job_states:
        raise ValidationFailed.one("jobStates", f"give at least one of {names}")
    errors = []
    for i, state in enumerate(job_states):
        if state not in CANCEL_STATES:
            shown = (
                submit_pb2.JobState.Name(state) if state in submit_pb2.JobState.values() else state
            )
            errors.append(
                FieldError(
                    f"jobStates[{i}]", f"{shown} is not an active state; choose from {names}"
                )
            )
    if errors:
        raise ValidationFailed(errors)
    return [CANCEL_STATES[s].value for s in dict.fromkeys(job_states)]


@unary("api.QueueService/CancelOnQueue")
def cancel_on_queue(call: Call, request: submit_pb2.QueueCancelRequest) -> empty_pb2.Empty:
    selection = _one(request.name)
    queue_actions.queues_cancel(
        actor=call.actor,
        selection=selection,
        states=cancel_states(list(request.jobStates)),
        priority_classes=list(request.priorityClasses),
        pools=list(request.pools),
        now=call.now,
    )
    return empty_pb2.Empty()


@unary("api.QueueService/PreemptOnQueue")
def preempt_on_queue(call: Call, request: submit_pb2.QueuePreemptRequest) -> empty_pb2.Empty:
    queue_actions.queues_preempt(
        actor=call.actor,
        selection=_one(request.name),
        priority_classes=list(request.priorityClasses),
        pools=list(request.pools),
        now=call.now,
    )
    return empty_pb2.Empty()
