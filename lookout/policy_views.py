"""Lookout pages for retry policies: list (find by name, keyset pages), detail (YAML, rules,
queues, history, diff, rule tester), create, edit, validate (JSON, for the editor's Validate
button), attach, detach and delete.

Views are thin: reads and writes go through ``armada.services.policies`` (which checks every
permission through ``services.authz``); presentation helpers live in ``lookout.policy_text``,
the list pages' paging in ``lookout.lists`` and the rule tester in ``lookout.tester`` and
``lookout.policy_tester``. Reading needs a login and the policy read permission; a person
without it gets 403, an anonymous one the login page.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from armada.core.policy import API_VERSION, KIND
from armada.models import RetryPolicy
from armada.services import policies as policy_services
from armada.services.authz import has_global
from armada.services.errors import (
    Conflict,
    FailedPrecondition,
    NotFound,
    PermissionDenied,
    ValidationFailed,
)
from armada.services.queues import queue_list
from armada.web.inputs import checks_own_text, whole_number
from lookout.access import POLICIES, forbidden, page_view
from lookout.forms import AttachForm
from lookout.lists import Find, list_response, name_page
from lookout.policy_tester import tester_context
from lookout.policy_text import (
    TextError,
    YAMLTextError,
    diff_context,
    document_yaml,
    field_line,
    load_yaml,
    locate,
    rules_text,
)

NEW_POLICY_TEMPLATE = f"""apiVersion: {API_VERSION}
kind: {KIND}
name: my-policy
retryLimit: 3
defaultAction: Fail
rules:
  - action: Fail
    onCategory: user-error
  - action: Retry
    onCategory: oom
    mutate:
      resources:
        memory:
          factor: 1.5
"""

View = Callable[..., HttpResponse]


def policy_reader(view: View) -> View:
    """Log in first; then the policy read permission (``access.POLICIES``, which the menu
    asks too), else 403 naming what is missing; a refusal inside the view is a 403 too."""

    @page_view(POLICIES)
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            return forbidden(request, str(exc))
        except NotFound as exc:
            raise Http404(str(exc)) from None

    return wrapper


def _can(request: HttpRequest) -> dict[str, bool]:
    user = request.user
    return {
        "can_create": has_global(user, "create_retry_policy"),
        "can_edit": has_global(user, "update_retry_policy"),
        "can_delete": has_global(user, "delete_retry_policy"),
        "can_attach": has_global(user, "create_queue"),
    }


@require_GET
@policy_reader
def policy_list(request: HttpRequest) -> HttpResponse:
    """Policies by name, a page at a time, with ``?q=`` to find one by name."""
    page = name_page(RetryPolicy.objects.all(), Find.from_query(request.GET))
    users = policy_services.queues_by_policy()
    rows = [
        {"policy": p, "rules": len(p.rules or []), "queues": users.get(p.name, [])}
        for p in page.items
    ]
    context = {"rows": rows, "page": page, **_can(request)}
    return list_response(
        request, "lookout/policies.html", "lookout/_policies_results.html", context
    )


@require_GET
@policy_reader
def policy_detail(request: HttpRequest, name: str) -> HttpResponse:
    policy = policy_services.policy_get(name=name)
    versions = policy_services.policy_versions(policy=policy)
    chosen = whole_number(request.GET.get("diff", ""))
    queues = queue_list()
    using = [
        {"name": q.name, "position": q.retry_policies.index(name) + 1}
        for q in queues
        if name in (q.retry_policies or [])
    ]
    attachable = [q.name for q in queues if (q.retry_policies or [])[:1] != [name]]
    context = {
        "policy": policy,
        "yaml": document_yaml(policy_services.policy_file(policy)),
        "rules": rules_text(policy.rules),
        "queues": using,
        "versions": versions,
        "attach": AttachForm(queues=attachable),
        **diff_context(versions, chosen),
        **tester_context(request.GET, actor=request.user, policy=policy),
        **_can(request),
    }
    return render(request, "lookout/policy.html", context)


def _load(text: str) -> tuple[Any, list[TextError]]:
    """The data of the typed text, or its problems with their lines: the API's checks of a
    YAML body (``policy_text.load_yaml``), so that the editor takes exactly what the API
    takes."""
    try:
        return load_yaml(text), []
    except YAMLTextError as exc:
        return None, [exc.error]
    except ValidationFailed as exc:
        return None, locate(text, exc.errors)


def _editor(
    request: HttpRequest,
    *,
    policy: RetryPolicy | None,
    text: str,
    errors: list[TextError],
    base_version: int | None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "policy": policy,
        "text": text,
        "errors": errors,
        "base_version": base_version,
        "validate_url": reverse("lookout:policy-validate"),
        **_can(request),
    }
    return render(request, "lookout/policy_edit.html", context, status=status)


def _save(request: HttpRequest, policy: RetryPolicy | None) -> HttpResponse:
    """Validate and save the typed document; on any error re-show it, saving nothing."""
    text = request.POST.get("document", "")
    base_version = whole_number(request.POST.get("base_version", ""))
    data, errors = _load(text)
    if not errors:
        try:
            if policy is None:
                saved = policy_services.policy_create(
                    actor=request.user, data=data, now=timezone.now()
                )
            else:
                saved = policy_services.policy_update(
                    actor=request.user,
                    name=policy.name,
                    data=data,
                    now=timezone.now(),
                    expected_version=base_version,
                )
        except ValidationFailed as exc:
            errors = locate(text, exc.errors)
        except Conflict as exc:
            field = "name" if policy is None else ""
            errors = [TextError(field, str(exc), field_line(text, field))]
        else:
            messages.success(request, f"Saved {saved.name}, version {saved.version}.")
            return redirect(reverse("lookout:policy", args=[saved.name]) + "#history")
    return _editor(request, policy=policy, text=text, errors=errors, base_version=base_version)


@checks_own_text("document")
@require_http_methods(["GET", "POST"])
@policy_reader
def policy_new(request: HttpRequest) -> HttpResponse:
    if not has_global(request.user, "create_retry_policy"):
        raise PermissionDenied(
            "creating retry policies needs the global 'create_retry_policy' permission"
        )
    if request.method == "POST":
        return _save(request, None)
    return _editor(request, policy=None, text=NEW_POLICY_TEMPLATE, errors=[], base_version=None)


@checks_own_text("document")
@require_http_methods(["GET", "POST"])
@policy_reader
def policy_edit(request: HttpRequest, name: str) -> HttpResponse:
    policy = policy_services.policy_get(name=name)
    if not has_global(request.user, "update_retry_policy"):
        raise PermissionDenied(
            "editing retry policies needs the global 'update_retry_policy' permission"
        )
    if request.method == "POST":
        return _save(request, policy)
    text = document_yaml(policy_services.policy_file(policy))
    return _editor(request, policy=policy, text=text, errors=[], base_version=policy.version)


@checks_own_text("document")
@require_POST
def policy_validate(request: HttpRequest) -> JsonResponse:
    """Check a typed document without saving it: ``{"valid": bool, "errors": [{field,
    message, line}]}``. Answers 200 whether or not the document is valid (the check itself
    worked); 403 without a login or the read permission. CSRF-protected like every POST."""
    if not policy_services.can_read_policies(request.user):
        return JsonResponse(
            {"detail": "log in with the permission to read retry policies"}, status=403
        )
    text = request.POST.get("document", "")
    name = request.POST.get("name") or None
    data, errors = _load(text)
    if not errors:
        try:
            policy_services.policy_validate(data=data, name=name)
        except ValidationFailed as exc:
            errors = locate(text, exc.errors)
    return JsonResponse({"valid": not errors, "errors": [e.as_json() for e in errors]})


def _queue_action(request: HttpRequest, name: str, action: str) -> HttpResponse:
    policy = policy_services.policy_get(name=name)
    queue = request.POST.get("queue", "")
    try:
        if action == "attach":
            form = AttachForm(request.POST, queues=[q.name for q in queue_list()])
            if not form.is_valid():
                raise ValidationFailed.one("queue", "choose one of the queues")
            policy_services.policy_attach(
                actor=request.user,
                name=policy.name,
                queue=form.cleaned_data["queue"],
                first=form.cleaned_data["first"],
                now=timezone.now(),
            )
            messages.success(request, f"Attached {policy.name} to queue {queue}.")
        else:
            policy_services.policy_detach(
                actor=request.user, name=policy.name, queue=queue, now=timezone.now()
            )
            messages.success(request, f"Detached {policy.name} from queue {queue}.")
    except (ValidationFailed, NotFound, Conflict) as exc:
        messages.error(request, str(exc))
    return redirect(reverse("lookout:policy", args=[policy.name]) + "#queues")


@require_POST
@policy_reader
def policy_attach(request: HttpRequest, name: str) -> HttpResponse:
    return _queue_action(request, name, "attach")


@require_POST
@policy_reader
def policy_detach(request: HttpRequest, name: str) -> HttpResponse:
    return _queue_action(request, name, "detach")


@require_http_methods(["GET", "POST"])
@policy_reader
def policy_delete(request: HttpRequest, name: str) -> HttpResponse:
    """GET asks for a confirmation that says which queues use the policy; POST deletes it,
    as the API does: refused (409, naming the queues) while any queue names it, and 403
    without ``delete_retry_policy``."""
    policy = policy_services.policy_get(name=name)
    if not has_global(request.user, "delete_retry_policy"):
        raise PermissionDenied(
            "deleting retry policies needs the global 'delete_retry_policy' permission"
        )
    refusal = ""
    if request.method == "POST":
        try:
            policy_services.policy_delete(actor=request.user, name=policy.name)
        except FailedPrecondition as exc:
            refusal = str(exc)
        else:
            messages.success(
                request,
                f"Deleted retry policy {policy.name}; its saved versions stay in the admin.",
            )
            return redirect("lookout:policies")
    context = {
        "policy": policy,
        "queues": policy_services.queues_using(policy.name),
        "is_default": settings.ARMADA.scheduling.retry_policy.default_policy_name == policy.name,
        "refusal": refusal,
    }
    return render(request, "lookout/policy_delete.html", context, status=409 if refusal else 200)
