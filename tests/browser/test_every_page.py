"""Every Lookout page, at 1280x800 and at a phone's 375x740: the axe check finds no serious or
critical violation, the page does not scroll sideways, and nothing is logged to the console.
The screenshots no other browser test takes (mostly the phone ones) come from here."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.axe import assert_accessible
from tests.browser.test_lookout_browser import demo_data  # noqa: F401
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 375, "height": 740}

# (desktop screenshot, phone screenshot, path, a selector that shows the page is ready); {job}
# is a failed job with a decided run. "" where another test takes that picture (the grid,
# the decision metrics and the policies list take both of theirs; most pages their desktop
# one).
PAGES = [
    ("", "", "/", "#job-rows tr.job-row"),
    ("", "jobs-grouped-phone", "/?group=queue,job_set", "#job-rows tr.group-row"),
    ("", "job-panel-phone", "/?job={job}", "#job-panel:not([hidden]) [role=tablist]"),
    ("", "job-page-phone", "/jobs/{job}", "main h1"),
    ("", "queues-phone", "/queues/", "main h1"),
    ("queue-detail", "queue-detail-phone", "/queues/demo/", "main h1"),
    ("", "", "/metrics/decisions", "main h1"),
    ("", "", "/policies/", "main h1"),
    ("", "policy-detail-phone", "/policies/ml/", "main h1"),
    ("", "policy-edit-phone", "/policies/ml/edit", "main h1"),
    ("", "policy-new-phone", "/policies/new", "main h1"),
    ("tokens", "tokens-phone", "/tokens/", "main h1"),
]


def _check(page, path: str) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{path} is {overflow}px wider than the screen"
    assert_accessible(page)
    no_problems(page)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_page_is_accessible_and_fits(page, demo_data, viewport, screenshot):  # noqa: F811
    page.set_viewport_size(viewport)
    log_in(page, "/tokens/")
    job = demo_data["failed-oom"]
    for desktop_name, phone_name, path, ready in PAGES:
        path = path.replace("{job}", job)
        page.goto(path)
        expect(page.locator(ready).first).to_be_visible()
        _check(page, path)
        name = phone_name if viewport is PHONE else desktop_name
        if name:
            screenshot(page, name)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_login_page_is_accessible_and_fits(page, fast_passwords, viewport, screenshot):  # noqa: F811
    page.set_viewport_size(viewport)
    page.goto("/login")
    expect(page.locator("#id_username")).to_be_visible()
    _check(page, "/login")
    screenshot(page, "login-phone" if viewport is PHONE else "login")
