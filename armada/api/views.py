"""REST views: thin, one per operation; every decision is in ``armada.services``."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from armada.api.bodies import check_body_size, check_path_values, check_storable
from armada.api.parsers import SafeJSONParser, YAMLParser
from armada.api.serializers import (
    CancelSerializer,
    JobFileSerializer,
    JobSerializer,
    PreemptResultSerializer,
    PreemptSerializer,
    QueueInputSerializer,
    QueueSerializer,
    ReprioritizeResultSerializer,
    ReprioritizeSerializer,
    RetryPolicySerializer,
    RunLogSerializer,
    SubmitResultSerializer,
)
from armada.services import jobs as job_selectors
from armada.services import policies as policy_services
from armada.services import queues as queue_services
from armada.services.errors import ValidationFailed
from armada.services.reprioritize import jobs_reprioritize
from armada.services.stopping import job_preempt, jobs_cancel
from armada.services.submit import job_submit

_RESOURCES = {"cpu": "100m", "memory": "64Mi"}
_EXAMPLES = {
    "queue": [
        OpenApiExample(
            "a queue",
            value={"name": "team-a", "priorityFactor": 2, "labels": {"team": "a"}},
            request_only=True,
        )
    ],
    "job-file": [
        OpenApiExample(
            "a job file",
            value={
                "queue": "demo",
                "jobSetId": "nightly",
                "jobs": [
                    {
                        "priority": 1,
                        "podSpec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox:latest",
                                    "command": ["sh", "-c", "echo hello"],
                                    "resources": {"requests": _RESOURCES, "limits": _RESOURCES},
                                }
                            ]
                        },
                    }
                ],
            },
            request_only=True,
        )
    ],
    "policy": [
        OpenApiExample(
            "a retry policy",
            value={
                "apiVersion": "armadaproject.io/v1beta1",
                "kind": "RetryPolicy",
                "name": "oom-retries",
                "retryLimit": 3,
                "defaultAction": "Fail",
                "rules": [
                    {
                        "action": "Retry",
                        "onCategory": "oom",
                        "mutate": {"resources": {"memory": {"factor": 1.5}}},
                    }
                ],
            },
            request_only=True,
        )
    ],
    "reprioritize": [
        OpenApiExample(
            "a whole job set",
            value={"queue": "demo", "jobSetId": "set-1", "priority": 5},
            request_only=True,
        )
    ],
    "cancel": [
        OpenApiExample(
            "a whole job set",
            value={"queue": "demo", "jobSetId": "set-1", "reason": "not needed"},
            request_only=True,
        )
    ],
}

_ERRORS = {
    400: OpenApiResponse(description="invalid input; `errors` names each field"),
    403: OpenApiResponse(description="permission denied; the message names the permission"),
    404: OpenApiResponse(description="not found"),
    413: OpenApiResponse(description="the body is larger than the server accepts"),
}


class ApiView(APIView):
    # The base of every API view: the checks of ``armada.api.bodies`` run before the view.
    # Order: the body size (413, before anything is read), then authentication and
    # permissions, then path parameters and the parsed body (400 naming the field).
    # (Comments, not a docstring: the schema would show a docstring on every operation.)

    parser_classes = [SafeJSONParser, YAMLParser]

    def initial(self, request: Request, *args, **kwargs) -> None:
        check_body_size(request)
        super().initial(request, *args, **kwargs)
        check_path_values(kwargs)
        check_storable(request.data)


def _reason(data: dict) -> str:
    reason = data.get("reason", "")
    if not isinstance(reason, str) or len(reason) > 255:
        raise ValidationFailed.one("reason", "must be text of at most 255 characters")
    return reason


def _job_set_selection(request: Request) -> tuple[dict, list[str] | None]:
    """The body of a job-set action: ``queue``, ``jobSetId`` and optional ``jobIds``."""
    data = request.data if isinstance(request.data, dict) else {}
    job_ids = data.get("jobIds")
    if job_ids is not None and (
        not isinstance(job_ids, list) or not all(isinstance(j, str) for j in job_ids)
    ):
        raise ValidationFailed.one("jobIds", "must be a list of job ids")
    for name in ("queue", "jobSetId"):
        if not isinstance(data.get(name), str) or not data.get(name):
            raise ValidationFailed.one(name, "is required")
    return data, job_ids


class QueueListView(ApiView):
    @extend_schema(responses={200: QueueSerializer(many=True)}, summary="List queues")
    def get(self, request: Request) -> Response:
        return Response(QueueSerializer(queue_services.queue_list(), many=True).data)

    @extend_schema(
        request=QueueInputSerializer,
        responses={201: QueueSerializer, 409: OpenApiResponse(description="name taken"), **_ERRORS},
        examples=_EXAMPLES["queue"],
        summary="Create a queue",
    )
    def post(self, request: Request) -> Response:
        queue = queue_services.queue_create(
            actor=request.user, data=request.data, now=timezone.now()
        )
        return Response(QueueSerializer(queue).data, status=status.HTTP_201_CREATED)


class QueueDetailView(ApiView):
    @extend_schema(responses={200: QueueSerializer, **_ERRORS}, summary="Get a queue")
    def get(self, request: Request, name: str) -> Response:
        return Response(QueueSerializer(queue_services.queue_get(name=name)).data)

    @extend_schema(
        request=QueueInputSerializer,
        responses={200: QueueSerializer, **_ERRORS},
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
            **_ERRORS,
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
        responses={200: QueueSerializer, **_ERRORS},
        summary="Cordon or uncordon a queue",
    )
    def post(self, request: Request, name: str) -> Response:
        queue = queue_services.queue_set_cordoned(
            actor=request.user, name=name, cordoned=self.cordoned, now=timezone.now()
        )
        return Response(QueueSerializer(queue).data)


class JobSubmitView(ApiView):
    @extend_schema(
        request=JobFileSerializer,
        responses={201: SubmitResultSerializer, **_ERRORS},
        examples=_EXAMPLES["job-file"],
        summary="Submit a job file (all jobs or none)",
    )
    def post(self, request: Request) -> Response:
        ids = job_submit(actor=request.user, data=request.data, now=timezone.now())
        data = request.data
        return Response(
            {"queue": data["queue"], "jobSetId": data["jobSetId"], "jobIds": ids},
            status=status.HTTP_201_CREATED,
        )


class JobDetailView(ApiView):
    @extend_schema(responses={200: JobSerializer, **_ERRORS}, summary="Get a job with its runs")
    def get(self, request: Request, job_id: str) -> Response:
        job = job_selectors.job_get(actor=request.user, job_id=job_id)
        return Response(JobSerializer(job).data)


class RunLogView(ApiView):
    @extend_schema(responses={200: RunLogSerializer, **_ERRORS}, summary="The log of a run")
    def get(self, request: Request, run_id: str) -> Response:
        run = job_selectors.run_get(actor=request.user, run_id=run_id)
        entry = job_selectors.run_log_text(run=run)
        return Response(
            {
                "runId": run.id,
                "jobId": run.job_id,
                "log": entry.text if entry else "",
                "truncated": entry.truncated if entry else False,
                "updatedAt": entry.updated_at if entry else None,
            }
        )


class RetryPolicyListView(ApiView):
    @extend_schema(responses={200: RetryPolicySerializer(many=True)}, summary="List retry policies")
    def get(self, request: Request) -> Response:
        return Response(
            [policy_services.policy_as_document(p) for p in policy_services.policy_list()]
        )

    @extend_schema(
        request=RetryPolicySerializer,
        responses={
            201: RetryPolicySerializer,
            409: OpenApiResponse(description="name taken"),
            **_ERRORS,
        },
        examples=_EXAMPLES["policy"],
        summary="Create a retry policy (YAML or JSON body)",
    )
    def post(self, request: Request) -> Response:
        row = policy_services.policy_create(
            actor=request.user, data=request.data, now=timezone.now()
        )
        return Response(policy_services.policy_as_document(row), status=status.HTTP_201_CREATED)


class RetryPolicyDetailView(ApiView):
    @extend_schema(responses={200: RetryPolicySerializer, **_ERRORS}, summary="Get a retry policy")
    def get(self, request: Request, name: str) -> Response:
        return Response(policy_services.policy_as_document(policy_services.policy_get(name=name)))

    @extend_schema(
        request=RetryPolicySerializer,
        responses={200: RetryPolicySerializer, **_ERRORS},
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
            **_ERRORS,
        },
        summary="Delete a retry policy",
    )
    def delete(self, request: Request, name: str) -> Response:
        policy_services.policy_delete(actor=request.user, name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)


class JobPreemptView(ApiView):
    @extend_schema(
        request=PreemptSerializer,
        responses={
            202: PreemptResultSerializer,
            409: OpenApiResponse(description="the job is not running"),
            **_ERRORS,
        },
        summary="Preempt a running job (it ends preempted and is not retried)",
    )
    def post(self, request: Request, job_id: str) -> Response:
        reason = _reason(request.data if isinstance(request.data, dict) else {})
        runs = job_preempt(actor=request.user, job_id=job_id, reason=reason, now=timezone.now())
        return Response({"jobId": job_id, "runIds": runs}, status=status.HTTP_202_ACCEPTED)


class JobReprioritizeView(ApiView):
    @extend_schema(
        request=ReprioritizeSerializer,
        responses={200: ReprioritizeResultSerializer, **_ERRORS},
        examples=_EXAMPLES["reprioritize"],
        summary="Change the priority of jobs of a job set (all of them when jobIds is left out)",
    )
    def post(self, request: Request) -> Response:
        data, job_ids = _job_set_selection(request)
        changed = jobs_reprioritize(
            actor=request.user,
            queue=data["queue"],
            job_set=data["jobSetId"],
            priority=data.get("priority"),
            job_ids=job_ids,
            now=timezone.now(),
        )
        return Response({"jobIds": changed})


class JobCancelView(ApiView):
    @extend_schema(
        request=CancelSerializer,
        responses={200: ReprioritizeResultSerializer, **_ERRORS},
        examples=_EXAMPLES["cancel"],
        summary="Cancel jobs of a job set (all its unfinished jobs when jobIds is left out)",
    )
    def post(self, request: Request) -> Response:
        data, job_ids = _job_set_selection(request)
        reason = _reason(data)
        changed = jobs_cancel(
            actor=request.user,
            queue=data["queue"],
            job_set=data["jobSetId"],
            job_ids=job_ids,
            reason=reason,
            now=timezone.now(),
        )
        return Response({"jobIds": changed})
