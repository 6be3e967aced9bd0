"""The job's long parts written as HTML in Python: the runs with their decision trails and
the event timeline. A job retried twenty times has twenty runs and hundreds of events; as
template loops (a tag, a filter and an escape per value) they were most of its page's time.

Every value is escaped here (``_text``) exactly as a template's ``{{ value }}`` escapes it;
the markup is that of ``templates/lookout/panel/_runs.html`` and ``_events.html`` before,
which the browser tests and the styles read.
"""

from __future__ import annotations

import html
from typing import Any

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from armada.models import Run


def _text(value: Any) -> str:
    """``value`` escaped for HTML, as the template's ``{{ value }}`` writes it (the standard
    library's escape: Django's adds a lazy-text check per call, thousands of times here)."""
    return html.escape(str(value))


def timeline_html(timeline: list[dict]) -> SafeString:
    """The ``<li>`` items of the Events tab's timeline (``lookout.panel_queries.job_timeline``)."""
    items = []
    for item in timeline:
        event = item["event"]
        iso, shown = item["at"]
        run = (
            f' <span class="muted">run <code>{_text(event.run_id)}</code></span>'
            if event.run_id
            else ""
        )
        highlights = "".join(
            f'<span class="kv"><span class="k">{_text(key)}</span> {_text(value)}</span>'
            for key, value in item["highlights"]
        )
        if highlights:
            highlights = f' <span class="highlights">{highlights}</span>'
        items.append(
            f'<li><time datetime="{_text(iso)}">{_text(shown)}</time> '
            f"<strong>{_text(event.type)}</strong>{run}{highlights}</li>"
        )
    return mark_safe("".join(items))  # noqa: S308 - every value is escaped above


def _fact(label: str, value_html: str, css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return f"<dt>{_text(label)}</dt><dd{cls}>{value_html}</dd>"


def _time(iso: str, shown: str) -> str:
    return f'<time datetime="{_text(iso)}">{_text(shown)}</time>'


def _run_facts(run: Run) -> list[str]:
    facts = [
        _fact("Cluster / node", f"{_text(run.executor)} / {_text(run.node or '-')}"),
        _fact("Pool", _text(run.pool or "-")),
    ]
    if run.away_node_type:
        facts.append(
            _fact(
                "Away from home",
                f"on node type {_text(run.away_node_type)}, at priority"
                f" {_text(run.scheduled_priority)} (evicted first when home jobs need the room)",
                "away",
            )
        )
    facts.extend(_fact(label, _time(iso, shown)) for label, iso, shown in run.times)
    if run.exit_code is not None:
        facts.append(_fact("Exit code", _text(run.exit_code)))
    if run.reason:
        facts.append(_fact("Reason", _text(run.reason)))
    if run.message:
        facts.append(_fact("Termination message", f"<code>{_text(run.message)}</code>"))
    if run.failure_category:
        sub = f" / {_text(run.failure_subcategory)}" if run.failure_subcategory else ""
        facts.append(
            _fact(
                "Failure category",
                f'<span class="category">{_text(run.failure_category)}</span>{sub}',
            )
        )
    if run.hint:
        facts.append(_fact("Hint", _text(run.hint), "hint"))
    if run.retryable is None:
        retryable = '<span class="muted">not decided</span>'
    else:
        retryable = "yes" if run.retryable else "no"
    facts.append(_fact("Retryable", retryable, "retryable"))
    if run.pod_kept:
        kept, iso, shown = run.pod_kept
        pod = f"<code>{_text(run.pod_name)}</code>"
        text = (
            f"{pod} is kept until {_time(iso, shown)}"
            if kept
            else f"{pod} was kept until {_time(iso, shown)} (deleted)"
        )
        facts.append(_fact("Kept pod", text, "pod-kept"))
    if run.stop_kind:
        why = f": {_text(run.stop_reason)}" if run.stop_reason else ""
        facts.append(_fact("Stop requested", f"{_text(run.stop_kind)}{why}"))
    return facts


def _trail(run: Run, policy_urls: dict[str, str]) -> str:
    if not run.trail:
        return ""
    policy = (run.decision or {}).get("policy")
    rows = []
    for label, value in run.trail:
        if label == "Policy" and policy:
            if policy not in policy_urls:
                policy_urls[policy] = reverse("lookout:policy", args=[policy])
            shown = f'<a href="{_text(policy_urls[policy])}">{_text(value)}</a>'
        elif label == "Decision":
            shown = f'<strong class="decision">{_text(value)}</strong>'
        else:
            shown = _text(value)
        rows.append(_fact(label, shown))
    rid = _text(run.id)
    return (
        f'<div class="trail"><h4 id="trail-{rid}">Decision trail</h4>'
        f'<dl class="facts" aria-labelledby="trail-{rid}">{"".join(rows)}</dl></div>'
    )


def runs_html(runs: list[Run]) -> SafeString:
    """The Runs part: a section per run (newest first, the first marked latest) with its
    facts and decision trail; ``run.trail``, ``run.times`` and ``run.pod_kept`` as
    ``lookout.panel_parts.runs_part`` sets them."""
    if not runs:
        return mark_safe("<p>No runs yet: the job is waiting to be scheduled.</p>")
    policy_urls: dict[str, str] = {}
    sections = []
    for i, run in enumerate(runs):
        rid = _text(run.id)
        latest = ' <span class="muted">(latest)</span>' if i == 0 else ""
        state = _text(run.state)
        sections.append(
            f'<section class="run" aria-labelledby="run-{rid}">\n'
            f'<h3 id="run-{rid}">Run <code>{rid}</code> '
            f'<span class="state state-{state}">{state}</span>{latest}</h3>\n'
            f'<div class="run-grid">\n<dl class="facts">{"".join(_run_facts(run))}</dl>\n'
            f"{_trail(run, policy_urls)}\n</div>\n</section>"
        )
    return mark_safe("\n".join(sections))  # noqa: S308 - every value is escaped above
