"""API views for queues: list, create, read, change, delete, cordon, and their job sets."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.serializers import (
    JobSetSerializer,
    QueueInputSerializer,
    QueueSerializer,
)
from armada.api.views import (
    CONFLICT,
    DRY_RUN,
    ERRORS,
    EXAMPLES,
    ApiView,
    dry_run,
)
from armada.services import dryrun, job_queries
from armada.services import queues as queue_services


class QueueListView(ApiView):
    @extend_schema(responses={200: QueueSerializer(many=True)}, summary="List queues")
    def get(self, request: Request) -> Response:
        return Response(QueueSerializer(queue_services.queue_list(), many=True).data)

    @extend_schema(
        request=QueueInputSerializer,
        parameters=[DRY_RUN],
        responses={201: QueueSerializer, 200: QueueSerializer, 409: CONFLICT, **ERRORS},
        examples=EXAMPLES["queue"],
        summary="Create a queue (or only check it, with dryRun=true)",
    )
    def post(self, request: Request) -> Response:
        if dry_run(request):
            queue = dryrun.queue_create_check(
                actor=request.user, data=request.data, now=timezone.now()
            )
            return Response(QueueSerializer(queue).data)
        queue = queue_services.queue_create(
            actor=request.user, data=request.data, now=timezone.now()
        )
        return Response(QueueSerializer(queue).data, status=status.HTTP_201_CREATED)


class QueueDetailView(ApiView):
    @extend_schema(responses={200: QueueSerializer, **ERRORS}, summary="Get a queue")
    def get(self, request: Request, name: str) -> Response:
        return Response(QueueSerializer(queue_services.queue_get(name=name)).data)

    @extend_schema(
        request=QueueInputSerializer,
        responses={200: QueueSerializer, **ERRORS},
        summary="Update a queue",
    )
    def patch(self, request: Request, name: str) -> Response:
        queue = queue_services.queue_update(
            actor=request.user, name=name, data=request.data, now=timezone.now()
        )
        return Response(QueueSerializer(queue).data)

    put = patch

    @extend_schema(
        responses={
            204: None,
            409: OpenApiResponse(description="queue has unfinished jobs"),
            **ERRORS,
        },
        summary="Delete a queue",
    )
    def delete(self, request: Request, name: str) -> Response:
        queue_services.queue_delete(actor=request.user, name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)


class QueueCordonView(ApiView):
    cordoned = True

    @extend_schema(
        request=None,
        responses={200: QueueSerializer, **ERRORS},
        summary="Cordon or uncordon a queue",
    )
    def post(self, request: Request, name: str) -> Response:
        queue = queue_services.queue_set_cordoned(
            actor=request.user, name=name, cordoned=self.cordoned, now=timezone.now()
        )
        return Response(QueueSerializer(queue).data)


class QueueJobSetsView(ApiView):
    @extend_schema(
        responses={200: JobSetSerializer(many=True), **ERRORS},
        summary="The job sets of a queue with their job counts per state",
    )
    def get(self, request: Request, name: str) -> Response:
        sets = job_queries.job_sets_list(actor=request.user, queue=name)
        return Response(JobSetSerializer(sets, many=True).data)
