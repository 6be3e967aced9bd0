"""The rule tester's part of the policy page: the form read from the page's query string,
the failure it describes (a run by id, a category, or raw signals labelled by an
executor's categorizer) and the verdict of ``lookout.tester.evaluate``. Any problem is put
on the form, naming its field; nothing is written."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict

from armada.models import RetryPolicy
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from lookout.forms import TesterForm
from lookout.tester import Outcome, categorize, evaluate, executor_ids, failure_of_run


def tester_context(query: QueryDict, *, actor: Any, policy: RetryPolicy) -> dict[str, Any]:
    """The tester's form and, when it was submitted (``?test=1``) and is valid, its
    outcome."""
    executors = executor_ids()
    if "test" not in query:
        return {"tester": TesterForm(executors=executors)}
    form = TesterForm(query, executors=executors)
    outcome: Outcome | None = None
    if form.is_valid():
        try:
            outcome = _evaluate(form, actor=actor, policy=policy)
        except ValidationFailed as exc:
            for error in exc.errors:
                target = error.field if error.field in form.fields else None
                form.add_error(target, error.message)
        except (PermissionDenied, NotFound) as exc:
            form.add_error("run", str(exc))
    return {"tester": form, "outcome": outcome}


def _evaluate(form: TesterForm, *, actor: Any, policy: RetryPolicy) -> Outcome:
    run_id = form.cleaned_data.get("run")
    if run_id:
        failure, run = failure_of_run(actor=actor, run_id=run_id)
        return evaluate(
            policy=policy,
            failure=failure,
            source=f"run {run.id} of job {run.job_id} (queue {run.job.queue_id})",
            recorded=run.decision or None,
        )
    signals = form.signals()
    if signals is None:
        data = form.cleaned_data
        failure = form.failure(data["category"], data.get("subcategory") or "")
        return evaluate(policy=policy, failure=failure, source="the failure typed in")
    labels = categorize(signals)
    return evaluate(
        policy=policy,
        failure=form.failure(labels.category, labels.subcategory),
        source=f"the failure typed in, labelled by executor {signals.executor}",
        categorization=labels,
    )
