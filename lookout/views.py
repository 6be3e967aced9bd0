"""Lookout's job pages, by where they live: the jobs grid (``lookout.grid_views``), a job's
full page and side panel (``lookout.panel_views``) and its actions (``lookout.job_views``).

The names below are the ones ``lookout.urls`` routes; ``forbidden`` is the 403 page the
other page modules answer with.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from lookout.grid_views import jobs  # noqa: F401  (the jobs grid; lookout.urls routes it)
from lookout.job_views import job_cancel, job_preempt_view, job_reprioritize  # noqa: F401
from lookout.panel_views import job_page as job_detail  # noqa: F401


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "lookout/forbidden.html", {"message": message}, status=403)
