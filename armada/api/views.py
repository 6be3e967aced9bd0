"""REST views: thin, one per operation; every decision is in ``armada.services``."""

from __future__ import annotations

from django.http import Http404
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from armada.api.bodies import check_body_size, check_path_values, check_storable
from armada.api.parsers import SafeJSONParser, YAMLParser
from armada.api.serializers import (
    CancelByStateSerializer,
    CancelSerializer,
    ErrorSerializer,
    ExecutorDetailSerializer,
    ExecutorSerializer,
    JobFileSerializer,
    JobPageSerializer,
    JobSchedulingSerializer,
    JobSerializer,
    JobSetSerializer,
    JobSummarySerializer,
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
from armada.services import dryrun, job_queries
from armada.services import executors_admin as executor_services
from armada.services import jobs as job_selectors
from armada.services import policies as policy_services
from armada.services import queues as queue_services
from armada.services.errors import ValidationFailed
from armada.services.reprioritize import jobs_reprioritize
from armada.services.stopping import job_preempt, jobs_cancel, jobs_cancel_by_state
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
        ),
        OpenApiExample(
            "every queued job of a queue",
            value={"queue": "demo", "states": ["queued"], "reason": "draining"},
            request_only=True,
        ),
    ],
}

_ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="invalid input; `errors` names each field"),
    403: OpenApiResponse(
        ErrorSerializer, description="permission denied; the message names the permission"
    ),
    404: OpenApiResponse(ErrorSerializer, description="not found"),
    413: OpenApiResponse(ErrorSerializer, description="the body is larger than the server accepts"),
}
_CONFLICT = OpenApiResponse(ErrorSerializer, description="clashes with what is stored")
_DRY_RUN = OpenApiParameter(
    "dryRun",
    OpenApiTypes.BOOL,
    description="validate (permission, fields, name free, references exist) and answer 200 "
    "with what would be created; nothing is written",
)


def _dry_run(request: Request) -> bool:
    value = request.query_params.get("dryRun", "false").lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise ValidationFailed.one("dryRun", "must be true or false")
    return value in ("true", "1", "yes")


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

    def perform_content_negotiation(self, request: Request, force: bool = False):
        # DRF answers an unknown ``?format=`` with a bare 404; say what is wrong instead.
        try:
            return super().perform_content_negotiation(request, force)
        except Http404:
            formats = ", ".join(r.format for r in self.get_renderers())
            raise ValidationFailed.one("format", f"must be one of {formats}") from None


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
        parameters=[_DRY_RUN],
        responses={201: QueueSerializer, 200: QueueSerializer, 409: _CONFLICT, **_ERRORS},
        examples=_EXAMPLES["queue"],
        summary="Create a queue (or only check it, with dryRun=true)",
    )
    def post(self, request: Request) -> Response:
        if _dry_run(request):
            queue = dryrun.queue_create_check(
                actor=request.user, data=request.data, now=timezone.now()
            )
            return Response(QueueSerializer(queue).data)
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
        parameters=[
            OpenApiParameter("queue", str, description="one queue (403 unless you may watch it)"),
            OpenApiParameter("jobSetId", str, description="one job set (needs queue)"),
            OpenApiParameter(
                "state", str, many=True, description="any of these states (repeat, or a,b)"
            ),
            OpenApiParameter("after", str, description="the `next` of the previous page"),
            OpenApiParameter("limit", int, description="page size, 1 to 1000 (default 100)"),
        ],
        operation_id="jobs_list",
        responses={200: JobPageSerializer, **_ERRORS},
        summary="List jobs (only of the queues you may watch), oldest first, a page at a time",
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        page, next_cursor = job_queries.jobs_list(
            actor=request.user,
            queue=params.get("queue") or None,
            job_set=params.get("jobSetId") or None,
            states=_states(request),
            after=params.get("after"),
            limit=params.get("limit"),
        )
        return Response({"items": JobSummarySerializer(page, many=True).data, "next": next_cursor})

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
        parameters=[_DRY_RUN],
        responses={
            201: RetryPolicySerializer,
            200: RetryPolicySerializer,
            409: _CONFLICT,
            **_ERRORS,
        },
        examples=_EXAMPLES["policy"],
        summary="Create a retry policy, YAML or JSON body (or only check it, with dryRun=true)",
    )
    def post(self, request: Request) -> Response:
        if _dry_run(request):
            row = dryrun.policy_create_check(
                actor=request.user, data=request.data, now=timezone.now()
            )
            return Response(policy_services.policy_as_document(row))
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
        request={"application/json": CancelSerializer, "application/yaml": CancelSerializer},
        responses={200: ReprioritizeResultSerializer, **_ERRORS},
        examples=_EXAMPLES["cancel"],
        summary="Cancel jobs: of a job set ({queue, jobSetId, jobIds?}) or of a whole queue by "
        "state ({queue, states}); all or nothing",
        description="With `jobSetId`: the given jobs of the job set, or all its unfinished "
        "jobs when `jobIds` is left out. With `states` (and no `jobSetId`): every job of the "
        "queue in one of those states (see CancelByState). Needs the `cancel` verb on the "
        "queue. The jobs are cancelled in one transaction: either all or none.",
    )
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        if "states" in data:
            if "jobSetId" in data or "jobIds" in data:
                raise ValidationFailed.one(
                    "states", "give either jobSetId (and jobIds) or states, not both"
                )
            if not isinstance(data.get("queue"), str) or not data.get("queue"):
                raise ValidationFailed.one("queue", "is required")
            changed = jobs_cancel_by_state(
                actor=request.user,
                queue=data["queue"],
                states=data["states"],
                reason=_reason(data),
                now=timezone.now(),
            )
            return Response({"jobIds": changed})
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


class JobCancelByStateView(ApiView):
    # The same operation as ``POST /jobs/cancel`` with ``states``, under its own path so
    # that the schema describes its body exactly.
    @extend_schema(
        request=CancelByStateSerializer,
        responses={200: ReprioritizeResultSerializer, **_ERRORS},
        summary="Cancel every job of a queue in the given states (all or nothing)",
    )
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        if not isinstance(data.get("queue"), str) or not data.get("queue"):
            raise ValidationFailed.one("queue", "is required")
        changed = jobs_cancel_by_state(
            actor=request.user,
            queue=data["queue"],
            states=data.get("states"),
            reason=_reason(data),
            now=timezone.now(),
        )
        return Response({"jobIds": changed})


def _states(request: Request) -> list[str]:
    """``state=a&state=b`` or ``state=a,b``."""
    return [
        s.strip() for v in request.query_params.getlist("state") for s in v.split(",") if s.strip()
    ]


class JobSchedulingView(ApiView):
    @extend_schema(
        responses={200: JobSchedulingSerializer, **_ERRORS},
        summary="Why a job is waiting: its pending reason and the latest scheduling rounds",
    )
    def get(self, request: Request, job_id: str) -> Response:
        found = job_queries.job_scheduling(actor=request.user, job_id=job_id)
        return Response(JobSchedulingSerializer(found).data)


class QueueJobSetsView(ApiView):
    @extend_schema(
        responses={200: JobSetSerializer(many=True), **_ERRORS},
        summary="The job sets of a queue with their job counts per state",
    )
    def get(self, request: Request, name: str) -> Response:
        sets = job_queries.job_sets_list(actor=request.user, queue=name)
        return Response(JobSetSerializer(sets, many=True).data)


class ExecutorListView(ApiView):
    @extend_schema(responses={200: ExecutorSerializer(many=True)}, summary="List executors")
    def get(self, request: Request) -> Response:
        rows = executor_services.executor_list(now=timezone.now())
        return Response(ExecutorSerializer(rows, many=True).data)


class ExecutorDetailView(ApiView):
    @extend_schema(
        responses={200: ExecutorDetailSerializer, **_ERRORS},
        summary="An executor with its nodes (labels, allocatable, unschedulable)",
    )
    def get(self, request: Request, executor_id: str) -> Response:
        found = executor_services.executor_get(executor_id=executor_id, now=timezone.now())
        return Response(ExecutorDetailSerializer(found).data)


class ExecutorCordonView(ApiView):
    cordoned = True

    @extend_schema(
        request=None,
        responses={200: ExecutorDetailSerializer, **_ERRORS},
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
