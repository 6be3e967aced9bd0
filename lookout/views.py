from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from armada.core.states import JobState
from lookout.queries import jobs_page


@login_required
def jobs(request: HttpRequest) -> HttpResponse:
    filters = {k: request.GET.get(k, "").strip() for k in ("queue", "job_set", "state")}
    rows, next_cursor = jobs_page(before=request.GET.get("before", ""), **filters)
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
