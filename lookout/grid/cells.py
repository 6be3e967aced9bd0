"""The cells of a grid row, rendered in Python: a page of 200 rows by 20 columns is 4,000
cells, which a chain of template ``if`` tags per cell (or ``format_html`` per cell) would
make slow. Every value is escaped here (``html.escape``) before it is put in a cell.

Every cell is ``<td data-col="<column key>">``. States are badges with their name, failure
categories and decisions chips, numbers right-aligned, times relative with the absolute
time in ``<time datetime>`` and its title.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from html import escape

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from lookout.grid.columns import ANNOTATION_PREFIX
from lookout.grid.pages import JobRow
from lookout.templatetags.lookout_extras import duration

TITLE_FROM = 12  # text longer than this has its whole value in the cell's title


def _cell(key: str, inner: str, *, num: bool = False, title: str = "") -> str:
    """A cell; ``inner`` is HTML already (escaped by the caller), ``title`` plain text."""
    cls = ' class="num"' if num else ""
    tip = f' title="{escape(title)}"' if title else ""
    return f'<td data-col="{escape(key)}"{cls}{tip}>{inner}</td>'


def _text_cell(key: str, value: object, *, num: bool = False) -> str:
    text = "" if value is None else str(value)
    title = text if not num and len(text) > TITLE_FROM else ""
    return _cell(key, escape(text), num=num, title=title)


def _time(moment: datetime | None, now: datetime, label: str) -> str:
    if moment is None:
        return ""
    ago = duration(max(0.0, (now - moment).total_seconds()))
    absolute = moment.strftime("%Y-%m-%d %H:%M:%S %Z")
    return f'<time datetime="{moment.isoformat()}" title="{escape(label)} {absolute}">{ago}</time>'


def _slug(value: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in value.lower())[:40]


def _chip(kind: str, value: str) -> str:
    if not value:
        return ""
    return f'<span class="chip {kind} {kind}-{escape(_slug(value))}">{escape(value)}</span>'


_job_url_prefix: str | None = None


def _job_url(job_id: str) -> str:
    """``/jobs/<id>``: reversed once, then joined (a reverse per row is slow)."""
    global _job_url_prefix
    if _job_url_prefix is None:
        _job_url_prefix = reverse("lookout:job", args=["-"])[:-1]
    return _job_url_prefix + job_id


def _id(row: JobRow, now: datetime) -> str:
    job_id = escape(row.job.id)
    link = f'<a href="{escape(_job_url(row.job.id))}" class="job-link"><code>{job_id}</code></a>'
    return _cell("id", link)


def _state(row: JobRow, now: datetime) -> str:
    state = escape(row.job.state)
    return _cell("state", f'<span class="badge state-{state}">{state}</span>')


def _plain(key: str, get: Callable[[JobRow], object], num: bool = False):
    def render(row: JobRow, now: datetime) -> str:
        return _text_cell(key, get(row), num=num)

    return render


def _retryable(row: JobRow, now: datetime) -> str:
    value = row.retryable
    return _cell("retryable", f'<span class="verdict verdict-{value}">{value}</span>')


def _submitted(row: JobRow, now: datetime) -> str:
    return _cell("submitted", _time(row.job.submitted_at, now, "Submitted"), num=True)


def _in_state(row: JobRow, now: datetime) -> str:
    moment = _time(row.job.last_transition_at, now, f"{row.job.state} since")
    return _cell("in_state", moment, num=True)


def _runtime(row: JobRow, now: datetime) -> str:
    return _cell("runtime", duration(row.runtime_seconds(now)), num=True)


def _category(row: JobRow, now: datetime) -> str:
    return _cell("category", _chip("category", row.category), title=row.category)


def _decision(row: JobRow, now: datetime) -> str:
    return _cell("decision", _chip("decision", row.decision), title=row.decision)


CELLS: dict[str, Callable[[JobRow, datetime], str]] = {
    "id": _id,
    "queue": _plain("queue", lambda r: r.job.queue_id),
    "job_set": _plain("job_set", lambda r: r.job.job_set),
    "state": _state,
    "priority": _plain("priority", lambda r: r.job.priority, num=True),
    "priority_class": _plain("priority_class", lambda r: r.job.priority_class),
    "owner": _plain("owner", lambda r: r.job.owner),
    "resources": _plain("resources", lambda r: r.resources),
    "submitted": _submitted,
    "in_state": _in_state,
    "node": _plain("node", lambda r: r.job.latest_node),
    "cluster": _plain("cluster", lambda r: r.job.latest_executor),
    "pool": _plain("pool", lambda r: r.job.latest_pool),
    "exit_code": _plain("exit_code", lambda r: r.job.latest_exit_code, num=True),
    "runtime": _runtime,
    "category": _category,
    "subcategory": _plain("subcategory", lambda r: r.subcategory),
    "runs": _plain("runs", lambda r: r.job.run_count, num=True),
    "retries": _plain("retries", lambda r: r.job.retry_count, num=True),
    "decision": _decision,
    "retryable": _retryable,
}


def row_cells(row: JobRow, columns: tuple[str, ...], now: datetime) -> SafeString:
    """The ``<td>`` cells of ``row`` for ``columns``, after its selection checkbox."""
    job_id = escape(row.job.id)
    parts = [
        f'<td data-col="select" class="select"><input type="checkbox" class="row-select" '
        f'value="{job_id}" aria-label="Select job {job_id}"></td>'
    ]
    for key in columns:
        render = CELLS.get(key)
        if render is not None:
            parts.append(render(row, now))
        elif key.startswith(ANNOTATION_PREFIX):
            parts.append(_text_cell(key, row.annotation(key.removeprefix(ANNOTATION_PREFIX))))
    return mark_safe("".join(parts))  # noqa: S308 - every value is escaped above


def row_html(row: JobRow, columns: tuple[str, ...], now: datetime) -> SafeString:
    """The whole ``<tr class="job-row">`` of ``row`` (the row contract of the grid)."""
    job_id = escape(row.job.id)
    state = escape(row.job.state)
    cells = row_cells(row, columns, now)
    return mark_safe(  # noqa: S308 - escaped above and in row_cells
        f'<tr class="job-row" data-job-id="{job_id}" data-state="{state}" tabindex="-1">'
        f"{cells}</tr>"
    )
