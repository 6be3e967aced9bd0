"""The login forms of the browser: Lookout's (any active user) and the admin's (staff).

Both go through the failed-login throttle (``services.login_throttle``) shared with the
API's Basic auth: a locked-out username or address is refused before its password is
checked, with a form error saying how long to wait, and the page answers 429 (503 while
password logins are paused) with ``Retry-After`` (:func:`throttled_answer`): Lookout's login
view, and the admin's through :func:`admin_login`, which ``armada.urls`` routes in front of
the admin's own.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse

from armada.services import login_throttle


class ThrottledLoginMixin:
    """For ``AuthenticationForm`` and its subclasses; needs the form's ``request``."""

    request: Any
    cleaned_data: dict[str, Any]
    user_cache: Any
    # Set when the attempt was refused by the throttle (for the 429 and Retry-After).
    throttled: login_throttle.Refusal | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        password = self.cleaned_data.get("password")
        if not username or not password:
            return super().clean()  # type: ignore[misc]
        address = str(self.request.META.get("REMOTE_ADDR") or "") if self.request else ""
        refusal = login_throttle.login_refusal(
            username=username, address=address, now=login_throttle.wall_clock()
        )
        if refusal is not None:
            self.throttled = refusal
            message = refusal.message[0].upper() + refusal.message[1:] + "."
            raise forms.ValidationError(message, code="throttled")
        try:
            cleaned = super().clean()  # type: ignore[misc]
        except forms.ValidationError:
            if self.user_cache is None:  # a wrong password, not a refused (non-staff) user
                login_throttle.login_failed(
                    username=username, address=address, now=login_throttle.wall_clock()
                )
            raise
        login_throttle.login_succeeded(username=username)
        return cleaned


class LoginForm(ThrottledLoginMixin, AuthenticationForm):
    """Lookout's login: every active user; what they then see is up to their permissions."""


class AdminLoginForm(ThrottledLoginMixin, AdminAuthenticationForm):
    """The admin's login: staff only, as before, with the same throttle."""


def throttled_answer(response: HttpResponse, form: Any) -> HttpResponse:
    """A login page's answer when the throttle refused its form: the refusal's status (429,
    or 503 while password logins are paused) and ``Retry-After``; any other answer as is."""
    refusal = getattr(form, "throttled", None)
    if refusal is not None:
        response.status_code = refusal.status
        response["Retry-After"] = str(refusal.wait)
    return response


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login page (``admin.site.login``, with :class:`AdminLoginForm`), answering
    a throttled attempt as Lookout's login does instead of with 200."""
    response = admin.site.login(request)
    form = (getattr(response, "context_data", None) or {}).get("form")
    return throttled_answer(response, form)
