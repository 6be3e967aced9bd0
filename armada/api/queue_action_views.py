"""API views that act on many queues at once: ``POST /api/v1/queues/{cancel,preempt,cordon,
uncordon}``. The queues are picked by name (``queues``) or by label (``selector``); every
decision is in ``services.queue_actions``.

These paths sit beside ``/api/v1/queues/{name}``, so a queue may be called ``cancel``: any
other method than POST on them is the queue's own (``QueueDetailView``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.queue_views import QueueDetailView
from armada.api.serializers import LABEL_PATTERN
from armada.api.views import ERRORS, ApiView
from armada.services import queue_actions
from armada.services.stopping import CANCELLABLE_STATES

# --- the bodies (documentation only: validation is ``queue_actions.parse_action_body``) ------


class _Selection(serializers.Serializer):
    queues = serializers.ListField(
        child=serializers.RegexField(LABEL_PATTERN, max_length=63),
        required=False,
        min_length=1,
        help_text="the queues, by name (give this or selector)",
    )
    selector = serializers.CharField(
        required=False,
        help_text="labels the queues carry: key=value, key!=value, key (present), !key "
        "(absent), joined by commas, all of which must hold (give this or queues)",
    )
    inverse = serializers.BooleanField(
        required=False, default=False, help_text="act on every queue except those picked"
    )
    dryRun = serializers.BooleanField(
        required=False, default=False, help_text="answer with what would change; change nothing"
    )


class _Filters(_Selection):
    priorityClasses = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="only jobs of these priority classes (default: any)",
    )
    pools = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="only jobs running in these pools; a queued job matches every pool "
        "(default: any)",
    )
    reason = serializers.CharField(required=False, max_length=queue_actions.MAX_REASON)


class QueuesCancelSerializer(_Filters):
    states = serializers.ListField(
        child=serializers.ChoiceField(choices=CANCELLABLE_STATES),
        required=False,
        min_length=1,
        help_text="only jobs in these states (default: every unfinished state)",
    )


class QueuesPreemptSerializer(_Filters):
    pass


class QueuesCordonSerializer(_Selection):
    pass


class QueueJobsSerializer(serializers.Serializer):
    name = serializers.CharField()
    jobIds = serializers.ListField(child=serializers.CharField())


class QueuesJobsResultSerializer(serializers.Serializer):
    dryRun = serializers.BooleanField()
    queues = QueueJobsSerializer(many=True, help_text="each queue picked, in name order")


class QueueCordonedSerializer(serializers.Serializer):
    name = serializers.CharField()
    cordoned = serializers.BooleanField()


class QueuesCordonResultSerializer(serializers.Serializer):
    dryRun = serializers.BooleanField()
    queues = QueueCordonedSerializer(many=True, help_text="each queue picked, in name order")


# --- the views --------------------------------------------------------------------------------


class _QueuesActionView(ApiView):
    # A queue named like the action keeps its own GET, PUT, PATCH and DELETE.
    action_name = ""

    def dispatch(self, request: HttpRequest, *args, **kwargs) -> HttpResponseBase:
        if request.method != "POST":
            return QueueDetailView.as_view()(request, name=self.action_name)
        return super().dispatch(request, *args, **kwargs)


def _jobs(parts: list[queue_actions.QueueJobs], dry_run: bool) -> Response:
    return Response(
        {"dryRun": dry_run, "queues": [{"name": p.name, "jobIds": p.job_ids} for p in parts]}
    )


class QueuesCancelView(_QueuesActionView):
    action_name = "cancel"

    @extend_schema(
        operation_id="queues_many_cancel",
        request=QueuesCancelSerializer,
        responses={200: QueuesJobsResultSerializer, **ERRORS},
        examples=[
            OpenApiExample(
                "every queued job of the queues labelled team=ml",
                value={"selector": "team=ml", "states": ["queued"], "reason": "draining"},
                request_only=True,
            )
        ],
        summary="Cancel the jobs of many queues at once (all or nothing)",
    )
    def post(self, request: Request) -> Response:
        args = queue_actions.parse_action_body(request.data, queue_actions.CANCEL)
        parts = queue_actions.queues_cancel(actor=request.user, now=timezone.now(), **args)
        return _jobs(parts, args["dry_run"])


class QueuesPreemptView(_QueuesActionView):
    action_name = "preempt"

    @extend_schema(
        operation_id="queues_many_preempt",
        request=QueuesPreemptSerializer,
        responses={200: QueuesJobsResultSerializer, **ERRORS},
        summary="Preempt the running jobs of many queues at once (all or nothing)",
    )
    def post(self, request: Request) -> Response:
        args = queue_actions.parse_action_body(request.data, queue_actions.PREEMPT_ACTION)
        parts = queue_actions.queues_preempt(actor=request.user, now=timezone.now(), **args)
        return _jobs(parts, args["dry_run"])


class _QueuesCordonView(_QueuesActionView):
    cordoned = True

    def _set(self, request: Request) -> Response:
        args = queue_actions.parse_action_body(request.data, queue_actions.CORDON)
        parts = queue_actions.queues_set_cordoned(
            actor=request.user, cordoned=self.cordoned, now=timezone.now(), **args
        )
        return Response(
            {
                "dryRun": args["dry_run"],
                "queues": [{"name": p.name, "cordoned": p.cordoned} for p in parts],
            }
        )


class QueuesCordonView(_QueuesCordonView):
    action_name = "cordon"
    cordoned = True

    @extend_schema(
        operation_id="queues_many_cordon",
        request=QueuesCordonSerializer,
        responses={200: QueuesCordonResultSerializer, **ERRORS},
        summary="Cordon many queues at once: they take no new jobs (all or nothing)",
    )
    def post(self, request: Request) -> Response:
        return self._set(request)


class QueuesUncordonView(_QueuesCordonView):
    action_name = "uncordon"
    cordoned = False

    @extend_schema(
        operation_id="queues_many_uncordon",
        request=QueuesCordonSerializer,
        responses={200: QueuesCordonResultSerializer, **ERRORS},
        summary="Uncordon many queues at once (all or nothing)",
    )
    def post(self, request: Request) -> Response:
        return self._set(request)
