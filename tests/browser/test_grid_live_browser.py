"""The jobs grid following the event stream in real Chromium: a job's state changed through
the services shows in its row without a reload; paused, nothing changes (while a live page
beside it does) and nothing is fetched, and resuming catches up; a job that stops matching
the filters is marked, not removed; a new matching job brings the "new jobs" bar whose Show
loads it; in the grouped view the open job rows follow and the page says its counts change
on reload. No console errors; the page
passes the accessibility check.

The stream is served by uvicorn (ASGI) in a thread of the test process, on the test
database: pytest-django's live server speaks WSGI, under which a response leaves only once
it is complete, so there the stream would be a poll (``lookout.live_views``)."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from armada.models import Event
from armada.services.queues import queue_create
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from tests.browser.axe import assert_accessible
from tests.browser.conftest import _open_page
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401
from tests.conftest import T0, job_file
from tests.lookout.builders import make_job
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
JOBS = ["job-a", "job-b", "job-c"]
LIVE_TIMEOUT = 15_000  # ms: generous; the stream itself takes well under a second


@pytest.fixture
def asgi_server(transactional_db) -> Iterator[str]:
    """uvicorn serving the project's ASGI application (and the static files) in a thread."""
    import uvicorn
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    from armada.asgi import application

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(
        ASGIStaticFilesHandler(application),
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-live-test", daemon=True)
    thread.start()
    wait_until("uvicorn to start", lambda: server.started, timeout=30)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture
def open_page(browser, asgi_server):
    """``open_page()``: a new browser context on the uvicorn server, closed at the end."""
    contexts = []

    def open_one():
        context, page = _open_page(browser, SimpleNamespace(url=asgi_server))
        contexts.append(context)
        return page

    yield open_one
    for context in contexts:
        context.close()


@pytest.fixture
def grid_jobs(fast_passwords, admin_user, owner):  # noqa: F811
    queue_create(actor=admin_user, data={"name": "demo", "owners": ["olive"]}, now=T0)
    for job_id in JOBS:
        make_job(job_id)


def row(page, job_id: str):
    return page.locator(f'#job-rows tr.job-row[data-job-id="{job_id}"]')


def open_grid(page, path: str = "/") -> None:
    log_in(page, path, "olive", "olive-password")
    expect(row(page, JOBS[0])).to_be_visible()
    expect(page.locator("#grid-live-status")).to_have_text("Following events", timeout=LIVE_TIMEOUT)
    page.evaluate("window.__noReload = true")  # a reload would wipe it


def still_same_page(page) -> None:
    assert page.evaluate("window.__noReload === true")


def cancel(owner, *job_ids: str) -> None:
    jobs_cancel(
        actor=owner, queue="demo", job_set="set-1", job_ids=list(job_ids), reason="", now=T0
    )


def rows_requests(page) -> list[str]:
    """The /rows requests the page makes from now on."""
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if "/rows?" in r.url else None)
    return seen


def test_a_state_change_reaches_the_row_without_a_reload(open_page, grid_jobs, owner):
    page = open_page()
    open_grid(page)
    box = row(page, "job-b").locator("input.row-select")
    box.check()
    row(page, "job-a").focus()
    cancel(owner, "job-a", "job-b")
    expect(row(page, "job-a")).to_have_attribute("data-state", "cancelled", timeout=LIVE_TIMEOUT)
    expect(row(page, "job-b")).to_have_attribute("data-state", "cancelled")
    expect(row(page, "job-c")).to_have_attribute("data-state", "queued")
    expect(row(page, "job-b").locator("input.row-select")).to_be_checked()  # kept
    expect(row(page, "job-a")).to_be_focused()  # kept
    expect(page.locator("#grid-live-status")).to_have_text(re.compile(r"^Updated \d\d:\d\d:\d\d$"))
    still_same_page(page)
    assert_accessible(page)
    no_problems(page)


def test_paused_shows_nothing_and_fetches_nothing_until_resumed(open_page, grid_jobs, owner):
    paused, beside = open_page(), open_page()
    open_grid(paused)
    open_grid(beside)
    toggle = paused.get_by_role("button", name="Live")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "false")
    expect(paused.locator("#grid-live-status")).to_have_text("Paused")
    expect(paused).to_have_url(re.compile(r"[?&]live=0"))
    fetched = rows_requests(paused)

    cancel(owner, "job-a")
    # The page beside it, live, shows the change: had the paused one been live, so would it.
    expect(row(beside, "job-a")).to_have_attribute("data-state", "cancelled", timeout=LIVE_TIMEOUT)
    expect(row(paused, "job-a")).to_have_attribute("data-state", "queued")
    assert fetched == []

    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    expect(row(paused, "job-a")).to_have_attribute("data-state", "cancelled", timeout=LIVE_TIMEOUT)
    assert "live=0" not in paused.url
    still_same_page(paused)
    no_problems(paused)
    no_problems(beside)


def test_a_shared_paused_view_opens_paused(open_page, grid_jobs, owner):
    page = open_page()
    log_in(page, "/?live=0", "olive", "olive-password")
    expect(page.get_by_role("button", name="Live")).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#grid-live-status")).to_have_text("Paused")
    assert_accessible(page)
    no_problems(page)


def test_a_job_that_stops_matching_is_marked_and_a_new_match_is_offered(
    open_page, grid_jobs, owner
):
    page = open_page()
    open_grid(page, "/?state=queued")
    cancel(owner, "job-b")
    stale = row(page, "job-b")
    expect(stale).to_have_class(re.compile(r"\blive-stale\b"), timeout=LIVE_TIMEOUT)
    expect(stale).to_contain_text("no longer matches")
    expect(row(page, "job-a")).not_to_have_class(re.compile(r"\blive-stale\b"))

    [new_id] = job_submit(actor=owner, data=job_file(), now=T0)
    bar = page.locator("#grid-live-news")
    expect(bar).to_contain_text("1 new or changed job matches", timeout=LIVE_TIMEOUT)
    expect(row(page, new_id)).to_have_count(0)  # offered, not pushed in
    assert_accessible(page)
    page.set_viewport_size({"width": 375, "height": 740})  # the toolbar wraps on a phone
    expect(bar).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    page.set_viewport_size({"width": 1280, "height": 800})
    bar.get_by_role("button", name="Show").click()
    expect(row(page, new_id)).to_be_visible()
    expect(bar).to_be_hidden()
    expect(row(page, "job-b")).to_have_count(0)  # the first page, read again
    still_same_page(page)
    no_problems(page)


def test_the_grouped_view_updates_open_job_rows_and_says_counts_change_on_reload(
    open_page, grid_jobs, owner
):
    page = open_page()
    expanded = quote(json.dumps([["queue", "demo"]]))
    log_in(page, f"/?group=queue&expanded={expanded}", "olive", "olive-password")
    expect(row(page, "job-a")).to_be_visible()  # in the open group
    expect(page.locator("#grid-live-status")).to_have_text("Following events", timeout=LIVE_TIMEOUT)
    expect(page.locator("#grid-live-note")).to_have_text("Group counts update on reload")
    counts = page.locator("#job-rows tr:not(.job-row)").first.inner_text()
    cancel(owner, "job-a")
    expect(row(page, "job-a")).to_have_attribute("data-state", "cancelled", timeout=LIVE_TIMEOUT)
    assert page.locator("#job-rows tr:not(.job-row)").first.inner_text() == counts

    fetched = rows_requests(page)
    job_submit(actor=owner, data=job_file(), now=T0)
    last = Event.objects.order_by("-id").values_list("id", flat=True).first()
    expect(page.locator("#grid-live")).to_have_attribute(
        "data-cursor", str(last), timeout=LIVE_TIMEOUT
    )
    page.evaluate("() => new Promise(done => setTimeout(done, 0))")  # a turn of its loop
    # The new job is no row on the page: it is not read, and no bar offers it.
    assert fetched == []
    expect(page.locator("#grid-live-news")).to_be_hidden()
    assert_accessible(page)
    no_problems(page)


def test_under_a_wsgi_server_the_grid_follows_by_polling(page, live_server, grid_jobs, owner):
    """runserver and the tests' live server cannot stream: each answer is one read, and the
    browser comes back for the next, quietly (no "Reconnecting", no console error)."""
    open_grid(page)
    cancel(owner, "job-c")
    expect(row(page, "job-c")).to_have_attribute("data-state", "cancelled", timeout=LIVE_TIMEOUT)
    expect(page.locator("#grid-live-status")).to_have_text(re.compile(r"^Updated "))
    still_same_page(page)
    no_problems(page)
