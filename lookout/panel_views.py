"""A job's side panel (a fragment the jobs grid loads) and its full page (shareable, works
without JavaScript), both rendered from the partials in ``templates/lookout/panel/``, and a
run's log: its text for the log viewer's Follow (304 while it has not changed) and as a
download.

Reading needs ``watch`` on the job's queue (``services.authz``): an unknown job or run is a
404, a queue the viewer may not watch a 403 with the reason. A bad query parameter is a 400
naming it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from armada.models import Job, Run
from armada.services.errors import NotFound, PermissionDenied
from lookout.panel_parts import job_context, run_is_active
from lookout.panel_queries import (
    LogVersion,
    job_runs,
    job_visible,
    log_version,
    run_log,
    run_visible,
)

T = TypeVar("T")

# The panel's tabs, in order: (key, label).
TABS = (
    ("details", "Details"),
    ("runs", "Runs"),
    ("yaml", "YAML"),
    ("events", "Events"),
    ("logs", "Logs"),
)
TAB_KEYS = tuple(key for key, _ in TABS)


class Refused(Exception):
    """A request answered with ``status`` and ``message`` instead of the page."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _visible(read: Callable[..., T], **kwargs: Any) -> T:
    """``read(**kwargs)``, its refusals as 404 (unknown) or 403 (not watched)."""
    try:
        return read(**kwargs)
    except NotFound as exc:
        raise Refused(404, str(exc)) from None
    except PermissionDenied as exc:
        raise Refused(403, str(exc)) from None


def visible_job(request: HttpRequest, job_id: str) -> Job:
    return _visible(job_visible, actor=request.user, job_id=job_id)


def _run(request: HttpRequest, run_id: str) -> Run:
    return _visible(run_visible, actor=request.user, run_id=run_id)


def _choice(request: HttpRequest, name: str, allowed: tuple[str, ...], default: str) -> str:
    value = request.GET.get(name, default)
    if value not in allowed:
        raise Refused(400, f"{name}: must be one of {', '.join(a or '(empty)' for a in allowed)}")
    return value


def _log_run(request: HttpRequest, job: Job, runs: list[Run]) -> str | None:
    run_id = request.GET.get("run") or None
    if run_id is not None and all(run.id != run_id for run in runs):
        raise Refused(400, f"run: {run_id!r} is not a run of job {job.id}")
    return run_id


def _page_refusal(request: HttpRequest, refused: Refused) -> HttpResponse:
    if refused.status == 403:
        template, context = "lookout/forbidden.html", {"message": refused.message}
    else:
        title = "Not found" if refused.status == 404 else "Invalid request"
        template, context = "lookout/problem.html", {"title": title, "message": refused.message}
    return render(request, template, context, status=refused.status)


def panel_refusal(request: HttpRequest, refused: Refused, *, whole: bool = True) -> HttpResponse:
    """The panel's answer to a refused request: a fragment saying why, with the status (the
    whole panel's content, or only the message in place of one of its tabs)."""
    title = {403: "Not allowed", 404: "Not found"}.get(refused.status, "Invalid request")
    context = {"title": title, "message": refused.message, "whole": whole}
    return render(request, "lookout/panel/_problem.html", context, status=refused.status)


def _text_refusal(refused: Refused) -> HttpResponse:
    """A refused log read: the API's error shape, whose message the log viewer shows."""
    return JsonResponse({"message": refused.message}, status=refused.status)


@login_required
@require_safe
def job_page(request: HttpRequest, job_id: str) -> HttpResponse:
    """The full page of a job: every part as a section. ``?events=all`` shows every event,
    ``?run=<id>`` the log of that run instead of the latest one's."""
    try:
        job = visible_job(request, job_id)
        all_events = _choice(request, "events", ("", "all"), "") == "all"
        runs = job_runs(job=job)
        log_run_id = _log_run(request, job, runs)
    except Refused as refused:
        return _page_refusal(request, refused)
    context = job_context(
        actor=request.user,
        job=job,
        now=timezone.now(),
        runs=runs,
        all_events=all_events,
        log_run_id=log_run_id,
    )
    return render(request, "lookout/job.html", context)


def render_panel(
    request: HttpRequest,
    job: Job,
    *,
    tab: str = "details",
    notice: tuple[str, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The panel fragment of ``job`` with ``tab`` open (and a notice above the tabs). Only
    that tab is filled: the others are read when they are first shown (``job_panel_part``)."""
    context = job_context(actor=request.user, job=job, now=timezone.now(), parts=(tab,))
    context.update(tabs=TABS, tab=tab, notice=notice)
    return render(request, "lookout/panel/panel.html", context, status=status)


@login_required
@require_safe
def job_panel(request: HttpRequest, job_id: str) -> HttpResponse:
    """The side panel's fragment: the job's parts as tabs (``?tab=`` opens one)."""
    try:
        job = visible_job(request, job_id)
        tab = _choice(request, "tab", TAB_KEYS, "details")
    except Refused as refused:
        return panel_refusal(request, refused)
    return render_panel(request, job, tab=tab)


@login_required
@require_safe
def job_panel_part(request: HttpRequest, job_id: str, tab: str) -> HttpResponse:
    """One tab of the panel, filled (``?events=all``: every event of the job)."""
    try:
        if tab not in TAB_KEYS:
            raise Refused(404, f"no tab {tab!r}: the tabs are {', '.join(TAB_KEYS)}")
        job = visible_job(request, job_id)
        all_events = _choice(request, "events", ("", "all"), "") == "all"
    except Refused as refused:
        return panel_refusal(request, refused, whole=False)
    context = job_context(
        actor=request.user, job=job, now=timezone.now(), parts=(tab,), all_events=all_events
    )
    context["tab"] = tab
    return render(request, "lookout/panel/_tab.html", context)


@login_required
@require_safe
def run_log_text(request: HttpRequest, run_id: str) -> HttpResponse:
    """A run's log as plain text, with its version as the ETag and whether the run is still
    active in ``X-Run-Active``. ``?after=<etag>`` (or ``If-None-Match``) naming the current
    version answers 304 without reading the text: the log viewer polls this while it
    follows a run."""
    try:
        run = _run(request, run_id)
    except Refused as refused:
        return _text_refusal(refused)
    known = request.GET.get("after") or request.headers.get("If-None-Match", "").strip('"')
    active = "1" if run_is_active(run) else "0"
    if known:
        version = log_version(run=run)
        if known == version.etag:
            response = HttpResponseNotModified()
            response["ETag"] = f'"{version.etag}"'
            response["X-Run-Active"] = active
            response["Cache-Control"] = "no-cache"
            return response
    entry = run_log(run_id=run.id)
    version = LogVersion.of(run, entry)
    response = HttpResponse(entry.text if entry else "", content_type="text/plain; charset=utf-8")
    response["ETag"] = f'"{version.etag}"'
    response["X-Run-Active"] = active
    response["X-Log-Truncated"] = "1" if version.truncated else "0"
    response["Cache-Control"] = "no-cache"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_safe
def run_log_download(request: HttpRequest, run_id: str) -> HttpResponse:
    """A run's log as a file to save (``<job id>-<run id>.log``)."""
    try:
        run = _run(request, run_id)
    except Refused as refused:
        return _text_refusal(refused)
    entry = run_log(run_id=run.id)
    response = HttpResponse(entry.text if entry else "", content_type="text/plain; charset=utf-8")
    name = re.sub(r"[^A-Za-z0-9._-]", "_", f"{run.job_id}-{run.id}.log")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
