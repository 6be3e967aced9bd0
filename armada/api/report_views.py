"""API views for scheduling reports: one queue's, and the overall one (read by
``armadactl get queue-report`` and ``get scheduling-report``)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.serializers import RoundSummarySerializer
from armada.api.views import ERRORS, ApiView
from armada.services import scheduling_reports


class PendingReasonCountSerializer(serializers.Serializer):
    reason = serializers.CharField()
    jobs = serializers.IntegerField(help_text="queued jobs waiting for this reason")
    since = serializers.DateTimeField(help_text="when the oldest of these reasons was recorded")
    jobIds = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="from verbosity 1: the ids of the oldest of these jobs",
    )


class QueueShareReportSerializer(serializers.Serializer):
    queue = serializers.CharField()
    priorityFactor = serializers.FloatField()
    cordoned = serializers.BooleanField()
    active = serializers.BooleanField(help_text="has jobs queued or running")
    fairShare = serializers.FloatField(help_text="weight over the active queues' weights")
    currentShare = serializers.FloatField(help_text="dominant share of the pool in use now")
    allocated = serializers.DictField(
        child=serializers.CharField(), help_text="requests of the active runs, per resource"
    )
    jobsByState = serializers.DictField(child=serializers.IntegerField())


class QueueReportSerializer(QueueShareReportSerializer):
    pool = serializers.CharField(allow_null=True, help_text="null: every pool")
    pendingReasons = PendingReasonCountSerializer(many=True)
    queuedWithoutReason = serializers.IntegerField(
        help_text="queued jobs no scheduling round has recorded a reason for yet"
    )
    latestRounds = RoundSummarySerializer(many=True)


class SchedulingReportSerializer(serializers.Serializer):
    pool = serializers.CharField(allow_null=True, help_text="null: every pool")
    latestRounds = RoundSummarySerializer(many=True)
    queues = QueueShareReportSerializer(many=True)
    pendingReasons = PendingReasonCountSerializer(many=True)


REPORT_PARAMETERS = [
    OpenApiParameter("pool", str, description="a configured pool; default: every pool"),
    OpenApiParameter(
        "verbosity",
        int,
        description="0 to 3 (Armada's -v): from 1, example job ids per reason and more rounds",
    ),
]


class QueueReportView(ApiView):
    @extend_schema(
        parameters=REPORT_PARAMETERS,
        responses={200: QueueReportSerializer, **ERRORS},
        summary="A queue's scheduling report: shares, jobs per state, why its jobs wait",
        description="Needs the `watch` verb on the queue.",
    )
    def get(self, request: Request, name: str) -> Response:
        report = scheduling_reports.queue_report(
            actor=request.user,
            name=name,
            now=timezone.now(),
            pool=request.query_params.get("pool"),
            verbosity=request.query_params.get("verbosity"),
        )
        return Response(QueueReportSerializer(report).data)


class SchedulingReportView(ApiView):
    @extend_schema(
        parameters=REPORT_PARAMETERS,
        responses={200: SchedulingReportSerializer, **ERRORS},
        summary="The scheduling report: latest rounds, queue shares, why jobs wait",
        description="Shows only the queues the caller may watch.",
    )
    def get(self, request: Request) -> Response:
        report = scheduling_reports.scheduling_report(
            actor=request.user,
            now=timezone.now(),
            pool=request.query_params.get("pool"),
            verbosity=request.query_params.get("verbosity"),
        )
        return Response(SchedulingReportSerializer(report).data)
