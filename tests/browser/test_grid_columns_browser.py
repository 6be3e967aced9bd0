"""The column chooser in real Chromium: hiding, moving (by keyboard) and resizing (by mouse
and by keyboard) columns is saved for the viewer on the server, so the grid shows it after a
reload and in a fresh browser as the same user, never for another user; "Reset to default"
brings the default back. The default columns are in view at 1280x800."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from lookout.grid.columns import DEFAULT_COLUMNS
from lookout.grid.prefs import saved_columns
from tests.browser.conftest import VIEWPORT
from tests.browser.grid_pages import ROWS, checked, expect_rows, mark_page, still_same_page
from tests.browser.test_lookout_browser import demo_data  # noqa: F401
from tests.browser.test_policies_browser import fast_passwords, log_in  # noqa: F401
from tests.waiting import wait_until


def header_keys(page) -> list[str]:
    return page.eval_on_selector_all(
        "#grid-head th[data-col]:not([data-col=select])", "ths => ths.map(t => t.dataset.col)"
    )


def column_width(page, key: str) -> float:
    return page.eval_on_selector(
        f"#grid-head th[data-col='{key}']", "th => th.getBoundingClientRect().width"
    )


def expect_default_columns_in_view(page) -> None:
    """State, failure category, retries, decision and retryable cells lie inside the window."""
    boxes = page.evaluate(
        """keys => {
            const row = document.querySelector("#job-rows tr.job-row");
            return keys.map(k => {
                const r = row.querySelector(`td[data-col="${k}"]`).getBoundingClientRect();
                return [k, r.left, r.right, r.width];
            });
        }""",
        ["state", "category", "retries", "decision", "retryable"],
    )
    width = page.evaluate("window.innerWidth")
    for key, left, right, cell_width in boxes:
        assert cell_width > 0 and left >= 0 and right <= width, (key, left, right, width)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.django_db(transaction=True)
def test_the_default_columns_are_in_view_at_1280(page, demo_data):  # noqa: F811
    assert VIEWPORT == {"width": 1280, "height": 800}
    log_in(page, "/")
    expect_rows(page, 9)
    assert header_keys(page) == list(DEFAULT_COLUMNS)
    expect_default_columns_in_view(page)
    checked(page)


@pytest.mark.django_db(transaction=True)
def test_the_column_choice_is_kept_per_user(
    page,
    browser,
    live_server,
    demo_data,  # noqa: F811
    admin_user,
    owner,
):
    log_in(page, "/")
    expect_rows(page, 9)
    mark_page(page)
    page.get_by_text("Columns", exact=True).click()
    chooser = page.locator("#chooser-form")
    expect(chooser).to_be_visible()
    checked(page)

    # Hide "Time in state" and show "Exit code".
    chooser.get_by_role("checkbox", name="Time in state").uncheck()
    expect(page.locator("#grid-head th[data-col='in_state']")).to_have_count(0)
    chooser.get_by_role("checkbox", name="Exit code").check()
    expect(page.locator("#grid-head th[data-col='exit_code']")).to_have_count(1)
    expect(page.locator(f"{ROWS} td[data-col='exit_code']").first).to_be_visible()

    # Move "Retries" up twice with the keyboard: focus stays on the button.
    up = chooser.get_by_role("button", name="Move Retries up")
    up.focus()
    page.keyboard.press("Enter")
    expect(up).to_be_focused()
    page.keyboard.press("Enter")
    wanted = ["id", "queue", "job_set", "retries", "state", "category", "decision", "retryable"]
    wanted.append("exit_code")
    expect(page.locator("#grid-head")).to_have_attribute("id", "grid-head")
    wait_until("the order is saved", lambda: header_keys(page) == wanted, timeout=10)
    # Every save done (the grid reloaded after each): the header stays as it is now.
    expect(page.locator("#chooser-form")).to_have_attribute("aria-busy", "false", timeout=30_000)
    page.keyboard.press("Escape")

    # Resize "Job set" by dragging its edge, and "Queue" with the arrow keys.
    before = column_width(page, "job_set")
    handle = page.get_by_role("separator", name="Resize column Job set")
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + 60, box["y"] + 5, steps=5)
    page.mouse.up()
    assert column_width(page, "job_set") == pytest.approx(before + 60, abs=6)
    queue_handle = page.get_by_role("separator", name="Resize column Queue")
    queue_handle.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(queue_handle).to_have_attribute("aria-valuenow", "120")
    wait_until(
        "the widths are saved",
        lambda: saved_columns(admin_user)[1] == {"job_set": 180, "queue": 120},
        timeout=10,
    )
    assert still_same_page(page)
    checked(page)

    def shows_the_choice(p) -> None:
        expect(p.locator(ROWS)).to_have_count(9)
        assert header_keys(p) == wanted
        assert column_width(p, "job_set") == pytest.approx(180, abs=2)
        assert column_width(p, "queue") == pytest.approx(120, abs=2)

    page.reload()
    shows_the_choice(page)

    # A fresh browser as the same user: the same grid, from the first paint.
    fresh = browser.new_context(base_url=live_server.url, viewport=VIEWPORT)
    other = fresh.new_page()
    log_in(other, "/")
    shows_the_choice(other)
    fresh.close()

    # Another user has the default columns.
    theirs = browser.new_context(base_url=live_server.url, viewport=VIEWPORT)
    olive = theirs.new_page()
    log_in(olive, "/", "olive", "olive-password")
    expect(olive.locator("#job-grid")).to_be_visible()
    assert header_keys(olive) == list(DEFAULT_COLUMNS)
    theirs.close()
    assert saved_columns(owner) == (None, {})

    # Reset to default.
    page.get_by_text("Columns", exact=True).click()
    page.get_by_role("button", name="Reset to default").click()
    wait_until("back to the default", lambda: saved_columns(admin_user) == (None, {}), timeout=10)
    expect(page.locator("#grid-head th[data-col='in_state']")).to_have_count(1)
    assert header_keys(page) == list(DEFAULT_COLUMNS)
    assert page.problems == []


@pytest.mark.django_db(transaction=True)
def test_an_annotation_column_and_a_shared_column_list(page, demo_data):  # noqa: F811
    log_in(page, "/")
    page.get_by_text("Columns", exact=True).click()
    page.get_by_label("Add an annotation column").fill("team")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.locator("#grid-head th[data-col='annotation:team']")).to_have_count(1)
    expect(page.locator(f"{ROWS} td[data-col='annotation:team']").first).to_have_text(
        re.compile("vision|speech")
    )
    # A URL with its own columns shows those (a shared view), over the saved choice.
    page.goto("/?columns=id,annotation:team")
    expect_rows(page, 9)
    assert header_keys(page) == ["id", "annotation:team"]
    checked(page)
