"""The policy editor's "What would this change?" panel in real Chromium, over failures recorded
with their decision trails (tests/lookout/backtest_history.py) and replayed by the real
backtest service: a stricter draft shows its flips and links the affected jobs, without a
reload and without saving; an invalid draft shows the error Save gives, on its line; the
panel's own mistakes are named inline; keyboard, accessibility and phone width."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from armada.models import RetryPolicy, RetryPolicyVersion
from tests.browser.axe import assert_accessible
from tests.browser.test_policies_browser import (  # noqa: F401
    caret_line,
    fast_passwords,
    log_in,
    no_problems,
)
from tests.lookout.backtest_history import INVALID, STRICTER, record_history

REFUSED = "console error: Failed to load resource: the server responded with a status of 4"


@pytest.fixture
def history(fast_passwords, settings, admin_user, queue):  # noqa: F811
    record_history(settings, admin=admin_user, now=timezone.now())


WATCH_BUSY = """() => {
    window.busySeen = [];
    const busy = document.getElementById("backtest-busy");
    const results = document.getElementById("backtest-results");
    const button = document.getElementById("backtest-run");
    new MutationObserver(() => window.busySeen.push([
        getComputedStyle(busy).display, results.getAttribute("aria-busy"), button.disabled,
    ])).observe(busy, {attributes: true});
}"""


def without_the_refusals(page) -> None:
    """Chromium logs every 4xx answer to htmx as a console error: those are the answers the
    test asks for; anything else is a problem."""
    page.problems[:] = [p for p in page.problems if not p.startswith(REFUSED)]


def run_panel(page) -> None:
    page.get_by_role("button", name="Show what would change").click()


@pytest.mark.django_db(transaction=True)
def test_a_stricter_draft_shows_its_flips_without_saving(page, history, screenshot):
    log_in(page, "/policies/ml/edit")
    panel = page.locator("#backtest")
    expect(panel.get_by_role("heading", name="What would this change?")).to_be_visible()
    editor = page.get_by_label("Policy (YAML)")
    editor.fill(STRICTER)
    page.evaluate("window.notReloaded = true")
    expect(page.get_by_label("Period")).to_have_value("7d")
    # What the busy indicator and the results region say while the request is out.
    page.evaluate(WATCH_BUSY)
    run_panel(page)

    result = page.locator("#backtest-result")
    expect(result.get_by_role("heading", level=3)).to_have_text(
        "2 of 3 failures would be decided differently"
    )
    expect(result.locator("#backtest-overall")).to_contain_text("Retried then, would fail now2")
    expect(result.locator("#backtest-overall")).to_contain_text(
        "2, about 4 core-hours, 8 GiB-hours"
    )
    flip = result.locator("#backtest-flips tbody tr")
    expect(flip).to_have_count(1)
    expect(flip).to_contain_text("retry → fail")
    expect(flip).to_contain_text("oom")
    expect(flip.locator("td").last).to_have_text("2")
    queues = result.locator("#backtest-per-queue tbody th")
    expect(queues).to_have_text(["demo", "other"])
    expect(result.locator("#backtest-estimate")).to_contain_text("An estimate, not a replay")
    # No reload, nothing saved: the page is the same and the text is still the draft.
    assert page.evaluate("window.notReloaded") is True
    assert editor.input_value() == STRICTER
    assert RetryPolicy.objects.get(name="ml").version == 1
    assert RetryPolicyVersion.objects.count() == 1
    expect(page.locator("#backtest-results")).not_to_have_attribute("aria-busy", "true")
    seen = page.evaluate("window.busySeen")
    # Shown, with the region busy and the button disabled; then all undone.
    assert seen[0][0] != "none" and seen[0][1:] == ["true", True], seen
    assert seen[-1] == ["none", None, False], seen
    page.locator("#backtest").evaluate("panel => panel.scrollIntoView()")
    screenshot(page, "policy-backtest")
    assert_accessible(page)
    no_problems(page)

    # The sample links each affected job to its page.
    sample = result.locator("#backtest-sample")
    expect(sample.get_by_role("link", name="job-far")).to_be_visible()
    sample.get_by_role("link", name="job-oom").click()
    expect(page).to_have_url(re.compile(r"/jobs/job-oom$"))
    expect(page.get_by_role("heading", level=1)).to_contain_text("job-oom")
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_an_invalid_draft_shows_its_error_on_its_line(page, history):
    log_in(page, "/policies/ml/edit")
    editor = page.get_by_label("Policy (YAML)")
    editor.fill(INVALID)
    run_panel(page)
    errors = page.locator("#backtest-draft-errors")
    expect(errors).to_contain_text("1 problem in the policy text; nothing was replayed")
    expect(errors.locator("li")).to_contain_text("Line 17")
    expect(errors.locator("code")).to_have_text("rules[2].mutate.resources.memory.factor")
    expect(errors).to_be_focused()
    expect(page.locator(".gutter mark")).to_have_text("17")
    page.get_by_role("button", name="Go to line 17").click()
    expect(editor).to_be_focused()
    assert caret_line(page) == 17
    expect(page.locator("#backtest-result")).to_have_count(0)
    assert_accessible(page)
    without_the_refusals(page)
    no_problems(page)

    # Save says the same about the same text.
    message = errors.locator("li").inner_text().split(": ", 1)[1].replace("Go to line 17", "")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#editor-errors li")).to_contain_text(message.strip())
    assert RetryPolicy.objects.get(name="ml").version == 1


@pytest.mark.django_db(transaction=True)
def test_the_panels_own_mistakes_are_named_inline(page, history):
    log_in(page, "/policies/ml/edit")
    page.get_by_label("Queues").fill("demo, nope")
    run_panel(page)
    errors = page.locator("#backtest-errors")
    expect(errors).to_contain_text("The backtest was not run")
    expect(errors).to_contain_text("queue 'nope' does not exist")
    expect(errors).to_be_focused()
    errors.get_by_role("link", name="Queues").click()
    expect(page.get_by_label("Queues")).to_be_focused()

    # From/To appear only when chosen; a reversed range is refused, naming To.
    expect(page.get_by_label("From", exact=True)).to_be_hidden()
    page.get_by_label("Queues").fill("")
    page.get_by_label("Period").select_option("between")
    page.get_by_label("From", exact=True).fill("2026-11-02T10:00")
    page.get_by_label("To", exact=True).fill("2026-11-01T10:00")
    run_panel(page)
    expect(errors).to_contain_text("To: must be after From")
    assert_accessible(page)
    without_the_refusals(page)
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_a_new_policy_by_keyboard_on_a_phone(page, history, screenshot):
    page.set_viewport_size({"width": 375, "height": 812})
    log_in(page, "/policies/new")
    page.get_by_label("Policy (YAML)").fill(STRICTER.replace("name: ml", "name: ml-strict"))
    # The panel's fields and its button are reached with Tab, and Enter runs it.
    page.get_by_label("Period").focus()
    page.keyboard.press("Tab")
    expect(page.get_by_label("Queues")).to_be_focused()
    page.keyboard.type("demo")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Job sets")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Show what would change")).to_be_focused()
    page.keyboard.press("Enter")
    result = page.locator("#backtest-result")
    expect(result.get_by_role("heading", level=3)).to_have_text(
        "1 of 2 failures would be decided differently"
    )
    expect(result).to_contain_text("ml-strict")
    # The button, disabled while the replay ran, has the focus back.
    expect(page.get_by_role("button", name="Show what would change")).to_be_focused()
    expect(result.locator("#backtest-per-queue tbody th")).to_have_text(["demo"])
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the panel is {overflow}px wider than the screen"
    result.evaluate("result => result.scrollIntoView()")
    screenshot(page, "policy-backtest-phone")
    assert_accessible(page)
    assert not RetryPolicy.objects.filter(name="ml-strict").exists()
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_without_javascript_the_panel_stays_hidden(page_without_js, history):
    page = page_without_js
    log_in(page, "/policies/ml/edit")
    expect(page.get_by_label("Policy (YAML)")).to_be_visible()
    expect(page.get_by_role("heading", name="What would this change?")).to_be_hidden()
    expect(page.get_by_role("button", name="Show what would change")).to_be_hidden()
