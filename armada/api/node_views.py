"""API views for the jobs on one node: cancel or preempt them all (``armadactl cancel on-node``,
``preempt on-node``). The selection, permissions and transaction are in
``armada.services.node_actions``."""

from __future__ import annotations

from collections.abc import Callable

from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.views import ERRORS, ApiView, object_body
from armada.services.executors_admin import require_executor_settings
from armada.services.node_actions import node_jobs_cancel, node_jobs_preempt
from armada.services.node_cordon import nodes_set_cordoned

BODY_KEYS = ("reason", "queues", "priorityClasses")


class NodeActionSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, max_length=255)
    queues = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="only jobs of these queues (left out or empty: every queue)",
    )
    priorityClasses = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="only jobs of these priority classes (left out or empty: every class)",
    )


class NodeActionResultSerializer(serializers.Serializer):
    jobIds = serializers.ListField(
        child=serializers.CharField(), help_text="the jobs on the node that are being stopped"
    )


EXAMPLES = [
    OpenApiExample(
        "every job on the node", value={"reason": "node maintenance"}, request_only=True
    ),
    OpenApiExample(
        "only some queues and classes",
        value={
            "reason": "draining",
            "queues": ["team-a"],
            "priorityClasses": ["armada-preemptible"],
        },
        request_only=True,
    ),
]

DESCRIPTION = (
    "Selects every job whose active run (leased, pending or running) is on node `node` of "
    "executor `executor`, of the given queues and priority classes. Needs the `{verb}` verb "
    "on each named queue and on the queue of every selected job (or the global "
    "`{codename}` permission); all or nothing: one refused queue refuses the request and "
    "nothing changes. A job already being stopped is answered and left as it is. 404 names "
    "the executor, node or queue that does not exist."
)


def _body(request: Request) -> dict:
    return object_body(request, BODY_KEYS)


def _stop_on_node(
    action: Callable[..., list[str]], request: Request, executor: str, node: str
) -> Response:
    """Answers a cancel or preempt on the node: ``action`` (the service) with the body's
    options, the ids of the jobs it stops."""
    data = _body(request)
    job_ids = action(
        actor=request.user,
        executor=executor,
        node=node,
        queues=data.get("queues"),
        priority_classes=data.get("priorityClasses"),
        reason=data.get("reason", ""),
        now=timezone.now(),
    )
    return Response({"jobIds": job_ids})


class NodeCancelView(ApiView):
    @extend_schema(
        request=NodeActionSerializer,
        responses={200: NodeActionResultSerializer, **ERRORS},
        examples=EXAMPLES,
        summary="Cancel every job on a node (optionally only some queues and priority classes)",
        description=DESCRIPTION.format(verb="cancel", codename="cancel_any_jobs"),
    )
    def post(self, request: Request, executor: str, node: str) -> Response:
        return _stop_on_node(node_jobs_cancel, request, executor, node)


class NodePreemptView(ApiView):
    @extend_schema(
        request=NodeActionSerializer,
        responses={200: NodeActionResultSerializer, **ERRORS},
        examples=EXAMPLES,
        summary="Preempt every job on a node (optionally only some queues and priority classes)",
        description=DESCRIPTION.format(verb="preempt", codename="preempt_any_jobs")
        + " A preempted job ends preempted and is not retried.",
    )
    def post(self, request: Request, executor: str, node: str) -> Response:
        return _stop_on_node(node_jobs_preempt, request, executor, node)


class NodeCordonResultSerializer(serializers.Serializer):
    nodes = serializers.ListField(
        child=serializers.CharField(), help_text="the node, as executor/node"
    )
    cordoned = serializers.BooleanField()


class NodeCordonView(ApiView):
    cordoned = True

    @extend_schema(
        request=NodeActionSerializer,
        responses={200: NodeCordonResultSerializer, **ERRORS},
        summary="Cordon (no new leases; its jobs carry on) or uncordon one node",
        description="Needs the global `update_executor_settings` permission. A cordon may "
        'give `{"reason": "..."}` (at most 255 characters); an uncordon takes no body. The '
        "scheduler counts the node unschedulable until it is uncordoned, whatever its "
        "executor reports.",
    )
    def post(self, request: Request, executor: str, node: str) -> Response:
        from armada.api.executor_views import cordon_body

        require_executor_settings(request.user)  # 403 before a bad body
        nodes = nodes_set_cordoned(
            actor=request.user,
            executor=executor,
            node=node,
            cordoned=self.cordoned,
            reason=cordon_body(request.data, cordoned=self.cordoned),
        )
        return Response({"nodes": nodes, "cordoned": self.cordoned})
