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
    TokenLifetimes,
    token_create,
    token_expiry,
    token_get,
    token_list,
    token_revoke,
)
from lookout.access import TOKENS, page_view

# The usual lives offered, in days; the configured default is added when it is none of them.
OFFERED_DAYS = (7, 30, 90, 365)
NEVER = "never"
# The service's field names, as the form calls them.
FORM_FIELDS = {"name": "name", "expiresIn": "expires", "expiresAt": "expires"}


def _span_label(seconds: float) -> str:
    days = seconds / 86400
    if days == 365:
        return "in a year"
    if days.is_integer():
        return f"in {days:g} day{'' if days == 1 else 's'}"
    return f"in {seconds / 3600:g} hours"


def _span_value(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:g}d" if days.is_integer() else f"{seconds:g}s"


def expiry_choices(lifetimes: TokenLifetimes) -> tuple[list[tuple[str, str]], str]:
    """The lives offered (none past ``auth.tokenMaxLifetime``; "never" only when there is no
    maximum) and the one chosen at first (``auth.tokenLifetime``)."""
    spans = {days * 86400.0 for days in OFFERED_DAYS}
    if lifetimes.default:
        spans.add(lifetimes.default)
    choices = [
        (_span_value(s), _span_label(s))
        for s in sorted(spans)
        if not lifetimes.most or s <= lifetimes.most
    ]
    if not lifetimes.most:
        choices.append((NEVER, "never"))
    initial = _span_value(lifetimes.default) if lifetimes.default else NEVER
    return choices, initial


class TokenForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=NAME_MAX_CHARS,
        help_text="Where the token is used, e.g. laptop or nightly-ci.",
    )
    expires = forms.ChoiceField(label="Expires", required=False)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, label_suffix="", **kwargs)
        choices, initial = expiry_choices(TokenLifetimes.configured())
        self.fields["expires"].choices = choices
        self.fields["expires"].initial = initial


def _create(request: HttpRequest, form: TokenForm) -> NewToken | None:
    """The new token, or None with the problems added to ``form``."""
    if not form.is_valid():
        return None
    now = timezone.now()
    try:
        chosen = form.cleaned_data["expires"]
        lifetimes = TokenLifetimes.configured()
        if chosen == NEVER:  # offered only when no maximum is configured
            lifetimes = TokenLifetimes(default=0.0, most=lifetimes.most)
        expires_at = token_expiry(
            expires_in=None if chosen == NEVER else chosen or None, now=now, lifetimes=lifetimes
        )
        return token_create(
            user=request.user, name=form.cleaned_data["name"], expires_at=expires_at, now=now
        )
    except ValidationFailed as exc:
        for error in exc.errors:
            form.add_error(FORM_FIELDS.get(error.field), error.message)
    except Conflict as exc:
        form.add_error("name", str(exc))
    return None


@page_view(TOKENS)
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
