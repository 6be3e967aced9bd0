"""Forms of the Lookout policy pages: the rule tester and attaching a policy to a queue.

The policy editor itself is a plain textarea: its text goes to the policy services, which
validate it with the core, so no form field duplicates a rule of the policy format.
"""

from __future__ import annotations

from typing import Any

from django import forms

from armada.core.retry import Failure
from lookout.tester import CONDITIONS, Signals


class TesterForm(forms.Form):
    """A failure to try a policy on: a run id, or a pasted failure.

    A pasted failure gives its category (and subcategory) directly, or leaves the category
    empty and gives what the pod reported, for the chosen executor's categorizer to label.
    """

    run = forms.CharField(
        label="Run id", required=False, max_length=26, help_text="A failed or expired run."
    )
    category = forms.CharField(label="Failure category", required=False, max_length=63)
    subcategory = forms.CharField(label="Subcategory", required=False, max_length=63)
    executor = forms.ChoiceField(
        label="Categorize with executor",
        required=False,
        help_text="Used when the category is empty.",
    )
    exit_code = forms.IntegerField(label="Exit code", required=False)
    condition = forms.ChoiceField(
        label="Condition",
        required=False,
        choices=[("", "none"), *((c, c) for c in CONDITIONS)],
    )
    termination_message = forms.CharField(
        label="Termination message", required=False, max_length=4096
    )
    pod_error = forms.CharField(label="Pod error", required=False, max_length=4096)
    retries_used = forms.IntegerField(
        label="Retries already used", min_value=0, initial=0, required=False
    )
    gang_cardinality = forms.IntegerField(
        label="Gang size", min_value=1, initial=1, required=False, help_text="1 for a plain job."
    )
    fail_fast = forms.BooleanField(label="failFast job", required=False)
    lease_expired = forms.BooleanField(label="Lease expired (executor lost)", required=False)

    def __init__(self, *args: Any, executors: list[str], **kwargs: Any) -> None:
        super().__init__(*args, label_suffix="", **kwargs)
        self.fields["executor"].choices = [(e, e) for e in executors]
        if executors:
            self.fields["executor"].initial = executors[0]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors or data.get("run"):
            return data
        raw = (
            data.get("exit_code") is not None
            or data.get("condition")
            or data.get("termination_message")
            or data.get("pod_error")
        )
        if not data.get("category") and not raw and not data.get("lease_expired"):
            raise forms.ValidationError(
                "Give a run id, a failure category, or what the pod reported "
                "(exit code, condition, termination message or pod error)."
            )
        if data.get("subcategory") and not data.get("category"):
            self.add_error("subcategory", "Give the category too, or leave both empty.")
        if not data.get("category") and raw and not data.get("executor"):
            self.add_error("executor", "Choose the executor whose categorizer labels the failure.")
        return data

    def signals(self) -> Signals | None:
        """The raw signals to categorize, or None when the category was given."""
        data = self.cleaned_data
        if data.get("category") or data.get("run"):
            return None
        return Signals(
            executor=data.get("executor") or "",
            exit_code=data.get("exit_code"),
            condition=data.get("condition") or "",
            termination_message=data.get("termination_message") or "",
            pod_error=data.get("pod_error") or "",
        )

    def failure(self, category: str, subcategory: str) -> Failure:
        data = self.cleaned_data
        return Failure(
            category=category,
            subcategory=subcategory,
            retries_used=data.get("retries_used") or 0,
            gang_cardinality=data.get("gang_cardinality") or 1,
            fail_fast=bool(data.get("fail_fast")),
            lease_expired=bool(data.get("lease_expired")),
        )


class AttachForm(forms.Form):
    queue = forms.ChoiceField(label="Queue")
    first = forms.BooleanField(
        label="Make it the evaluated policy (first in the queue's list)",
        required=False,
        initial=True,
    )

    def __init__(self, *args: Any, queues: list[str], **kwargs: Any) -> None:
        super().__init__(*args, label_suffix="", **kwargs)
        self.fields["queue"].choices = [(q, q) for q in queues]
