"""The cells of a grid row, rendered in Python: a page of 200 rows by 20 columns is 4,000
cells, which a chain of template ``if`` tags per cell would make slow.

Every cell is ``<td data-col="<column key>">``. States are badges with their name, failure
categories and decisions chips, numbers right-aligned, times relative with the absolute
time in ``<time datetime>`` and its title.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.urls import reverse
from django.utils.html import conditional_escape, escape, format_html
from django.utils.safestring import SafeString, mark_safe

from lookout.grid.columns import ANNOTATION_PREFIX
from lookout.grid.pages import JobRow
from lookout.templatetags.lookout_extras import duration


def _time(moment: datetime | None, now: datetime, label: str) -> SafeString:
    if moment is None:
        return mark_safe("")
    ago = duration(max(0.0, (now - moment).total_seconds()))
    absolute = moment.strftime("%Y-%m-%d %H:%M:%S %Z")
    return format_html(
        '<time datetime="{}" title="{} {}">{}</time>', moment.isoformat(), label, absolute, ago
    )


def _chip(kind: str, value: str) -> SafeString:
    if not value:
        return mark_safe("")
    return format_html('<span class="chip {} {}-{}">{}</span>', kind, kind, _slug(value), value)


def _slug(value: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in value.lower())[:40]


def _cell(key: str, content: object, *, num: bool = False, title: str = "") -> str:
    cls = ' class="num"' if num else ""
    tip = format_html(' title="{}"', title) if title else ""
    return f'<td data-col="{escape(key)}"{cls}{tip}>{conditional_escape(content)}</td>'


def _id(row: JobRow, now: datetime) -> str:
    url = reverse("lookout:job", args=[row.job.id])
    link = format_html('<a href="{}" class="job-link"><code>{}</code></a>', url, row.job.id)
    return _cell("id", link)


def _state(row: JobRow, now: datetime) -> str:
    state = row.job.state
    return _cell("state", format_html('<span class="badge state-{}">{}</span>', state, state))


def _plain(key: str, get: Callable[[JobRow], object], num: bool = False):
    def render(row: JobRow, now: datetime) -> str:
        value = get(row)
        text = "" if value is None else str(value)
        return _cell(key, text, num=num, title=text if not num and len(text) > 12 else "")

    return render


def _run(field: str) -> Callable[[JobRow], object]:
    return lambda row: getattr(row.run, field) if row.run is not None else None


def _retryable(row: JobRow, now: datetime) -> str:
    value = row.retryable
    badge = format_html('<span class="verdict verdict-{}">{}</span>', value, value)
    return _cell("retryable", badge)


CELLS: dict[str, Callable[[JobRow, datetime], str]] = {
    "id": _id,
    "queue": _plain("queue", lambda r: r.job.queue_id),
    "job_set": _plain("job_set", lambda r: r.job.job_set),
    "state": _state,
    "priority": _plain("priority", lambda r: r.job.priority, num=True),
    "priority_class": _plain("priority_class", lambda r: r.job.priority_class),
    "owner": _plain("owner", lambda r: r.job.owner),
    "resources": _plain("resources", lambda r: r.resources),
    "submitted": lambda r, now: _cell(
        "submitted", _time(r.job.submitted_at, now, "Submitted"), num=True
    ),
    "in_state": lambda r, now: _cell(
        "in_state", _time(r.job.last_transition_at, now, f"{r.job.state} since"), num=True
    ),
    "node": _plain("node", _run("node")),
    "cluster": _plain("cluster", _run("executor")),
    "pool": _plain("pool", _run("pool")),
    "exit_code": _plain("exit_code", _run("exit_code"), num=True),
    "runtime": lambda r, now: _cell("runtime", duration(r.runtime_seconds(now)), num=True),
    "category": lambda r, now: _cell("category", _chip("category", r.category), title=r.category),
    "subcategory": _plain("subcategory", lambda r: r.subcategory),
    "runs": _plain("runs", lambda r: r.job.run_count, num=True),
    "retries": _plain("retries", lambda r: r.job.retry_count, num=True),
    "decision": lambda r, now: _cell("decision", _chip("decision", r.decision), title=r.decision),
    "retryable": _retryable,
}


def row_cells(row: JobRow, columns: tuple[str, ...], now: datetime) -> SafeString:
    """The ``<td>`` cells of ``row`` for ``columns``, after its selection checkbox."""
    job_id = row.job.id
    parts = [
        format_html(
            '<td data-col="select" class="select"><input type="checkbox" class="row-select" '
            'value="{}" aria-label="Select job {}"></td>',
            job_id,
            job_id,
        )
    ]
    for key in columns:
        render = CELLS.get(key)
        if render is not None:
            parts.append(render(row, now))
        elif key.startswith(ANNOTATION_PREFIX):
            name = key.removeprefix(ANNOTATION_PREFIX)
            value = row.annotation(name)
            parts.append(_cell(key, value, title=value if len(value) > 12 else ""))
    return mark_safe("".join(parts))  # noqa: S308 - every part is escaped above
