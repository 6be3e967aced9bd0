"""Armada's job calls of ``api.Submit``: SubmitJobs, CancelJobs, CancelJobSet,
ReprioritizeJobs and PreemptJobs, over the same services as our REST API (``services.submit``,
``services.stopping``, ``services.reprioritize``).

Where Armada's semantics and ours differ, what we chose (docs/armada-api-jobs.md has the
whole list):
- SubmitJobs is all or nothing, as our job files are: a bad item is INVALID_ARGUMENT naming
  its field in Armada's spelling (``jobRequestItems[3].podSpec.containers[0].resources``) and
  nothing is stored (``wire.job_requests`` maps the request to our job file). A ``clientId``
  already taken in the queue and job set answers with the original job's id
  (``services.submit``).
- CancelJobs and ReprioritizeJobs act on the listed jobs of the job set in one transaction;
  when some of them are unknown or finished, each job is tried on its own, so that the others
  are still done: CancelJobs lists the jobs really cancelled, ReprioritizeJobs maps each id to
  "" or the reason it was not changed. Without job ids they act on every unfinished job of the
  job set and list those.
- PreemptJobs preempts each listed job on its own and maps its id to "" or why not (not in
  the job set, not running).
- CancelJobSet's ``filter.states``: QUEUED (and SUBMITTED) are our queued jobs, LEASED our
  leased ones, and PENDING with RUNNING, which Armada takes only together, every job with a
  run (leased, pending or running). A finished state is INVALID_ARGUMENT.
"""

from __future__ import annotations

from collections.abc import Callable

from armada_client.armada import submit_pb2
from google.protobuf import empty_pb2

from armada.core.errors import FieldError, ValidationFailed
from armada.core.states import JobState
from armada.services.authz import require_queue_verb
from armada.services.errors import Conflict, NotFound
from armada.services.jobs import jobs_in_job_set
from armada.services.queues import queue_get
from armada.services.reprioritize import jobs_reprioritize
from armada.services.stopping import job_preempt, jobs_cancel, jobs_cancel_by_state
from armada.services.submit import job_submit
from armada.wire.job_requests import armada_names, job_file_of, whole_priority
from armada.wire.registry import Call, unary

MAX_REASON_LENGTH = 255  # as our REST API's

# Armada's job states in CancelJobSet's filter -> ours.
FILTER_STATES: dict[int, tuple[JobState, ...]] = {
    submit_pb2.QUEUED: (JobState.QUEUED,),
    submit_pb2.SUBMITTED: (JobState.QUEUED,),
    submit_pb2.LEASED: (JobState.LEASED,),
    submit_pb2.PENDING: (JobState.LEASED, JobState.PENDING, JobState.RUNNING),
    submit_pb2.RUNNING: (JobState.LEASED, JobState.PENDING, JobState.RUNNING),
}


# --- SubmitJobs ----------------------------------------------------------------------------


@unary("api.Submit/SubmitJobs")
def submit_jobs(call: Call, request: submit_pb2.JobSubmitRequest) -> submit_pb2.JobSubmitResponse:
    data, names = job_file_of(request)
    with armada_names(names):
        ids = job_submit(actor=call.actor, data=data, now=call.now)
    return submit_pb2.JobSubmitResponse(
        job_response_items=[submit_pb2.JobSubmitResponseItem(job_id=i) for i in ids]
    )


# --- CancelJobs, CancelJobSet ----------------------------------------------------------------


@unary("api.Submit/CancelJobs")
def cancel_jobs(call: Call, request: submit_pb2.JobCancelRequest) -> submit_pb2.CancellationResult:
    _require_job_set(request.queue, request.job_set_id)
    reason = _reason(request.reason)
    job_ids = _unique([*request.job_ids, *([request.job_id] if request.job_id else [])])

    def cancel(ids: list[str] | None) -> list[str]:
        return jobs_cancel(
            actor=call.actor,
            queue=request.queue,
            job_set=request.job_set_id,
            job_ids=ids,
            reason=reason,
            now=call.now,
        )

    if not job_ids:
        return submit_pb2.CancellationResult(cancelled_ids=cancel(None))
    done = _each_if_not_all(request.queue, job_ids, cancel)
    return submit_pb2.CancellationResult(cancelled_ids=[i for i in job_ids if done[i] == ""])


@unary("api.Submit/CancelJobSet")
def cancel_job_set(call: Call, request: submit_pb2.JobSetCancelRequest) -> empty_pb2.Empty:
    _require_job_set(request.queue, request.job_set_id)
    reason = _reason(request.reason)
    states = filter_states(list(request.filter.states))
    if states:
        jobs_cancel_by_state(
            actor=call.actor,
            queue=request.queue,
            job_set=request.job_set_id,
            states=[s.value for s in states],
            reason=reason,
            now=call.now,
        )
    else:
        jobs_cancel(
            actor=call.actor,
            queue=request.queue,
            job_set=request.job_set_id,
            job_ids=None,
            reason=reason,
            now=call.now,
        )
    return empty_pb2.Empty()


def filter_states(states: list[int]) -> list[JobState]:
    """Our states for the states of a JobSetFilter (empty: no filter, every unfinished job)."""
    problems = []
    wanted: list[JobState] = []
    for i, state in enumerate(states):
        ours = FILTER_STATES.get(state)
        if ours is None:
            name = (
                submit_pb2.JobState.Name(state) if state in submit_pb2.JobState.values() else state
            )
            problems.append(
                FieldError(
                    f"filter.states[{i}]",
                    f"{name} jobs cannot be cancelled; choose from QUEUED, SUBMITTED, LEASED, "
                    "PENDING and RUNNING",
                )
            )
            continue
        wanted += [s for s in ours if s not in wanted]
    if (submit_pb2.PENDING in states) != (submit_pb2.RUNNING in states):
        problems.append(
            FieldError(
                "filter.states", "PENDING and RUNNING must be given together (as Armada has it)"
            )
        )
    if problems:
        raise ValidationFailed(problems)
    return wanted


# --- ReprioritizeJobs, PreemptJobs -----------------------------------------------------------


@unary("api.Submit/ReprioritizeJobs")
def reprioritize_jobs(
    call: Call, request: submit_pb2.JobReprioritizeRequest
) -> submit_pb2.JobReprioritizeResponse:
    _require_job_set(request.queue, request.job_set_id)
    problems: list[FieldError] = []
    priority = whole_priority(request.new_priority, "newPriority", problems)
    if problems:
        raise ValidationFailed(problems)
    job_ids = _unique(list(request.job_ids))

    def reprioritize(ids: list[str] | None) -> list[str]:
        return jobs_reprioritize(
            actor=call.actor,
            queue=request.queue,
            job_set=request.job_set_id,
            priority=priority,
            job_ids=ids,
            now=call.now,
        )

    if not job_ids:
        results = dict.fromkeys(reprioritize(None), "")
    else:
        results = _each_if_not_all(request.queue, job_ids, reprioritize)
    return submit_pb2.JobReprioritizeResponse(reprioritization_results=results)


@unary("api.Submit/PreemptJobs")
def preempt_jobs(call: Call, request: submit_pb2.JobPreemptRequest) -> submit_pb2.PreemptionResult:
    _require_job_set(request.queue, request.job_set_id)
    reason = _reason(request.reason)
    queue = queue_get(name=request.queue)
    require_queue_verb(call.actor, queue, "preempt")
    job_ids = _unique(list(request.job_ids))
    members = jobs_in_job_set(queue=queue.name, job_set=request.job_set_id, job_ids=job_ids)
    results: dict[str, str] = {}
    for job_id in job_ids:
        if job_id not in members:
            results[job_id] = (
                f"job {job_id!r} is not in queue {queue.name!r}, job set {request.job_set_id!r}"
            )
            continue
        try:
            job_preempt(actor=call.actor, job_id=job_id, reason=reason, now=call.now)
        except (NotFound, Conflict) as exc:
            results[job_id] = str(exc)
        else:
            results[job_id] = ""
    return submit_pb2.PreemptionResult(preemption_results=results)


# --- shared --------------------------------------------------------------------------------


def _each_if_not_all(
    queue: str, job_ids: list[str], act: Callable[[list[str] | None], list[str]]
) -> dict[str, str]:
    """Do ``act`` to all of ``job_ids`` in one go; if some cannot be (unknown, finished), to
    each on its own. Returns each id with "" (done) or why not. A missing queue or a missing
    permission fails the whole call, as in Armada."""
    queue_get(name=queue)  # NOT_FOUND for the call, not for each job
    try:
        act(job_ids)
    except NotFound:
        pass
    else:
        return dict.fromkeys(job_ids, "")
    results: dict[str, str] = {}
    for job_id in job_ids:
        try:
            act([job_id])
        except NotFound as exc:
            results[job_id] = str(exc)
        else:
            results[job_id] = ""
    return results


def _require_job_set(queue: str, job_set: str) -> None:
    problems = [
        FieldError(name, "is required")
        for name, value in (("queue", queue), ("jobSetId", job_set))
        if not value
    ]
    if problems:
        raise ValidationFailed(problems)


def _reason(reason: str) -> str:
    if len(reason) > MAX_REASON_LENGTH:
        raise ValidationFailed.one(
            "reason", f"must be text of at most {MAX_REASON_LENGTH} characters"
        )
    return reason


def _unique(ids: list[str]) -> list[str]:
    """``ids`` without repeats or empty ids, in their order."""
    return list(dict.fromkeys(i for i in ids if i))
