"""Who may open each page of Lookout's main menu: one :class:`Page` per menu entry, whose
``refusal`` is the one check both the page's view (through :func:`page_view`) and the menu
(``lookout.templatetags.lookout_menu``) ask, so the menu offers a page exactly when it opens.

A page with ``login`` sends a visitor who is not logged in to the login page (as
``login_required`` does), so the menu offers it only to a logged-in user; then
``refusal(request)`` is None when the page opens (200) or the reason it answers 403.
What a page that opens shows is narrowed by the viewer's queues (``services.authz``):
opening it is not seeing every queue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from armada.services.errors import PermissionDenied
from armada.services.policies import require_policy_reader

Refusal = Callable[[HttpRequest], str | None]
View = Callable[..., HttpResponse]


def _anyone(request: HttpRequest) -> str | None:
    return None


def _policy_reader(request: HttpRequest) -> str | None:
    try:
        require_policy_reader(request.user)
    except PermissionDenied as exc:
        return str(exc)
    return None


def _admin_site(request: HttpRequest) -> str | None:
    # Django's admin opens for active staff users, asking this same check.
    if admin.site.has_permission(request):
        return None
    return "the admin is for active staff users"


@dataclass(frozen=True)
class Page:
    """A main-menu page: its label, where it is (a URL name, or a path outside Lookout),
    the URL names that mark it as the current page, and who may open it."""

    label: str
    url_name: str = ""
    path: str = ""
    current: tuple[str, ...] = ()
    refusal: Refusal = _anyone
    login: bool = True

    @property
    def href(self) -> str:
        return reverse(self.url_name) if self.url_name else self.path

    def opens_for(self, request: HttpRequest) -> bool:
        """Whether the page answers ``request``'s user 200 (not a login redirect, not 403)."""
        if self.login and not request.user.is_authenticated:
            return False
        return self.refusal(request) is None


JOBS = Page("Jobs", "lookout:jobs", current=("jobs", "job"))
QUEUES = Page("Queues", "lookout:queues", current=("queues", "queue"))
POLICIES = Page(
    "Retry policies",
    "lookout:policies",
    current=(
        "policies",
        "policy",
        "policy-new",
        "policy-edit",
        "policy-validate",
        "policy-backtest",
        "policy-delete",
        "policy-attach",
        "policy-detach",
    ),
    refusal=_policy_reader,
)
DECISION_METRICS = Page(
    "Decision metrics", "lookout:decision-metrics", current=("decision-metrics",)
)
RETRY_COST = Page("Retry cost", "lookout:retry-cost", current=("retry-cost",))
TOKENS = Page("Tokens", "lookout:tokens", current=("tokens", "token-revoke"))
API_DOCS = Page("API", path="/api/v1/docs", login=False)  # the schema's pages open for anyone
ADMIN = Page("Admin", path="/admin/", refusal=_admin_site, login=False)

MENU: tuple[Page, ...] = (
    JOBS,
    QUEUES,
    POLICIES,
    DECISION_METRICS,
    RETRY_COST,
    TOKENS,
    API_DOCS,
    ADMIN,
)


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    """Lookout's 403 page, saying why."""
    return render(request, "lookout/forbidden.html", {"message": message}, status=403)


def page_view(page: Page) -> Callable[[View], View]:
    """The view of ``page``: the login page first when it needs a login, then 403 with the
    reason when ``page.refusal`` refuses (the check the menu asks too)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if page.login and not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            reason = page.refusal(request)
            if reason is not None:
                return forbidden(request, reason)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
