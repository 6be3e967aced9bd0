"""A queue's permissions on its Lookout page: who is granted which verbs (one row per user
or group), and for those who may change them (the global ``create_queue``, as for every
field of a queue) a form that grants or revokes verbs for a user or group, and a Remove
button per row (every verb of that subject).

The change goes through ``armada.services.queue_grants`` (the service of the API's
``POST /queues/{name}/grant|revoke``). A refused change answers the queue's page again with
status 400 and the problems beside the fields they name; a plain form, so it works without
JavaScript; CSRF-protected as every Lookout form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from armada.core.errors import ValidationFailed
from armada.core.queues import SUBJECT_KINDS, VERBS
from armada.models import Queue
from armada.services.authz import has_global
from armada.services.errors import NotFound, PermissionDenied
from armada.services.queue_grants import ACTIONS, queue_permissions_change
from lookout.views import forbidden

KIND_TEXT = {"User": "user", "Group": "group"}
# The service's field -> the form's (subjects[0] is the one subject the form sends).
FORM_FIELDS = {"subjects": "subject", "verbs": "verbs", "action": "action"}


class PermissionForm(forms.Form):
    """A user or group and the verbs to grant or revoke (none, on revoke: every verb); the
    button pressed (``action``) says which. Checked here for shape only; what a grant may
    hold is the service's to say."""

    kind = forms.ChoiceField(
        label="User or group", choices=[(k, KIND_TEXT[k]) for k in SUBJECT_KINDS]
    )
    subject = forms.CharField(label="Name", max_length=253)
    verbs = forms.MultipleChoiceField(
        label="Verbs",
        required=False,
        choices=[(v, v) for v in VERBS],
        widget=forms.CheckboxSelectMultiple,
    )
    action = forms.ChoiceField(
        label="Grant or revoke", choices=[(a, a) for a in ACTIONS], widget=forms.HiddenInput
    )


@dataclass(frozen=True)
class PermissionRow:
    kind: str
    name: str
    verbs: list[str]

    @property
    def who(self) -> str:
        return f"{KIND_TEXT.get(self.kind, self.kind)} {self.name}"


def permission_rows(queue: Queue) -> list[PermissionRow]:
    """One row per user or group the queue's grants name, with every verb they give it (in
    the verbs' usual order), users first, then by name."""
    held: dict[tuple[str, str], set[str]] = {}
    for grant in queue.permissions or []:
        for subject in grant.get("subjects", []):
            held.setdefault((subject["kind"], subject["name"]), set()).update(
                grant.get("verbs", [])
            )
    return [
        PermissionRow(kind, name, [v for v in VERBS if v in verbs])
        for (kind, name), verbs in sorted(
            held.items(), key=lambda item: (item[0][0] != "User", item[0][1])
        )
    ]


def permissions_context(
    request: HttpRequest, queue: Queue, form: PermissionForm | None = None
) -> dict[str, Any]:
    """What the queue page's Permissions section needs."""
    can_edit = has_global(request.user, "create_queue")
    return {
        "permission_rows": permission_rows(queue),
        "can_edit_permissions": can_edit,
        "permission_form": form if form is not None else (PermissionForm() if can_edit else None),
    }


def _errors_onto(form: PermissionForm, failed: ValidationFailed) -> None:
    for error in failed.errors:
        field = FORM_FIELDS.get(error.field.split("[", 1)[0])
        form.add_error(field if field in form.fields else None, error.message)


@login_required
@require_POST
def queue_permissions(request: HttpRequest, name: str) -> HttpResponse:
    """Grant (``action=grant``) or revoke (``action=revoke``) ``verbs`` for the user or group
    ``kind``/``subject``, then back to the queue's page; a refused change is a 400 page."""
    from lookout.queue_views import render_queue_page

    queue = Queue.objects.filter(name=name).first()
    if queue is None:
        raise Http404(f"queue {name!r} does not exist")
    if not has_global(request.user, "create_queue"):
        return forbidden(
            request,
            f"you may not change the permissions of queue {name!r}: it needs the global "
            "'create_queue' permission",
        )
    form = PermissionForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        body = {
            "subjects": [{"kind": data["kind"], "name": data["subject"]}],
            "verbs": data["verbs"],
        }
        try:
            queue = queue_permissions_change(
                actor=request.user, name=name, action=data["action"], data=body, now=timezone.now()
            )
        except PermissionDenied as exc:
            return forbidden(request, str(exc))
        except NotFound as exc:
            raise Http404(str(exc)) from None
        except ValidationFailed as exc:
            _errors_onto(form, exc)
        else:
            verbs = ", ".join(data["verbs"]) or "every verb"
            who = f"{KIND_TEXT[data['kind']]} {data['subject'].strip()}"
            done = (
                f"Granted {verbs} to {who}"
                if data["action"] == "grant"
                else f"Revoked {verbs} from {who}"
            )
            messages.success(request, f"{done} on queue {name}.")
            return redirect(reverse("lookout:queue", args=[name]) + "#permissions")
    return render_queue_page(request, queue, permission_form=form, status=400)
