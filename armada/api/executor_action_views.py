"""API views for the jobs on one executor: cancel or preempt them all (``armadactl cancel
executor``, ``preempt executor``). The selection, permissions and transaction are in
``armada.services.executor_actions``."""

from __future__ import annotations

from collections.abc import Callable

from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.node_views import NodeActionSerializer
from armada.api.views import ERRORS, ApiView, object_body
from armada.services.executor_actions import (
    executor_jobs_cancel,
    executor_jobs_preempt,
    require_stop_permission,
)
from armada.services.stopping import CANCEL, PREEMPT

BODY_KEYS = ("reason", "queues", "priorityClasses", "pools")


class ExecutorActionSerializer(NodeActionSerializer):
    pools = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="only runs in these pools (left out or empty: every pool)",
    )


class ExecutorActionResultSerializer(serializers.Serializer):
    jobIds = serializers.ListField(
        child=serializers.CharField(), help_text="the jobs on the executor that are being stopped"
    )


EXAMPLES = [
    OpenApiExample("every job on the executor", value={"reason": "drain"}, request_only=True),
    OpenApiExample(
        "only some queues, classes and pools",
        value={
            "queues": ["team-a"],
            "priorityClasses": ["armada-preemptible"],
            "pools": ["default"],
        },
        request_only=True,
    ),
]

DESCRIPTION = (
    "Selects every job whose active run (leased, pending or running) is on executor "
    "`executor_id`, of the given queues, priority classes and pools. Needs the global "
    "`{codename}` permission (as Armada does). A job already being stopped is answered and "
    "left as it is. 400 names the field that is wrong, 404 the executor or queue that does "
    "not exist; either way nothing changes."
)


def _body(request: Request) -> dict:
    return object_body(request, BODY_KEYS)


def _stop(action: Callable[..., list[str]], kind: str, request: Request, executor: str) -> Response:
    require_stop_permission(request.user, kind)  # 403 before a bad body
    data = _body(request)
    job_ids = action(
        actor=request.user,
        executor=executor,
        queues=data.get("queues"),
        priority_classes=data.get("priorityClasses"),
        pools=data.get("pools"),
        reason=data.get("reason", ""),
        now=timezone.now(),
    )
    return Response({"jobIds": job_ids})


class ExecutorCancelView(ApiView):
    @extend_schema(
        request=ExecutorActionSerializer,
        responses={200: ExecutorActionResultSerializer, **ERRORS},
        examples=EXAMPLES,
        summary="Cancel every job on an executor (optionally only some queues, classes, pools)",
        description=DESCRIPTION.format(codename="cancel_any_jobs"),
    )
    def post(self, request: Request, executor_id: str) -> Response:
        return _stop(executor_jobs_cancel, CANCEL, request, executor_id)


class ExecutorPreemptView(ApiView):
    @extend_schema(
        request=ExecutorActionSerializer,
        responses={200: ExecutorActionResultSerializer, **ERRORS},
        examples=EXAMPLES,
        summary="Preempt every job on an executor (optionally only some queues, classes, pools)",
        description=DESCRIPTION.format(codename="preempt_any_jobs")
        + " A preempted job ends preempted and is not retried.",
    )
    def post(self, request: Request, executor_id: str) -> Response:
        return _stop(executor_jobs_preempt, PREEMPT, request, executor_id)
