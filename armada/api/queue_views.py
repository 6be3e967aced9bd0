"""API views for queues: list (all, or picked by labels), create, read, change, delete,
cordon, and their job sets. Acting on many queues at once is in ``queue_action_views``."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
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
    with_warnings,
)
from armada.core.labels import parse_selector
from armada.core.queues import queue_warnings
from armada.services import dryrun, job_queries, queue_actions
from armada.services import queues as queue_services
from armada.services.errors import ValidationFailed


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false").lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise ValidationFailed.one(name, "must be true or false")
    return value in ("true", "1", "yes")


def _seen_by(request: Request) -> dict:
    """The serializer context of a queue shown to the caller (``QueueSerializer``)."""
    return {"actor": request.user}


LIST_PARAMETERS = [
    OpenApiParameter(
        "selector",
        OpenApiTypes.STR,
        description="only queues whose labels match: key=value, key!=value, key (present), "
        "!key (absent), joined by commas, all of which must hold",
    ),
    OpenApiParameter("onlyCordoned", OpenApiTypes.BOOL, description="only cordoned queues"),
    OpenApiParameter(
        "inverse", OpenApiTypes.BOOL, description="every queue except those the filters pick"
    ),
]


class QueueListView(ApiView):
    @extend_schema(
        parameters=LIST_PARAMETERS,
        responses={200: QueueSerializer(many=True), 400: ERRORS[400]},
        summary="List queues, all or those picked by labels",
    )
    def get(self, request: Request) -> Response:
        selector = request.query_params.get("selector")
        only_cordoned = _flag(request, "onlyCordoned")
        inverse = _flag(request, "inverse")
        if selector is None and not only_cordoned and not inverse:
            queues = queue_services.queue_list()
        else:
            queues = queue_actions.queues_filter(
                selector=None if selector is None else parse_selector(selector),
                only_cordoned=only_cordoned,
                inverse=inverse,
            )
        return Response(QueueSerializer(queues, many=True, context=_seen_by(request)).data)

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
            return with_warnings(
                Response(QueueSerializer(queue, context=_seen_by(request)).data),
                queue_warnings(request.data),
            )
        queue = queue_services.queue_create(
            actor=request.user, data=request.data, now=timezone.now()
        )
        return with_warnings(
            Response(
                QueueSerializer(queue, context=_seen_by(request)).data,
                status=status.HTTP_201_CREATED,
            ),
            queue_warnings(request.data),
        )


class QueueDetailView(ApiView):
    @extend_schema(responses={200: QueueSerializer, **ERRORS}, summary="Get a queue")
    def get(self, request: Request, name: str) -> Response:
        queue = queue_services.queue_get(name=name)
        return Response(QueueSerializer(queue, context=_seen_by(request)).data)

    @extend_schema(
        request=QueueInputSerializer,
        responses={200: QueueSerializer, **ERRORS},
        summary="Update a queue",
    )
    def patch(self, request: Request, name: str) -> Response:
        queue = queue_services.queue_update(
            actor=request.user, name=name, data=request.data, now=timezone.now()
        )
        return with_warnings(
            Response(QueueSerializer(queue, context=_seen_by(request)).data),
            queue_warnings(request.data),
        )

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
        queue_services.queue_delete(actor=request.user, name=name, now=timezone.now())
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
        return Response(QueueSerializer(queue, context=_seen_by(request)).data)


class QueueJobSetsView(ApiView):
    @extend_schema(
        responses={200: JobSetSerializer(many=True), **ERRORS},
        summary="The job sets of a queue with their job counts per state",
    )
    def get(self, request: Request, name: str) -> Response:
        sets = job_queries.job_sets_list(actor=request.user, queue=name)
        return Response(JobSetSerializer(sets, many=True).data)
