"""Lookout's API tokens page: create a token (its key shown once), list yours, revoke one
after a confirmation. Every logged-in user manages their own tokens and no one else's;
``armada.services.tokens`` decides."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from armada.services.errors import Conflict, NotFound, ValidationFailed
from armada.services.tokens import (
    NAME_MAX_CHARS,
    NewToken,
    token_create,
    token_expiry,
    token_get,
    token_list,
    token_revoke,
)

EXPIRY_CHOICES = [
    ("7d", "in 7 days"),
    ("30d", "in 30 days"),
    ("90d", "in 90 days"),
    ("365d", "in a year"),
    ("", "never"),
]
# The service's field names, as the form calls them.
FORM_FIELDS = {"name": "name", "expiresIn": "expires", "expiresAt": "expires"}


class TokenForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=NAME_MAX_CHARS,
        help_text="Where the token is used, e.g. laptop or nightly-ci.",
    )
    expires = forms.ChoiceField(
        label="Expires", choices=EXPIRY_CHOICES, initial="90d", required=False
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, label_suffix="", **kwargs)


def _create(request: HttpRequest, form: TokenForm) -> NewToken | None:
    """The new token, or None with the problems added to ``form``."""
    if not form.is_valid():
        return None
    now = timezone.now()
    try:
        expires_at = token_expiry(expires_in=form.cleaned_data["expires"] or None, now=now)
        return token_create(
            user=request.user, name=form.cleaned_data["name"], expires_at=expires_at, now=now
        )
    except ValidationFailed as exc:
        for error in exc.errors:
            form.add_error(FORM_FIELDS.get(error.field), error.message)
    except Conflict as exc:
        form.add_error("name", str(exc))
    return None


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    new = None
    status = 200
    if request.method == "POST":
        form = TokenForm(request.POST)
        new = _create(request, form)
        if new is None:
            status = 400
        else:
            form = TokenForm()
    else:
        form = TokenForm()
    context = {
        "form": form,
        "new": new,
        "tokens": token_list(user=request.user),
        "now": timezone.now(),
    }
    response = render(request, "lookout/tokens.html", context, status=status)
    if new is not None:
        # The key is in this page only: no cache may keep it.
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_http_methods(["GET", "POST"])
def token_revoke_view(request: HttpRequest, token_id: str) -> HttpResponse:
    """GET asks for a confirmation; POST revokes."""
    try:
        token = token_get(user=request.user, token_id=token_id)
        if request.method == "POST":
            token_revoke(user=request.user, token_id=token.pk, now=timezone.now())
            messages.success(request, f"Token {token.name} revoked: its key no longer works.")
            return redirect("lookout:tokens")
    except NotFound as exc:
        raise Http404(str(exc)) from None
    return render(request, "lookout/token_revoke.html", {"token": token})
