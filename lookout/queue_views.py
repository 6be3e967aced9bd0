"""Lookout's queue pages: the queues the viewer may watch, found by name and a page at a time,
with their priority factor, current and fair share, jobs per state and retry policies; one
queue's page (with its resource limits by priority class, shown, not edited: the queue
page has no form for queue fields); cordon and uncordon.

Shares come from ``armada.services.queue_shares``; paging and finding by name from
``lookout.lists``; cordoning goes through ``armada.services.queues.queue_set_cordoned``
(which needs the global ``cordon_queue`` permission and refuses otherwise: 403 here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from armada.core.quantity_text import readable_resources
from armada.core.queues import FRACTION, FRACTION_BY_POOL
from armada.core.states import JobState
from armada.models import Queue
from armada.services.authz import can_on_queue, has_global, watchable_queues
from armada.services.errors import NotFound, PermissionDenied
from armada.services.queue_shares import queue_shares
from armada.services.queues import queue_set_cordoned
from lookout.access import QUEUES, page_view
from lookout.chart_scales import plain_number
from lookout.lists import Find, list_response, name_page
from lookout.queue_permission_views import permissions_context
from lookout.views import forbidden

STATES = [s.value for s in JobState]


def _visible(names: list[str] | None) -> QuerySet[Queue]:
    """The queues of ``names`` (``watchable_queues``: None for all of them)."""
    return Queue.objects.all() if names is None else Queue.objects.filter(name__in=names)


@dataclass(frozen=True)
class LimitRow:
    """One row of a queue page's limits table: a priority class and resource, the queue's
    limit for it in every pool (None: only per-pool ones) and its per-pool overrides."""

    priority_class: str
    resource: str
    limit: str | None
    by_pool: list[tuple[str, str]]


def _percent(fraction: float) -> str:
    """``0.3`` -> ``30%``; ``1e-07`` -> ``0.00001%`` (never in exponent form)."""
    return f"{plain_number(fraction * 100, digits=4)}%"


def limit_rows(limits: Mapping[str, Any]) -> list[LimitRow]:
    """A queue's stored ``resourceLimitsByPriorityClassName`` as table rows: one per priority
    class and resource (a class that sets nothing gets one row with no resource)."""
    rows = []
    for priority_class, entry in sorted(limits.items()):
        fractions = entry.get(FRACTION) or {}
        by_pool = entry.get(FRACTION_BY_POOL) or {}
        resources = list(fractions)
        for pool_entry in by_pool.values():
            resources += [r for r in pool_entry.get(FRACTION) or {} if r not in resources]
        for resource in resources or [""]:
            overrides = [
                (pool, _percent(pool_entry[FRACTION][resource]))
                for pool, pool_entry in sorted(by_pool.items())
                if resource in (pool_entry.get(FRACTION) or {})
            ]
            limit = _percent(fractions[resource]) if resource in fractions else None
            rows.append(LimitRow(priority_class, resource, limit, overrides))
    return rows


def _pool(request: HttpRequest) -> tuple[str, list[str]]:
    pools = [p.name for p in settings.ARMADA.scheduling.pools]
    chosen = request.GET.get("pool", "")
    return (chosen if chosen in pools else ""), pools


@page_view(QUEUES)
def queue_list(request: HttpRequest) -> HttpResponse:
    """The queues the viewer may watch by name, a page at a time, ``?q=`` finding by name;
    shares and job counts are read for the page's queues only."""
    pool, pools = _pool(request)
    names = watchable_queues(request.user)
    page = name_page(_visible(names), Find.from_query(request.GET), extra={"pool": pool})
    shares = queue_shares(now=timezone.now(), queues=page.items, pool=pool or None)
    for share in shares:
        share.state_counts = [(s, share.jobs_by_state.get(s, 0)) for s in STATES]
    context = {
        "shares": shares,
        "page": page,
        "states": STATES,
        "pool": pool,
        "pools": pools,
        "can_cordon": has_global(request.user, "cordon_queue"),
        "no_queue": names == [],
    }
    return list_response(request, "lookout/queues.html", "lookout/_queues_results.html", context)


@login_required
def queue_detail(request: HttpRequest, name: str) -> HttpResponse:
    queue = Queue.objects.filter(name=name).first()
    if queue is None:
        raise Http404(f"queue {name!r} does not exist")
    if not can_on_queue(request.user, queue, "watch"):
        return forbidden(
            request, f"you may not watch queue {name!r}: it needs the 'watch' permission"
        )
    return render_queue_page(request, queue)


def render_queue_page(
    request: HttpRequest, queue: Queue, *, permission_form: Any = None, status: int = 200
) -> HttpResponse:
    """A queue's page; ``permission_form``: the permissions form as sent, with its problems
    (``lookout.queue_permission_views``, which answers it with status 400)."""
    pool, pools = _pool(request)
    [share] = queue_shares(now=timezone.now(), queues=[queue], pool=pool or None)
    share.state_counts = [(s, share.jobs_by_state.get(s, 0)) for s in STATES]
    return render(
        request,
        "lookout/queue.html",
        {
            "queue": queue,
            "share": share,
            "requested": readable_resources(share.allocated),
            "limit_rows": limit_rows(queue.resource_limits_by_priority_class_name or {}),
            "pool": pool,
            "pools": pools,
            "can_cordon": has_global(request.user, "cordon_queue"),
            "verbs": [
                v
                for v in ("submit", "cancel", "preempt", "reprioritize", "watch")
                if can_on_queue(request.user, queue, v)
            ],
            **permissions_context(request, queue, permission_form),
        },
        status=status,
    )


@login_required
@require_POST
def queue_cordon(request: HttpRequest, name: str) -> HttpResponse:
    """Cordon (``cordon=1``) or uncordon (``cordon=0``) a queue, then back to where the form
    was (the queue list or the queue's page)."""
    cordoned = request.POST.get("cordon") == "1"
    try:
        queue_set_cordoned(actor=request.user, name=name, cordoned=cordoned, now=timezone.now())
    except PermissionDenied as exc:
        return forbidden(request, str(exc))
    except NotFound as exc:
        raise Http404(str(exc)) from None
    messages.success(request, f"Queue {name} {'cordoned' if cordoned else 'uncordoned'}.")
    back = request.POST.get("next", "")
    if back not in (reverse("lookout:queues"), reverse("lookout:queue", args=[name])):
        back = reverse("lookout:queues")
    return redirect(back)
