"""Every value a person reads in Lookout is written for a person: on a system with a little of
everything (tests/lookout/varied_system), every Lookout URL pattern is fetched as an admin,
with real ids and names, in its page, fragment and htmx forms, and its visible text (no
scripts, styles, hidden elements or attributes, but with the labels a screen reader reads)
must hold none of Python's raw values: ``None``, ``True``, ``False`` as words, or a number in
exponent form (``7e-05``, ``1.2E+10``).

A URL pattern added to Lookout fails :func:`test_every_url_pattern_is_scanned` until it has
requests here, so nothing slips back."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver
from django.utils import timezone

from lookout import urls as lookout_urls
from tests.lookout.backtest_history import STRICTER
from tests.lookout.varied_system import Seeded, seed_varied_system

pytestmark = pytest.mark.django_db

RAW_WORD = re.compile(r"(?<![\w.])(None|True|False)(?![\w])")
EXPONENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+-]?\d+(?![\w.])")
SKIPPED = {"script", "style", "noscript"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
READ_ATTRIBUTES = ("aria-label", "title", "alt", "placeholder", "aria-description")
HTMX = {"HTTP_HX_REQUEST": "true"}
COLUMNS = "id,state,exit_code,runs,retries,decision,retryable,category,runtime"
DEMO = quote(json.dumps([["queue", "demo"]]))
FAILED = quote(json.dumps([["state", "failed"]]))


class VisibleText(HTMLParser):
    """The text of a page as people get it: element text outside scripts, styles and hidden
    elements, plus the attributes that are read out (``aria-label``, ``title``, ...)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip: list[str] = []  # open elements whose content is not shown

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        hidden = (
            tag in SKIPPED
            or "hidden" in values
            or values.get("aria-hidden") == "true"
            or (tag == "input" and values.get("type") == "hidden")
        )
        if self._skip:
            if tag not in VOID:
                self._skip.append(tag)
            return
        if hidden:
            if tag not in VOID:
                self._skip.append(tag)
            return
        self.parts += [str(values[a]) for a in READ_ATTRIBUTES if values.get(a)]

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self._skip:
            values = dict(attrs)
            self.parts += [str(values[a]) for a in READ_ATTRIBUTES if values.get(a)]

    def handle_endtag(self, tag: str) -> None:
        if self._skip and tag in self._skip:
            while self._skip and self._skip.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = VisibleText()
    parser.feed(html)
    parser.close()
    return " ".join(" ".join(parser.parts).split())


# Words of our own sentences that the patterns would take for values.
PROSE = re.compile(r"None selected")


def raw_values(text: str) -> list[str]:
    """Each raw value found, with some of the text around it."""
    text = PROSE.sub("", text)
    found = []
    for pattern in (RAW_WORD, EXPONENT):
        for match in pattern.finditer(text):
            start, end = max(0, match.start() - 50), match.end() + 50
            found.append(f"{match.group(0)!r} in …{text[start:end]}…")
    return found


@dataclass
class Fetch:
    """One request of the scan: the URL pattern's name, how, and where."""

    name: str
    path: str
    method: str = "get"
    data: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)

    def __str__(self) -> str:
        extra = f" {self.data}" if self.data else ""
        return f"{self.method.upper()} {self.path}{extra}{' (htmx)' if self.headers else ''}"


def pattern_names(patterns=lookout_urls.urlpatterns) -> Iterator[str]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from pattern_names(entry.url_patterns)
        elif isinstance(entry, URLPattern) and entry.name:
            yield entry.name


def fetches(s: Seeded) -> list[Fetch]:
    """The scan's requests, in an order that changes nothing until the actions at its end."""
    jobs = list(s.jobs.values())
    failed, retried, running = s.jobs["failed"], s.jobs["retried"], s.jobs["running"]
    ids = ",".join(jobs)
    out = [
        Fetch("jobs", "/"),
        Fetch("jobs", "/?state=failed&state=queued&sort=submitted&dir=asc"),
        Fetch("jobs", f"/?retries_min=1&columns={COLUMNS}"),
        Fetch("jobs", "/?group=queue,job_set"),
        Fetch("jobs", f"/?group=state,retryable,decision&columns={COLUMNS}&expanded={FAILED}"),
        Fetch("jobs", f"/?job={failed}"),
        Fetch("jobs", "/?fragment=rows"),
        Fetch("jobs", "/?state=failed", headers={**HTMX, "HTTP_HX_TARGET": "job-rows"}),
        Fetch("grid-rows", f"/rows?ids={ids}"),
        Fetch("grid-groups", f"/groups?group=queue,state&path={DEMO}"),
        Fetch("grid-groups", f"/groups?group=state,exit_code&columns={COLUMNS}&path={FAILED}"),
        Fetch("grid-columns", "/grid/columns", "post", {"visible": ["id", "state"], "next": "/"}),
        Fetch("jobs-bulk-check", f"/jobs/bulk/cancel/check?ids={ids}", headers=HTMX),
        Fetch("jobs-bulk-check", f"/jobs/bulk/preempt/check?ids={ids}"),
        Fetch("jobs-bulk-check", f"/jobs/bulk/reprioritize/check?ids={ids}&priority=2"),
        Fetch("login", "/login"),
        Fetch("tokens", "/tokens/"),
        Fetch("token-revoke", f"/tokens/{s.token_ids[0]}/revoke"),  # the other is revoked
        Fetch("queues", "/queues/"),
        Fetch("queues", "/queues/?q=re"),
        *[Fetch("queue", f"/queues/{q}/") for q in s.queues],
        Fetch(
            "queue-permissions",
            "/queues/demo/permissions",
            "post",
            {"action": "grant", "kind": "User", "subject": "", "verbs": ["watch"]},
        ),
        *[Fetch("decision-metrics", f"/metrics/decisions?period={p}") for p in ("1h", "24h", "7d")],
        *[Fetch("retry-cost", f"/metrics/cost?period={p}") for p in ("24h", "7d", "30d")],
        Fetch("retry-cost", "/metrics/cost?period=24h&queue=demo"),
        Fetch("policies", "/policies/"),
        Fetch("policy-new", "/policies/new"),
        Fetch("policy", "/policies/ml/"),
        Fetch("policy", "/policies/ml/?diff=1"),
        Fetch("policy", "/policies/ml/?test=1&category=oom&retries_used=1&exit_code=137"),
        Fetch("policy", f"/policies/ml/?test=1&run={s.runs[-1]}"),
        Fetch("policy-edit", "/policies/ml/edit"),
        Fetch("policy-delete", "/policies/ml/delete"),
        Fetch(
            "policy-validate", "/policies/validate", "post", {"document": STRICTER, "name": "ml"}
        ),
        Fetch(
            "policy-backtest",
            "/policies/backtest",
            "post",
            {"document": STRICTER, "name": "ml", "period": "7d"},
            HTMX,
        ),
        Fetch(
            "policy-backtest",
            "/policies/backtest",
            "post",
            {"document": STRICTER, "name": "ml", "period": "30d", "queues": "research"},
            HTMX,
        ),
    ]
    for job_id in jobs:
        out += [Fetch("job", f"/jobs/{job_id}"), Fetch("job-panel", f"/jobs/{job_id}/panel")]
    for job_id in (failed, retried, running, s.jobs["backtest"], s.jobs["queued"]):
        out += [
            Fetch("job-panel-part", f"/jobs/{job_id}/panel/{tab}", headers=HTMX)
            for tab in ("details", "runs", "yaml", "events", "logs")
        ]
    out += [Fetch("job-panel-part", f"/jobs/{failed}/panel/events?all=1", headers=HTMX)]
    for run_id in s.runs:
        out += [
            Fetch("run-log-text", f"/runs/{run_id}/log"),
            Fetch("run-log", f"/runs/{run_id}/log.txt"),
        ]
    # The actions last: each answers with what it did.
    queued, pending = s.jobs["queued"], s.jobs["pending"]
    out += [
        Fetch("policy-attach", "/policies/ml/attach", "post", {"queue": "demo", "first": "on"}),
        Fetch("policy-detach", "/policies/ml/detach", "post", {"queue": "other"}),
        Fetch(
            "queue-cordon", "/queues/research/cordon", "post", {"cordon": "1", "next": "/queues/"}
        ),
        Fetch("job-reprioritize", f"/jobs/{queued}/reprioritize", "post", {"priority": "3"}, HTMX),
        Fetch("job-preempt", f"/jobs/{running}/preempt", "post", {"reason": "maintenance"}, HTMX),
        Fetch("job-cancel", f"/jobs/{pending}/cancel", "post", {"reason": "not needed"}, HTMX),
        Fetch("jobs-bulk", "/jobs/bulk/cancel", "post", {"ids": ids, "reason": "cleanup"}, HTMX),
        Fetch("jobs-bulk", "/jobs/bulk/reprioritize", "post", {"ids": ids, "priority": "x"}),
        # An async view: under the test client it reads the session in another thread, which
        # does not see this test's transaction and so ends the login. Last but the logout.
        Fetch("grid-live", "/live?after=0"),
        Fetch("logout", "/logout", "post"),
    ]
    return out


@pytest.fixture
def seeded(settings, admin_user, queue) -> Seeded:
    return seed_varied_system(settings, admin=admin_user, now=timezone.now())


def test_every_url_pattern_is_scanned(seeded):
    assert set(pattern_names()) == {f.name for f in fetches(seeded)}


def test_no_page_shows_a_raw_python_value(client: Client, admin_user, seeded):
    client.force_login(admin_user)
    problems, statuses, texts = [], {}, {}
    for fetch in fetches(seeded):
        send = getattr(client, fetch.method)
        response = send(fetch.path, fetch.data, **fetch.headers)
        statuses[str(fetch)] = response.status_code
        assert response.status_code < 500, f"{fetch}: {response.status_code}"
        if getattr(response, "streaming", False):
            body = b"".join(response.streaming_content).decode()
        else:
            body = response.content.decode()
        kind = response.get("Content-Type", "")
        text = visible_text(body) if "html" in kind else body
        texts[str(fetch)] = text
        problems += [f"{fetch}: {found}" for found in raw_values(text)]
    assert not problems, "raw Python values on Lookout's pages:\n" + "\n".join(problems)
    # The scan read pages, not refusals: every GET of a page answered it.
    refused = [f for f, code in statuses.items() if f.startswith("GET") and code >= 400]
    assert not refused, refused
    # The seed reaches the small amounts, and they read in plain numbers and fitting units.
    assert "cpu 0.00001%" in texts["GET /queues/research/"]
    assert "Retried attempts : 0.00007 in all" in texts["GET /metrics/cost?period=24h"]
    backtests = " ".join(t for f, t in texts.items() if "/policies/backtest" in f)
    assert re.search(r"Attempts saved \d+, about [\d.]+ core-(minutes|seconds)", backtests)
