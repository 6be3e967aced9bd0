"""Small display filters for Lookout's templates."""

from __future__ import annotations

from datetime import datetime

from django import template

from armada.services.retry_cost_reads import hours_text

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """``3725`` -> ``"1h 2m"``; ``42`` -> ``"42s"``; None -> ``""``."""
    if seconds is None:
        return ""
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


@register.filter
def since(moment: datetime | None, now: datetime) -> str:
    """How long ago ``moment`` was, as of ``now`` (see ``duration``)."""
    if moment is None:
        return ""
    return duration(max(0.0, (now - moment).total_seconds()))


@register.filter
def runtime(row, now: datetime) -> str:
    """A jobs-table row's runtime (its latest run's), as of ``now``."""
    return duration(row.runtime_seconds(now))


@register.filter
def percent(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value * 100:.1f}%"


@register.filter
def resource_hours(value: float | None, what: str) -> str:
    """Resource-hours in the unit that fits: ``1.2 core-hours``, ``18 core-seconds``."""
    return hours_text(float(value or 0.0), what)
