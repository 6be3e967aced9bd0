"""Lookout's own login and logout. Every active user logs in here (the admin's login takes
staff only); what they then see and may do is decided by their permissions, through the
permission funnel (``armada.services.authz``), never by staff status.

The login form counts failures with the API and the admin (``armada.auth_forms``): a
locked-out user gets the form back with how long to wait (429 with ``Retry-After``).
"""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.http import HttpResponse

from armada.auth_forms import LoginForm, throttled_answer


class LoginView(auth_views.LoginView):
    template_name = "lookout/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def form_invalid(self, form: LoginForm) -> HttpResponse:
        response = super().form_invalid(form)
        if form.throttled is None:
            response.status_code = 400
        return throttled_answer(response, form)  # 429, or 503 while logins are paused


class LogoutView(auth_views.LogoutView):
    """POST only (a link cannot log anyone out); back to the login page."""
