"""API views for jobs and runs: submit and list, read, scheduling record, a run's log,
cancel (by job set or by state), reprioritize and preempt."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.serializers import (
    CancelByStateSerializer,
    CancelSerializer,
    JobFileSerializer,
    JobPageSerializer,
    JobSchedulingSerializer,
    JobSerializer,
    JobSummarySerializer,
    PreemptResultSerializer,
    PreemptSerializer,
    ReprioritizeResultSerializer,
    ReprioritizeSerializer,
    RunLogSerializer,
    SubmitResultSerializer,
)
from armada.api.views import (
    ERRORS,
    EXAMPLES,
    ApiView,
    job_set_selection,
    reason_of,
)
from armada.services import job_queries
from armada.services import jobs as job_selectors
from armada.services.errors import ValidationFailed
from armada.services.reprioritize import jobs_reprioritize
from armada.services.stopping import job_preempt, jobs_cancel, jobs_cancel_by_state
from armada.services.submit import job_submit


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
        responses={200: JobPageSerializer, **ERRORS},
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
        responses={201: SubmitResultSerializer, **ERRORS},
        examples=EXAMPLES["job-file"],
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
    @extend_schema(responses={200: JobSerializer, **ERRORS}, summary="Get a job with its runs")
    def get(self, request: Request, job_id: str) -> Response:
        job = job_selectors.job_get(actor=request.user, job_id=job_id)
        return Response(JobSerializer(job).data)


class RunLogView(ApiView):
    @extend_schema(
        responses={200: RunLogSerializer, **ERRORS},
        summary="The log of a run: the lines so far while it runs, its tail once it ended",
    )
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
                "dropped": entry.dropped if entry else 0,
                "runState": run.state,
            }
        )


class JobPreemptView(ApiView):
    @extend_schema(
        request=PreemptSerializer,
        responses={
            202: PreemptResultSerializer,
            409: OpenApiResponse(description="the job is not running"),
            **ERRORS,
        },
        summary="Preempt a running job (it ends preempted and is not retried)",
    )
    def post(self, request: Request, job_id: str) -> Response:
        reason = reason_of(request.data if isinstance(request.data, dict) else {})
        runs = job_preempt(actor=request.user, job_id=job_id, reason=reason, now=timezone.now())
        return Response({"jobId": job_id, "runIds": runs}, status=status.HTTP_202_ACCEPTED)


class JobReprioritizeView(ApiView):
    @extend_schema(
        request=ReprioritizeSerializer,
        responses={200: ReprioritizeResultSerializer, **ERRORS},
        examples=EXAMPLES["reprioritize"],
        summary="Change the priority of jobs of a job set (all of them when jobIds is left out)",
    )
    def post(self, request: Request) -> Response:
        data, job_ids = job_set_selection(request)
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
        responses={200: ReprioritizeResultSerializer, **ERRORS},
        examples=EXAMPLES["cancel"],
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
                reason=reason_of(data),
                now=timezone.now(),
            )
            return Response({"jobIds": changed})
        data, job_ids = job_set_selection(request)
        reason = reason_of(data)
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
        responses={200: ReprioritizeResultSerializer, **ERRORS},
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
            reason=reason_of(data),
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
        responses={200: JobSchedulingSerializer, **ERRORS},
        summary="Why a job is waiting: its pending reason and the latest scheduling rounds",
    )
    def get(self, request: Request, job_id: str) -> Response:
        found = job_queries.job_scheduling(actor=request.user, job_id=job_id)
        return Response(JobSchedulingSerializer(found).data)
