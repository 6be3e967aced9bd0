"""The grid toolbar's tag: which bulk actions to offer the viewer."""

from __future__ import annotations

from typing import Any

from django import template

from armada.services.job_bulk import actions_allowed

register = template.Library()


@register.simple_tag(takes_context=True)
def bulk_actions_allowed(context: Any) -> set[str]:
    """The actions (cancel, reprioritize, preempt) the viewer may do on at least one queue
    they may watch; the toolbar hides the others (the server checks every job anyway)."""
    request = context.get("request")
    return actions_allowed(getattr(request, "user", None))
