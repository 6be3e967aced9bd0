"""Armada's ``api.Node`` service: cancel or preempt every job on one node, over the same
service as our REST API's node actions (``services.node_actions``).

- ``CancelOnNode`` (``POST /v1/node/cancel/{name}``) and ``PreemptOnNode``
  (``POST /v1/node/preempt/{name}``) select the jobs with an active run on node ``name`` of
  executor ``executor``, limited to ``queues`` and ``priorityClasses`` when given (empty: all).
- Permissions are the service's: the verb (``cancel`` or ``preempt``) on every selected job's
  queue, which the global ``cancel_any_jobs`` or ``preempt_any_jobs`` grants (Armada asks for
  the global permission alone; a queue's owner may act on their own jobs here).
- ``name`` is required (INVALID_ARGUMENT naming it). Armada requires ``executor`` too; here a
  node's name is unique only within its executor, so an empty ``executor`` is taken to be the
  one executor that has a node of that name (or active runs on one), and is INVALID_ARGUMENT
  naming ``executor`` when there is none or more than one. An unknown executor or node is
  NOT_FOUND; a bad queue or priority class is INVALID_ARGUMENT naming it (``queues[1]``).
- The answer is Empty, as Armada's; which jobs were stopped shows in their events (and in our
  REST API's answer, which lists them).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import empty_pb2

from armada.models import Node, Run
from armada.services.errors import ValidationFailed
from armada.services.node_actions import node_jobs_cancel, node_jobs_preempt
from armada.services.stopping import ACTIVE
from armada.wire.node_executor_proto import NODE_SERVICE
from armada.wire.registry import Call, unary


def required(value: str, field: str) -> str:
    """``value``, or INVALID_ARGUMENT naming ``field`` when it is empty."""
    if not value:
        raise ValidationFailed.one(field, "is required")
    return value


def executor_of_node(node: str, executor: str) -> str:
    """``executor`` if given; else the one executor with a node named ``node`` (or active runs
    on a node of that name: a node dropped from its executor's report keeps its jobs)."""
    if executor:
        return executor
    candidates = set(Node.objects.filter(name=node).values_list("executor_id", flat=True))
    candidates |= set(
        Run.objects.filter(node=node, state__in=ACTIVE).values_list("executor", flat=True)
    )
    if len(candidates) == 1:
        return candidates.pop()
    if not candidates:
        raise ValidationFailed.one("executor", f"is required: no executor has a node {node!r}")
    raise ValidationFailed.one(
        "executor",
        f"is required: node {node!r} is on executors {', '.join(sorted(candidates))}",
    )


def _stop(service: Any, call: Call, request: Any) -> empty_pb2.Empty:
    node = required(request.name, "name")
    service(
        actor=call.actor,
        executor=executor_of_node(node, request.executor),
        node=node,
        queues=list(request.queues),
        priority_classes=list(request.priorityClasses),
        now=call.now,
    )
    return empty_pb2.Empty()


@unary(f"{NODE_SERVICE}/CancelOnNode")
def cancel_on_node(call: Call, request: Any) -> empty_pb2.Empty:
    return _stop(node_jobs_cancel, call, request)


@unary(f"{NODE_SERVICE}/PreemptOnNode")
def preempt_on_node(call: Call, request: Any) -> empty_pb2.Empty:
    return _stop(node_jobs_preempt, call, request)
