from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import render

from armada.core.states import JobState
from armada.models import SchedulingReason
from armada.services.errors import NotFound, PermissionDenied
from armada.services.jobs import job_get
from lookout.queries import jobs_page, runs_with_logs


@login_required
def jobs(request: HttpRequest) -> HttpResponse:
    filters = {k: request.GET.get(k, "").strip() for k in ("queue", "job_set", "state")}
    rows, next_cursor = jobs_page(
        actor=request.user, before=request.GET.get("before", ""), **filters
    )
    return render(
        request,
        "lookout/jobs.html",
        {
            "jobs": rows,
            "next_cursor": next_cursor,
            "filters": filters,
            "states": [s.value for s in JobState],
        },
    )


@login_required
def job_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    try:
        job = job_get(actor=request.user, job_id=job_id)
    except NotFound as exc:
        raise Http404(str(exc)) from None
    except PermissionDenied as exc:
        return HttpResponseForbidden(str(exc))
    context = {
        "job": job,
        "runs": runs_with_logs(job=job),
        "scheduling_reason": SchedulingReason.objects.filter(job=job).first(),
    }
    return render(request, "lookout/job.html", context)
