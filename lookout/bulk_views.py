"""Acting on the jobs selected in the grid: cancel, reprioritize, preempt (``services.job_bulk``).

- ``POST /jobs/bulk/<action>`` (``lookout:jobs-bulk``) with form fields ``ids`` (repeated, or
  comma-separated), ``reason`` (cancel, preempt) and ``priority`` (reprioritize). From htmx or
  the grid's script (an ``HX-Request`` header) it answers an HTML fragment with the outcome
  (``role="status"``); a plain form post is redirected back to the grid (``next``, a path of
  this site) with the outcome as a message.
- ``GET|POST /jobs/bulk/<action>/check`` (``lookout:jobs-bulk-check``) with ``ids``: a
  fragment saying how many of the selected jobs the action would apply to and why the others
  would not ("Cancel 7 of the 12 selected jobs? 2 are already finished; ..."), changing
  nothing. The grid's confirmation shows it; POST takes as many ids as the action does.

Bad input answers 400 naming the field with nothing changed; an unknown action is 404. When
every job the action could apply to was refused for want of the permission, the answer is
403 with the reason; a mixed outcome is 200 and says what was done and what was not.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from armada.services.errors import ValidationFailed
from armada.services.job_bulk import ACTIONS, MAX_PRIORITY, BulkResult, jobs_act, jobs_check
from armada.web.inputs import whole_number

FIELD = "ids"
#: The most characters of ``ids`` read (1,000 ids of 26 characters and their commas).
MAX_IDS_TEXT = 40_000


# --- wording ----------------------------------------------------------------------------------

_DOING = {"cancel": "Cancelling", "preempt": "Preempting"}
_ASK = {"cancel": "Cancel", "reprioritize": "Reprioritize", "preempt": "Preempt"}
_PAST = {"cancel": "cancelled", "reprioritize": "reprioritized", "preempt": "preempted"}


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"


def _are(n: int) -> str:
    return f"{n} is" if n == 1 else f"{n} are"


def question(result: BulkResult) -> tuple[str, list[str]]:
    """What the confirmation asks, and why some selected jobs would be left out."""
    n, selected = len(result.done), result.selected
    if n == 0:
        headline = f"None of the {_jobs(selected)} selected can be {_PAST[result.action]}."
    elif n == selected:
        headline = f"{_ASK[result.action]} {_jobs(n)}?"
    else:
        headline = f"{_ASK[result.action]} {n} of the {_jobs(selected)} selected?"
    details = []
    if result.finished:
        details.append(f"{_are(len(result.finished))} already finished.")
    if result.stopping:
        details.append(f"{_are(len(result.stopping))} already being stopped.")
    if result.not_running:
        details.append(f"{_are(len(result.not_running))} not running: nothing to preempt.")
    for refused in result.refused:
        details.append(
            f"{_are(len(refused.job_ids))} in queue {refused.queue} where you may not "
            f"{refused.permission} (it needs the {refused.permission!r} permission on the "
            f"queue or the global {refused.global_permission!r})."
        )
    if result.not_found:
        details.append(f"{_are(len(result.not_found))} not found.")
    return headline, details


def outcome(result: BulkResult) -> tuple[str, list[str]]:
    """What was done, and what was not and why."""
    n = len(result.done)
    if n == 0:
        headline = f"No job was {_PAST[result.action]}."
    elif result.action == "reprioritize":
        headline = f"Priority of {_jobs(n)} set to {result.priority}."
    else:
        headline = f"{_DOING[result.action]} {_jobs(n)}."
    details = []
    if result.finished:
        details.append(f"Skipped {len(result.finished)} already finished.")
    if result.stopping:
        details.append(f"Skipped {len(result.stopping)} already being stopped.")
    if result.not_running:
        details.append(f"Skipped {len(result.not_running)} not running: nothing to preempt.")
    for refused in result.refused:
        details.append(
            f"Refused {len(refused.job_ids)} in queue {refused.queue}: you may not "
            f"{refused.permission} there (it needs the {refused.permission!r} permission on "
            f"the queue or the global {refused.global_permission!r})."
        )
    if result.not_found:
        details.append(f"{len(result.not_found)} not found.")
    for failed in result.failed:
        details.append(
            f"Failed for {_jobs(len(failed.job_ids))} of queue {failed.queue}, job set "
            f"{failed.job_set}, nothing changed for them: {failed.reason}"
        )
    return headline, details


# --- views -------------------------------------------------------------------------------------


def _ids(data) -> list[str]:
    """The ids of ``data`` (a QueryDict): every ``ids`` value, each split on commas."""
    values = data.getlist(FIELD)
    if sum(len(v) for v in values) > MAX_IDS_TEXT:
        raise ValidationFailed.one(FIELD, "too many jobs selected (at most 1000 at once)")
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _priority(data) -> object:
    raw = data.get("priority", "")
    if not raw.strip():
        raise ValidationFailed.one("priority", "give the new priority, a whole number")
    number = whole_number(raw, max_digits=len(str(MAX_PRIORITY)))
    if number is None:
        raise ValidationFailed.one("priority", f"must be a whole number from 0 to {MAX_PRIORITY}")
    return number


def _action(action: str) -> str:
    if action not in ACTIONS:
        raise Http404(f"no bulk action {action!r}: choose one of {', '.join(ACTIONS)}")
    return action


def _from_script(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _problem(request: HttpRequest, exc: ValidationFailed) -> HttpResponse:
    """400 naming the field: a fragment for the grid's script, else a page."""
    text = f"Nothing was changed: {exc.summary()}"
    if _from_script(request):
        return HttpResponse(
            format_html('<div class="bulk-result bulk-error" role="alert"><p>{}</p></div>', text),
            status=400,
        )
    context = {"title": "Invalid request", "message": text}
    return render(request, "lookout/problem.html", context, status=400)


def _status(result: BulkResult) -> int:
    if result.done or not (result.refused or result.failed):
        return 200
    return 403 if result.refused and not result.failed else 409


def _fragment(result: BulkResult, *, role: str, css: str) -> str:
    headline, details = question(result) if result.checked_only else outcome(result)
    kind = "ok" if _status(result) == 200 else "error"
    items = format_html_join("", "<li>{}</li>", ((d,) for d in details))
    return format_html(
        '<div class="{} bulk-{}"{} data-applies="{}" data-selected="{}"><p>{}</p>{}</div>',
        css,
        kind,
        format_html(' role="{}"', role) if role else "",
        len(result.done),
        result.selected,
        headline,
        format_html('<ul class="bulk-details">{}</ul>', items) if details else "",
    )


def _back(request: HttpRequest) -> str:
    target = request.POST.get("next", "")
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("lookout:jobs")


@login_required
@require_POST
def jobs_bulk(request: HttpRequest, action: str) -> HttpResponse:
    """Do ``action`` to the selected jobs (see the module)."""
    action = _action(action)
    try:
        result = jobs_act(
            actor=request.user,
            action=action,
            job_ids=_ids(request.POST),
            reason=request.POST.get("reason", ""),
            priority=_priority(request.POST) if action == "reprioritize" else None,
            now=timezone.now(),
            field=FIELD,
        )
    except ValidationFailed as exc:
        return _problem(request, exc)
    status = _status(result)
    if _from_script(request):
        return HttpResponse(
            _fragment(result, role="status", css="bulk-result"),
            status=status,
        )
    headline, details = outcome(result)
    text = " ".join([headline, *details])
    (messages.success if status == 200 else messages.error)(request, text)
    return redirect(_back(request))


@login_required
@require_http_methods(["GET", "POST"])
def jobs_bulk_check(request: HttpRequest, action: str) -> HttpResponse:
    """What ``action`` would do to the selected jobs, changing nothing (see the module)."""
    action = _action(action)
    data = request.POST if request.method == "POST" else request.GET
    try:
        result = jobs_check(actor=request.user, action=action, job_ids=_ids(data), field=FIELD)
    except ValidationFailed as exc:
        return _problem(request, exc)
    return HttpResponse(_fragment(result, role="", css="bulk-plan"))
