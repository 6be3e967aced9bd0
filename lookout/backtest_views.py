"""The policy editor's "What would this change?" panel: the text being edited, replayed over
the recorded failures of a period by ``armada.services.backtest``, before anything is saved.

``POST policies/backtest`` (htmx, CSRF-protected) takes the editor's ``document`` (YAML or
JSON, read exactly as the editor's Save reads it: ``policy_text.load_yaml``), ``name`` when
an existing policy is being edited (so that a renamed draft gets the error Save gives), and
the panel's own fields (:class:`BacktestForm`). It answers a fragment for the panel's
results region:

- 200 with the summary overall and per queue, the flips by category and rule, the sample of
  affected jobs (each linked to its job page), the retry yield, and a note that says in
  words which figure is an estimate and what it rests on (the service's ``estimateNote``
  speaks of its document's fields, so the page says it its own way);
- 400 with the draft's problems placed on their lines, as Save shows them (the same reading
  and the same checks, ``services.policies.policy_validate``), and the panel's field errors
  (a period that is not one of the choices, a missing or reversed from/to, a range the
  service refuses, a queue that does not exist), both at once when both are wrong;
- 403 when the person is not logged in, or names a queue they may not view (the project's
  answer to a ``PermissionDenied``, as the API gives it), with the message on the field.

It needs no policy permission: only the permission to view the queues whose failures it
reads (the service reads every queue the person may view when none is named). It writes
nothing.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_POST

from armada.core.backtest_scope import replayed_text
from armada.core.errors import FieldError, ValidationFailed
from armada.services import policies as policy_services
from armada.services.backtest import backtest
from armada.services.errors import NotFound, PermissionDenied
from armada.web.inputs import checks_own_text
from lookout.policy_text import TextError, YAMLTextError, load_yaml, locate

TEMPLATE = "lookout/_backtest_results.html"
PERIODS = {
    "1d": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
BETWEEN = "between"
DEFAULT_PERIOD = "7d"
SAMPLE_SIZE = 20
MAX_NAMES = 100
_SEPARATORS = re.compile(r"[\s,]+")
# The service's field names for the panel's inputs; every other field it names is the draft's.
_SERVICE_FIELDS = {
    "since": "since",
    "until": "until",
    "range": "period",
    "queues": "queues",
    "queue": "queues",
    "jobSets": "job_sets",
    "job_sets": "job_sets",
}
_INDEXED = re.compile(r"^([A-Za-z_]+)\[\d+\]")


class BacktestForm(forms.Form):
    """The panel's choices: a period (the last day, 7 days, 30 days, or from/to), and
    optionally the queues and job sets to read. Ids are ``backtest-<field>``, as the
    editor page writes them."""

    period = forms.ChoiceField(
        label="Period",
        choices=[
            ("1d", "Last day"),
            ("7d", "Last 7 days"),
            ("30d", "Last 30 days"),
            (BETWEEN, "From … to …"),
        ],
        initial=DEFAULT_PERIOD,
    )
    since = forms.DateTimeField(label="From", required=False)
    until = forms.DateTimeField(label="To", required=False)
    queues = forms.CharField(label="Queues", required=False, max_length=4096)
    job_sets = forms.CharField(label="Job sets", required=False, max_length=4096)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, auto_id="backtest-%s", label_suffix="", **kwargs)

    def clean_queues(self) -> list[str]:
        return _names(_SEPARATORS.split(self.cleaned_data.get("queues") or ""), "queues")

    def clean_job_sets(self) -> list[str]:
        # A job set's name may hold spaces: only commas separate them.
        parts = (self.cleaned_data.get("job_sets") or "").split(",")
        return _names([p.strip() for p in parts], "job sets")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("period") != BETWEEN:
            return data
        since, until = data.get("since"), data.get("until")
        if since is None and "since" not in self.errors:
            self.add_error("since", "give the start of the range (or choose a period)")
        if until is None and "until" not in self.errors:
            self.add_error("until", "give the end of the range (or choose a period)")
        if since is not None and until is not None and since >= until:
            self.add_error("until", "must be after From")
        return data

    def window(self, now: datetime) -> tuple[datetime, datetime]:
        """The range to replay: the chosen period up to ``now``, or From to To."""
        data = self.cleaned_data
        if data["period"] == BETWEEN:
            return data["since"], data["until"]
        return now - PERIODS[data["period"]], now

    def place(self, error: FieldError) -> None:
        """Put one of the service's errors about the panel's inputs on its field."""
        field = _SERVICE_FIELDS.get(error.field) or _SERVICE_FIELDS.get(_base(error.field), "")
        if field in ("since", "until") and self.cleaned_data.get("period") != BETWEEN:
            field = "period"
        self.add_error(field or None, error.message)


def _names(parts: list[str], what: str) -> list[str]:
    """The names typed into one field, each once."""
    names = list(dict.fromkeys(n for n in parts if n))
    if len(names) > MAX_NAMES:
        raise forms.ValidationError(f"name at most {MAX_NAMES} {what}")
    return names


def _base(field: str) -> str:
    found = _INDEXED.match(field)
    return found.group(1) if found else field.split(".", 1)[0]


def _is_panel_field(error: FieldError) -> bool:
    return error.field in _SERVICE_FIELDS or _base(error.field) in _SERVICE_FIELDS


def _read_draft(text: str, name: str | None) -> tuple[Any, list[TextError]]:
    """The draft's data, or its problems on their lines: read and checked as the editor's
    Save reads and checks it (for an edit, ``name`` is the policy's, which a draft may not
    change)."""
    try:
        data = load_yaml(text)
        policy_services.policy_validate(data=data, name=name)
    except YAMLTextError as exc:
        return None, [exc.error]
    except ValidationFailed as exc:
        return None, locate(text, exc.errors)
    return data, []


def _answer(request: HttpRequest, context: dict[str, Any], status: int) -> HttpResponse:
    return render(request, TEMPLATE, context, status=status)


@checks_own_text("document")
@require_POST
def policy_backtest(request: HttpRequest) -> HttpResponse:
    """Replay the recorded failures under the text being edited; see the module docstring."""
    if not request.user.is_authenticated:
        return _answer(request, {"refused": "Log in to see what a policy would change."}, 403)
    form = BacktestForm(request.POST)
    text = request.POST.get("document", "")
    data, draft_errors = _read_draft(text, request.POST.get("name") or None)
    context: dict[str, Any] = {"form": form, "draft_errors": draft_errors}
    if not form.is_valid() or draft_errors:
        return _answer(request, context, 400)
    now = timezone.now()
    since, until = form.window(now)
    try:
        result = backtest(
            actor=request.user,
            draft=data,
            since=since,
            until=until,
            queues=form.cleaned_data["queues"],
            job_sets=form.cleaned_data["job_sets"],
            now=now,
            sample_size=SAMPLE_SIZE,
        )
    except ValidationFailed as exc:
        panel = [e for e in exc.errors if _is_panel_field(e)]
        for error in panel:
            form.place(error)
        context["draft_errors"] = locate(text, [e for e in exc.errors if not _is_panel_field(e)])
        return _answer(request, context, 400)
    except PermissionDenied as exc:
        form.add_error("queues", str(exc))
        return _answer(request, context, 403)
    except NotFound as exc:
        form.add_error("queues", str(exc))
        return _answer(request, context, 400)
    context["result"] = results_view(result)
    context["time_zone"] = timezone.get_current_timezone_name()
    return _answer(request, context, 200)


def _hours(cost: dict[str, Any]) -> dict[str, float]:
    return {k: float(cost.get(k) or 0.0) for k in ("coreHours", "memoryGibHours", "gpuHours")}


def _summary(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "examined": row.get("examined", 0),
        "unchanged": row.get("unchanged", 0),
        "retry_to_fail": row.get("retryToFail", 0),
        "fail_to_retry": row.get("failToRetry", 0),
        "extra_attempts": row.get("extraAttempts", 0),
        "saved_attempts": row.get("savedAttempts", 0),
        "extra_cost": _hours(row.get("extraCost") or {}),
        "saved_cost": _hours(row.get("savedCost") or {}),
        "estimated_succeeded": float(row.get("estimatedSucceeded") or 0.0),
    }


def results_view(result: dict[str, Any]) -> dict[str, Any]:
    """The service's document in the names the template reads (its keys are camelCase, and
    ``from``, ``to`` and ``yield`` read badly in a template)."""
    policy = result.get("policy") or {}
    period = result.get("range") or {}
    return {
        "policy": policy.get("name", ""),
        "version": policy.get("version"),
        "source": policy.get("source", "draft"),
        "since": _moment(period.get("since")),
        "until": _moment(period.get("until")),
        "replayed": replayed_text(result.get("replayed") or {}),
        "overall": _summary(result.get("overall") or {}),
        "queues": [{"queue": q.get("queue", ""), **_summary(q)} for q in result.get("queues", [])],
        "flips": [
            {
                "before": f.get("from", ""),
                "after": f.get("to", ""),
                "category": f.get("category", ""),
                "subcategory": f.get("subcategory", ""),
                "recorded_rule": f.get("recordedRule"),
                "draft_rule": f.get("draftRule"),
                "count": f.get("count", 0),
            }
            for f in result.get("flips", [])
        ],
        "sample": [
            {
                "job_id": s.get("jobId", ""),
                "run_id": s.get("runId", ""),
                "queue": s.get("queue", ""),
                "job_set": s.get("jobSet", ""),
                "category": s.get("category", ""),
                "subcategory": s.get("subcategory", ""),
                "recorded": s.get("recorded", ""),
                "draft": s.get("draft", ""),
                "flipped": _outcome(s.get("recorded", "")) != _outcome(s.get("draft", "")),
                "reason": s.get("reason", ""),
                "delay": s.get("retryDelaySeconds"),
            }
            for s in result.get("sample", [])
        ],
        "yield_rows": [
            {
                "category": y.get("category", ""),
                "rule": y.get("rule"),
                "retried": y.get("retriedJobs", 0),
                "succeeded": y.get("succeededJobs", 0),
            }
            for y in result.get("yield", [])
        ],
    }


def _outcome(label: str) -> str:
    """``retry`` or ``fail`` for a decision label (``retry_unschedulable`` ends the job)."""
    return "retry" if label == "retry" else "fail"


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
