"""A job's actions (cancel, reprioritize, preempt), posted from its page or its side panel.

Views are thin: each calls the service, which checks the verb on the job's queue through
``services.authz``. From the page (a plain form) the answer is a redirect back to the page
with the result as a message; from the panel (htmx, ``HX-Request``) it is the panel itself,
re-read after the action, with the result above its tabs. A refusal is a 403 with the
reason either way.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from armada.models import Job
from armada.services.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from armada.services.reprioritize import jobs_reprioritize
from armada.services.stopping import job_preempt, jobs_cancel
from lookout.panel_views import Refused, panel_refusal, render_panel, visible_job


def _from_panel(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _panel_answer(request: HttpRequest, job_id: str, level: str, text: str, status: int):
    """The panel, re-read, with ``text`` above its tabs (or why it cannot be shown)."""
    try:
        job = visible_job(request, job_id)
    except Refused as refused:
        return panel_refusal(request, Refused(403, text) if status == 403 else refused)
    return render_panel(request, job, notice=(level, text), status=status)


def _job_action(request: HttpRequest, job_id: str, action: Callable[[Job], str]) -> HttpResponse:
    """Run ``action(job)`` (a service call); a refusal is a 403, any other error a message
    on the page or in the panel."""
    job = Job.objects.select_related("queue").filter(id=job_id).first()
    if job is None:
        if _from_panel(request):
            return panel_refusal(request, Refused(404, f"job {job_id!r} does not exist"))
        raise Http404(f"job {job_id!r} does not exist")
    try:
        done = action(job)
    except PermissionDenied as exc:
        if _from_panel(request):
            return _panel_answer(request, job_id, "error", str(exc), 403)
        return render(request, "lookout/forbidden.html", {"message": str(exc)}, status=403)
    except (NotFound, Conflict, ValidationFailed) as exc:
        if _from_panel(request):
            return _panel_answer(request, job_id, "error", str(exc), 200)
        messages.error(request, str(exc))
    else:
        if _from_panel(request):
            return _panel_answer(request, job_id, "success", done, 200)
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
