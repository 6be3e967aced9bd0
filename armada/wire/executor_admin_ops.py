"""Armada's ``api.Executor`` service (operators' calls on an executor), over the same services
as our REST API's executor actions. Not to be confused with the executor API that clusters
call (``wire.executor_ops``).

- ``UpsertExecutorSettings`` (``PUT /v1/executor_settings/{name}``): cordon (``cordoned:
  true``; no new leases on the executor, its running jobs stay) or uncordon it
  (``services.executors_admin.executor_set_cordoned``). As in Armada a cordon needs a
  ``cordonReason`` (INVALID_ARGUMENT naming it when empty); an uncordon takes none (Armada
  would keep one, unused). The reason is at most 255 characters.
- ``DeleteExecutorSettings`` (``DELETE /v1/executor_settings/{name}``): Armada deletes the
  executor's settings row, and an executor without settings is not cordoned; we keep the
  settings on the executor's record, so deleting them is an uncordon (the reason cleared).
- ``CancelOnExecutor`` / ``PreemptOnExecutor`` (``POST /v1/executor/cancel|preempt/{name}``):
  every job with an active run on the executor, limited to ``queues``, ``priorityClasses`` and
  ``pools`` when given (``services.executor_actions``).
- ``DeleteExecutor`` (``DELETE /v1/executors/{name}``): the executor is retired
  (``executor_delete``: its credentials revoked, its nodes and record removed; its active runs
  then end by lease expiry).

Permissions are the services' (and Armada's): ``update_executor_settings`` for the settings and
the delete, ``cancel_any_jobs`` / ``preempt_any_jobs`` for the stops. ``name`` is required
(INVALID_ARGUMENT naming it); an executor that does not exist is NOT_FOUND, where Armada,
which only publishes the request, answers success (settings for an executor that never
registered are kept there; here they would be a typo, refused).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import empty_pb2

from armada.services.errors import ValidationFailed
from armada.services.executor_actions import (
    executor_delete,
    executor_jobs_cancel,
    executor_jobs_preempt,
)
from armada.services.executors_admin import (
    MAX_CORDON_REASON,
    executor_set_cordoned,
    require_executor_settings,
)
from armada.wire.node_executor_proto import EXECUTOR_SERVICE
from armada.wire.node_ops import required
from armada.wire.registry import Call, unary


def _cordon_reason(cordoned: bool, reason: str) -> str:
    if len(reason) > MAX_CORDON_REASON:
        raise ValidationFailed.one(
            "cordonReason", f"must be text of at most {MAX_CORDON_REASON} characters"
        )
    if cordoned and not reason.strip():
        raise ValidationFailed.one("cordonReason", "is required to cordon an executor")
    if reason and not cordoned:
        raise ValidationFailed.one("cordonReason", "an uncordon takes no reason")
    return reason


@unary(f"{EXECUTOR_SERVICE}/UpsertExecutorSettings")
def upsert_executor_settings(call: Call, request: Any) -> empty_pb2.Empty:
    name = required(request.name, "name")
    require_executor_settings(call.actor)  # refused callers learn nothing of the body
    executor_set_cordoned(
        actor=call.actor,
        executor_id=name,
        cordoned=request.cordoned,
        reason=_cordon_reason(request.cordoned, request.cordonReason),
        now=call.now,
    )
    return empty_pb2.Empty()


@unary(f"{EXECUTOR_SERVICE}/DeleteExecutorSettings")
def delete_executor_settings(call: Call, request: Any) -> empty_pb2.Empty:
    """No settings means not cordoned: the executor is uncordoned (see the module)."""
    executor_set_cordoned(
        actor=call.actor, executor_id=required(request.name, "name"), cordoned=False, now=call.now
    )
    return empty_pb2.Empty()


def _stop(service: Any, call: Call, request: Any) -> empty_pb2.Empty:
    service(
        actor=call.actor,
        executor=required(request.name, "name"),
        queues=list(request.queues),
        priority_classes=list(request.priorityClasses),
        pools=list(request.pools),
        now=call.now,
    )
    return empty_pb2.Empty()


@unary(f"{EXECUTOR_SERVICE}/CancelOnExecutor")
def cancel_on_executor(call: Call, request: Any) -> empty_pb2.Empty:
    return _stop(executor_jobs_cancel, call, request)


@unary(f"{EXECUTOR_SERVICE}/PreemptOnExecutor")
def preempt_on_executor(call: Call, request: Any) -> empty_pb2.Empty:
    return _stop(executor_jobs_preempt, call, request)


@unary(f"{EXECUTOR_SERVICE}/DeleteExecutor")
def delete_executor(call: Call, request: Any) -> empty_pb2.Empty:
    executor_delete(actor=call.actor, executor_id=required(request.name, "name"), now=call.now)
    return empty_pb2.Empty()
