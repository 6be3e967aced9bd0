"""API views for retry policies: list, create (or check), read, replace, delete. A policy
just saved or checked carries the warnings of its parse (``warnings``)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.serializers import (
    RetryPolicySavedSerializer,
    RetryPolicySerializer,
)
from armada.api.serializers.backtest import BacktestRequestSerializer, BacktestSerializer
from armada.api.views import (
    CONFLICT,
    DRY_RUN,
    ERRORS,
    EXAMPLES,
    ApiView,
    dry_run,
)
from armada.services import dryrun
from armada.services import policies as policy_services
from armada.services.backtest import backtest, backtest_range


class RetryPolicyListView(ApiView):
    @extend_schema(responses={200: RetryPolicySerializer(many=True)}, summary="List retry policies")
    def get(self, request: Request) -> Response:
        return Response(
            [policy_services.policy_as_document(p) for p in policy_services.policy_list()]
        )

    @extend_schema(
        request=RetryPolicySerializer,
        parameters=[DRY_RUN],
        responses={
            201: RetryPolicySavedSerializer,
            200: RetryPolicySavedSerializer,
            409: CONFLICT,
            **ERRORS,
        },
        examples=EXAMPLES["policy"],
        summary="Create a retry policy, YAML or JSON body (or only check it, with dryRun=true)",
    )
    def post(self, request: Request) -> Response:
        if dry_run(request):
            row = dryrun.policy_create_check(
                actor=request.user, data=request.data, now=timezone.now()
            )
            # Checked above: the parse only gives its warnings now, to be shown.
            row.warnings = policy_services.policy_validate(data=request.data).warnings
            return Response(policy_services.policy_as_document(row))
        row = policy_services.policy_create(
            actor=request.user, data=request.data, now=timezone.now()
        )
        return Response(policy_services.policy_as_document(row), status=status.HTTP_201_CREATED)


class RetryPolicyDetailView(ApiView):
    @extend_schema(responses={200: RetryPolicySerializer, **ERRORS}, summary="Get a retry policy")
    def get(self, request: Request, name: str) -> Response:
        return Response(policy_services.policy_as_document(policy_services.policy_get(name=name)))

    @extend_schema(
        request=RetryPolicySerializer,
        responses={200: RetryPolicySavedSerializer, **ERRORS},
        summary="Replace a retry policy (its version grows by one)",
    )
    def put(self, request: Request, name: str) -> Response:
        row = policy_services.policy_update(
            actor=request.user, name=name, data=request.data, now=timezone.now()
        )
        return Response(policy_services.policy_as_document(row))

    @extend_schema(
        responses={
            204: None,
            409: OpenApiResponse(description="queues still name the policy"),
            **ERRORS,
        },
        summary="Delete a retry policy",
    )
    def delete(self, request: Request, name: str) -> Response:
        policy_services.policy_delete(actor=request.user, name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RetryPolicyBacktestView(ApiView):
    @extend_schema(
        request=BacktestRequestSerializer,
        responses={200: BacktestSerializer, **ERRORS},
        summary="Backtest a retry policy: replay the recorded failures under a draft (or a "
        "stored policy at a version) and compare with what was decided; writes nothing",
    )
    def post(self, request: Request) -> Response:
        body = BacktestRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        now = timezone.now()
        since, until = backtest_range(since=data["since"], until=data.get("until"), now=now)
        return Response(
            backtest(
                actor=request.user,
                draft=data.get("draft"),
                policy=data.get("policy", ""),
                version=data.get("version"),
                since=since,
                until=until,
                queues=data.get("queues", []),
                job_sets=data.get("jobSets", []),
                now=now,
                sample_size=data["sampleSize"],
            )
        )
