"""API views for executors: list, read with their nodes, cordon (with an optional reason)
and uncordon."""

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


class CordonExecutorSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False,
        max_length=executor_services.MAX_CORDON_REASON,
        help_text="why (cordon only); kept on the executor until it is uncordoned",
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
