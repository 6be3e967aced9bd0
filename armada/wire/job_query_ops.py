"""Armada's ``Jobs`` service: job status, details, run details, errors and active queues by
id, over our job and run rows (``services.job_lookups``).

As Armada's query API answers, with our permission funnel in front (``watch`` on the job's
queue, as our REST job reads; a job of a queue the caller may not watch is
PERMISSION_DENIED naming the queue, and nothing is answered):
- GetJobStatus maps every id asked for: an id we do not know is ``UNKNOWN``;
- GetJobDetails, GetJobRunDetails and GetJobErrors leave unknown ids out;
- at most 500 ids a request (Armada's ``maxQueryItems``), else INVALID_ARGUMENT;
- GetJobStatusUsingExternalJobUri finds the jobs of a job set by the ``externalJobUri``
  their submit gave (kept as the ``armadaproject.io/externalJobUri`` annotation).
"""

from __future__ import annotations

from armada_client.armada import job_pb2, submit_pb2

from armada.core.states import JobState, RunState
from armada.models import Job, Run
from armada.services import job_lookups
from armada.services.errors import ValidationFailed
from armada.wire.event_messages import job_message, timestamp
from armada.wire.job_requests import EXTERNAL_JOB_URI
from armada.wire.registry import Call, unary

JOB_STATES = {
    JobState.QUEUED: submit_pb2.QUEUED,
    JobState.LEASED: submit_pb2.LEASED,
    JobState.PENDING: submit_pb2.PENDING,
    JobState.RUNNING: submit_pb2.RUNNING,
    JobState.SUCCEEDED: submit_pb2.SUCCEEDED,
    JobState.FAILED: submit_pb2.FAILED,
    JobState.CANCELLED: submit_pb2.CANCELLED,
    JobState.PREEMPTED: submit_pb2.PREEMPTED,
    JobState.REJECTED: submit_pb2.REJECTED,
}
RUN_STATES = {
    RunState.LEASED: job_pb2.RUN_STATE_LEASED,
    RunState.PENDING: job_pb2.RUN_STATE_PENDING,
    RunState.RUNNING: job_pb2.RUN_STATE_RUNNING,
    RunState.SUCCEEDED: job_pb2.RUN_STATE_SUCCEEDED,
    RunState.FAILED: job_pb2.RUN_STATE_FAILED,
    RunState.CANCELLED: job_pb2.RUN_STATE_CANCELLED,
    RunState.PREEMPTED: job_pb2.RUN_STATE_PREEMPTED,
    RunState.LEASE_EXPIRED: job_pb2.RUN_STATE_LEASE_EXPIRED,
    RunState.LEASE_RETURNED: job_pb2.RUNS_STATE_LEASE_RETURNED,
}
# The job states whose ending is an error GetJobErrors reports.
FAILURE_STATES = {JobState.FAILED, JobState.PREEMPTED, JobState.REJECTED}


def job_state(job: Job) -> int:
    return JOB_STATES.get(job.state, submit_pb2.UNKNOWN)


@unary("api.Jobs/GetJobStatus")
def get_job_status(call: Call, request: job_pb2.JobStatusRequest) -> job_pb2.JobStatusResponse:
    jobs = job_lookups.jobs_by_ids(actor=call.actor, job_ids=request.job_ids)
    return job_pb2.JobStatusResponse(
        job_states={
            job_id: job_state(jobs[job_id]) if job_id in jobs else submit_pb2.UNKNOWN
            for job_id in request.job_ids
        }
    )


@unary("api.Jobs/GetJobStatusUsingExternalJobUri")
def get_job_status_using_external_job_uri(
    call: Call, request: job_pb2.JobStatusUsingExternalJobUriRequest
) -> job_pb2.JobStatusResponse:
    for field, value in (
        ("queue", request.queue),
        ("jobset", request.jobset),
        ("externalJobUri", request.external_job_uri),
    ):
        if not value:
            raise ValidationFailed.one(field, "must not be empty")
    jobs = job_lookups.jobs_with_annotation(
        actor=call.actor,
        queue=request.queue,
        job_set=request.jobset,
        key=EXTERNAL_JOB_URI,
        value=request.external_job_uri,
    )
    return job_pb2.JobStatusResponse(job_states={j.id: job_state(j) for j in jobs})


@unary("api.Jobs/GetJobDetails")
def get_job_details(call: Call, request: job_pb2.JobDetailsRequest) -> job_pb2.JobDetailsResponse:
    jobs = job_lookups.jobs_by_ids(actor=call.actor, job_ids=request.job_ids)
    runs = job_lookups.runs_of_jobs(jobs) if request.expand_job_run and jobs else {}
    if request.expand_job_run:
        latest = {job_id: job_runs[0].id for job_id, job_runs in runs.items() if job_runs}
    else:
        latest = job_lookups.latest_run_ids(jobs) if jobs else {}
    cancelled = [j.id for j in jobs.values() if j.state == JobState.CANCELLED]
    cancellers = job_lookups.cancellations(cancelled) if cancelled else {}
    details = {}
    for job_id, job in jobs.items():
        item = job_pb2.JobDetails(
            job_id=job.id,
            queue=job.queue_id,
            jobset=job.job_set,
            namespace=job.namespace,
            state=job_state(job),
            submitted_ts=timestamp(job.submitted_at),
            last_transition_ts=timestamp(job.last_transition_at),
            latest_run_id=latest.get(job_id, ""),
            job_runs=[run_details(r) for r in runs.get(job_id, [])],
        )
        if job.state == JobState.CANCELLED:
            item.cancel_ts.CopyFrom(timestamp(job.last_transition_at))
            item.cancel_reason = job.terminal_message
            item.cancel_user = cancellers.get(job_id, "")
        if request.expand_job_spec:
            item.job_spec.CopyFrom(job_message(job))
        details[job_id] = item
    return job_pb2.JobDetailsResponse(job_details=details)


def run_details(run: Run) -> job_pb2.JobRunDetails:
    return job_pb2.JobRunDetails(
        run_id=run.id,
        job_id=run.job_id,
        state=RUN_STATES.get(run.state, job_pb2.RUN_STATE_UNKNOWN),
        cluster=run.executor,
        node=run.node,
        leased_ts=timestamp(run.leased_at),
        pending_ts=timestamp(run.pending_at),
        started_ts=timestamp(run.running_at),
        finished_ts=timestamp(run.finished_at),
    )


@unary("api.Jobs/GetJobRunDetails")
def get_job_run_details(
    call: Call, request: job_pb2.JobRunDetailsRequest
) -> job_pb2.JobRunDetailsResponse:
    runs = job_lookups.runs_by_ids(actor=call.actor, run_ids=request.run_ids)
    return job_pb2.JobRunDetailsResponse(
        job_run_details={run_id: run_details(run) for run_id, run in runs.items()}
    )


def job_error(job: Job) -> str:
    """The error a job ended with (its terminal reason and message), empty when it did not
    end in failure."""
    if job.state not in FAILURE_STATES:
        return ""
    parts = [p for p in (job.terminal_reason, job.terminal_message) if p]
    return ": ".join(parts)


@unary("api.Jobs/GetJobErrors")
def get_job_errors(call: Call, request: job_pb2.JobErrorsRequest) -> job_pb2.JobErrorsResponse:
    jobs = job_lookups.jobs_by_ids(actor=call.actor, job_ids=request.job_ids)
    return job_pb2.JobErrorsResponse(
        job_errors={job_id: job_error(job) for job_id, job in jobs.items()}
    )


@unary("api.Jobs/GetActiveQueues")
def get_active_queues(
    call: Call, request: job_pb2.GetActiveQueuesRequest
) -> job_pb2.GetActiveQueuesResponse:
    by_pool = job_lookups.active_queues_by_pool(actor=call.actor)
    return job_pb2.GetActiveQueuesResponse(
        active_queues_by_pool={
            pool: job_pb2.ActiveQueues(queues=queues) for pool, queues in by_pool.items()
        }
    )
