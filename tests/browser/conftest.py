"""Real headless Chromium (the system's, at /usr/bin/chromium) driven by Playwright's sync API
against pytest-django's live server.

The browser tests fail, never skip, when Chromium is missing: ``.ci/run`` installs it, and a
run that silently skipped them would pass without having looked at a page. Playwright's sync
API keeps an event loop running in the test thread, so Django's guard against database calls
from async code is lifted while a browser is open (the test's own ORM calls are synchronous).
Each test gets a fresh browser context (cookies, storage) with a 1280x800 viewport; every
console error and uncaught page error is collected on ``page.problems``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"{CHROMIUM} is missing: install the chromium and chromium-driver system packages "
            "(.ci/run does) to run the browser tests"
        )
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def _open_page(browser, live_server, *, javascript: bool = True):
    context = browser.new_context(
        base_url=live_server.url, viewport=VIEWPORT, java_script_enabled=javascript
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.problems = []
    page.on(
        "console",
        lambda message: (
            page.problems.append(f"console {message.type}: {message.text}")
            if message.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda error: page.problems.append(f"page error: {error}"))
    return context, page


@pytest.fixture
def page(browser, live_server) -> Iterator[object]:
    context, page = _open_page(browser, live_server)
    yield page
    context.close()


@pytest.fixture
def page_without_js(browser, live_server) -> Iterator[object]:
    context, page = _open_page(browser, live_server, javascript=False)
    yield page
    context.close()


@pytest.fixture
def screenshot():
    """Save the page's visible part as docs/screenshots/<name>.png."""

    def take(page, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))

    return take


def lookout_pages(job_id: str) -> tuple[str, ...]:
    """The Lookout pages every layout and policy check walks: the jobs table, grouped, a
    job, the queues, one queue and the decision metrics."""
    return (
        "/",
        "/?group=state",
        f"/jobs/{job_id}",
        "/queues/",
        "/queues/demo/",
        "/metrics/decisions",
    )
