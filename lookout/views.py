"""Lookout's job pages: the jobs grid (``lookout.grid_views``) and the job page with
its actions (cancel, reprioritize, preempt).

Views are thin: reads go through ``lookout.grid`` / ``lookout.queries`` (which see only
the queues the viewer may watch), writes through the services, which check every permission
through ``services.authz``; a refused action answers 403 with the reason.
"""

from __future__ import annotations

import yaml
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from armada.core.states import JobState
from armada.models import Job, Queue
from armada.services.authz import can_on_queue
from armada.services.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from armada.services.jobs import job_get
from armada.services.records import pending_reason
from armada.services.reprioritize import jobs_reprioritize
from armada.services.stopping import job_preempt, jobs_cancel
from lookout.grid_views import jobs  # noqa: F401  (the jobs grid; lookout.urls routes it)
from lookout.queries import (
    EVENTS_SHOWN,
    decision_trail,
    job_event_count,
    job_events,
    runs_with_logs,
)


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "lookout/forbidden.html", {"message": message}, status=403)


def _job_or_error(request: HttpRequest, job_id: str) -> Job | HttpResponse:
    try:
        return job_get(actor=request.user, job_id=job_id)
    except NotFound as exc:
        raise Http404(str(exc)) from None
    except PermissionDenied as exc:
        return forbidden(request, str(exc))


@login_required
def job_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    job = _job_or_error(request, job_id)
    if isinstance(job, HttpResponse):
        return job
    runs = runs_with_logs(job=job)
    for run in runs:
        run.trail = decision_trail(run)
    live = not JobState(job.state).terminal
    active = job.state in (JobState.LEASED, JobState.PENDING, JobState.RUNNING)
    queue: Queue = job.queue
    all_events = request.GET.get("events") == "all"
    events = job_events(job=job, last=None if all_events else EVENTS_SHOWN)
    events_total = len(events)
    if not all_events and events_total >= EVENTS_SHOWN:
        events_total = job_event_count(job=job)
    context = {
        "job": job,
        "runs": runs,
        "scheduling_reason": pending_reason(job),
        "events": events,
        "events_total": events_total,
        "pod_spec_yaml": yaml.safe_dump(job.pod_spec, sort_keys=False, default_flow_style=False),
        "annotations": sorted((job.annotations or {}).items()),
        "mutations": job.mutations or {},
        "can_cancel": live and can_on_queue(request.user, queue, "cancel"),
        "can_reprioritize": live and can_on_queue(request.user, queue, "reprioritize"),
        "can_preempt": active and can_on_queue(request.user, queue, "preempt"),
    }
    return render(request, "lookout/job.html", context)


def _job_action(request: HttpRequest, job_id: str, action) -> HttpResponse:
    """Run ``action(job)`` (a service call); a refusal is a 403 page, any other error a
    message on the job page."""
    job = Job.objects.filter(id=job_id).first()
    if job is None:
        raise Http404(f"job {job_id!r} does not exist")
    try:
        done = action(job)
    except PermissionDenied as exc:
        return forbidden(request, str(exc))
    except (NotFound, Conflict, ValidationFailed) as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect(reverse("lookout:job", args=[job_id]))


@login_required
@require_POST
def job_cancel(request: HttpRequest, job_id: str) -> HttpResponse:
    reason = request.POST.get("reason", "").strip()[:255]

    def cancel(job: Job) -> str:
        jobs_cancel(
            actor=request.user,
            queue=job.queue_id,
            job_set=job.job_set,
            job_ids=[job.id],
            reason=reason,
            now=timezone.now(),
        )
        return f"Cancelling job {job.id}."

    return _job_action(request, job_id, cancel)


@login_required
@require_POST
def job_reprioritize(request: HttpRequest, job_id: str) -> HttpResponse:
    raw = request.POST.get("priority", "").strip()

    def reprioritize(job: Job) -> str:
        try:
            priority: object = int(raw)
        except ValueError:
            priority = raw  # the service names the field and the allowed range
        jobs_reprioritize(
            actor=request.user,
            queue=job.queue_id,
            job_set=job.job_set,
            priority=priority,
            job_ids=[job.id],
            now=timezone.now(),
        )
        return f"Priority of job {job.id} set to {priority}."

    return _job_action(request, job_id, reprioritize)


@login_required
@require_POST
def job_preempt_view(request: HttpRequest, job_id: str) -> HttpResponse:
    reason = request.POST.get("reason", "").strip()[:255]

    def preempt(job: Job) -> str:
        job_preempt(actor=request.user, job_id=job.id, reason=reason, now=timezone.now())
        return f"Preempting job {job.id}."

    return _job_action(request, job_id, preempt)
