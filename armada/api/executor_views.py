"""API views for executors: list, read with their nodes, delete (retire), cordon (with an
optional reason) and uncordon."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.serializers import (
    ExecutorDetailSerializer,
    ExecutorSerializer,
)
from armada.api.views import (
    ERRORS,
    ApiView,
)
from armada.services import executors_admin as executor_services
from armada.services.errors import FieldError, ValidationFailed
from armada.services.executor_actions import executor_delete


class CordonExecutorSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False,
        max_length=executor_services.MAX_CORDON_REASON,
        help_text="why (cordon only); kept on the executor until it is uncordoned",
    )


class ExecutorDeletedSerializer(serializers.Serializer):
    id = serializers.CharField()
    credentialsRevoked = serializers.IntegerField(help_text="credentials revoked now")
    nodesRemoved = serializers.IntegerField()
    activeRuns = serializers.IntegerField(
        help_text="runs still active on it, to be ended by lease expiry"
    )


def cordon_body(data: Any, *, cordoned: bool) -> str:
    """The reason in a cordon's body (none, or ``{"reason"}``); an uncordon takes no body
    fields. Unknown fields are refused by name."""
    if data in (None, "", {}):
        return ""
    if not isinstance(data, dict):
        raise ValidationFailed.one("", "the body must be a JSON object")
    allowed = {"reason"} if cordoned else set()
    unknown = sorted(set(data) - allowed)
    if unknown:
        takes = "takes only reason" if cordoned else "takes no fields"
        raise ValidationFailed([FieldError(k, f"unknown field; the body {takes}") for k in unknown])
    return data.get("reason", "")


class ExecutorListView(ApiView):
    @extend_schema(responses={200: ExecutorSerializer(many=True)}, summary="List executors")
    def get(self, request: Request) -> Response:
        rows = executor_services.executor_list(now=timezone.now())
        return Response(ExecutorSerializer(rows, many=True).data)


class ExecutorDetailView(ApiView):
    @extend_schema(
        responses={200: ExecutorDetailSerializer, **ERRORS},
        summary="An executor with its nodes (labels, allocatable, unschedulable)",
    )
    def get(self, request: Request, executor_id: str) -> Response:
        found = executor_services.executor_get(executor_id=executor_id, now=timezone.now())
        return Response(ExecutorDetailSerializer(found).data)

    @extend_schema(
        request=None,
        responses={200: ExecutorDeletedSerializer, **ERRORS},
        summary="Delete (retire) an executor",
        description="Needs the global `update_executor_settings` permission (Armada's). In "
        "one transaction the executor's credentials are revoked and its record and nodes are "
        "removed: it leases nothing more and leaves the listings. Its runs still active are "
        "ended by lease expiry at the next scheduling cycle (lease_expired, decided by the "
        "job's retry policy); cancel or preempt them first to end them otherwise. 404 when "
        "there is no such executor.",
    )
    def delete(self, request: Request, executor_id: str) -> Response:
        result = executor_delete(actor=request.user, executor_id=executor_id, now=timezone.now())
        return Response(result)


class ExecutorCordonView(ApiView):
    cordoned = True

    @extend_schema(
        request=CordonExecutorSerializer,
        responses={200: ExecutorDetailSerializer, **ERRORS},
        summary="Cordon (no new leases; running jobs carry on) or uncordon an executor",
        description="Needs the global `update_executor_settings` permission (Armada's). "
        'A cordon may give `{"reason": "..."}` (at most 255 characters), shown as the '
        "executor's `cordonReason` until it is uncordoned; an uncordon takes no body.",
        examples=[
            OpenApiExample(
                "cordon with a reason", value={"reason": "kernel upgrade"}, request_only=True
            )
        ],
    )
    def post(self, request: Request, executor_id: str) -> Response:
        executor_services.require_executor_settings(request.user)  # 403 before a bad body
        found = executor_services.executor_set_cordoned(
            actor=request.user,
            executor_id=executor_id,
            cordoned=self.cordoned,
            reason=cordon_body(request.data, cordoned=self.cordoned),
            now=timezone.now(),
        )
        return Response(ExecutorDetailSerializer(found).data)
