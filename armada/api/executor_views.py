"""API views for executors: list, read with their nodes, cordon and uncordon."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
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
        request=None,
        responses={200: ExecutorDetailSerializer, **ERRORS},
        summary="Cordon (no new leases; running jobs carry on) or uncordon an executor",
        description="Needs the global `cordon_queue` permission (there is no executor "
        "codename; this is the one that already means stopping new work).",
    )
    def post(self, request: Request, executor_id: str) -> Response:
        found = executor_services.executor_set_cordoned(
            actor=request.user,
            executor_id=executor_id,
            cordoned=self.cordoned,
            now=timezone.now(),
        )
        return Response(ExecutorDetailSerializer(found).data)
