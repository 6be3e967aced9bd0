"""The jobs grid by keyboard, by selection and on a phone, in real Chromium: roving focus on
the rows (arrows, Home, End, PageUp/PageDown) with a visible focus ring, Space selects, Enter
opens the job (``lookout:open-job``), ``/`` goes to the first filter and Escape back to the
rows; checkboxes, "select all on this page" and shift-click ranges send
``lookout:selection`` with the count shown; at 375 px the page does not scroll sideways,
the filters are a toggle away and the grid scrolls in its own box with the job id kept in
view. The screenshots jobs-grid and jobs-grid-phone come from here."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.grid_pages import ROWS, checked, expect_rows, shown_ids
from tests.browser.test_lookout_browser import demo_data  # noqa: F401
from tests.browser.test_policies_browser import fast_passwords, log_in  # noqa: F401

LISTEN = """() => {
    window.__opened = [];
    window.__selections = [];
    document.addEventListener("lookout:open-job", e => window.__opened.push(e.detail.jobId));
    document.addEventListener("lookout:selection", e => window.__selections.push(e.detail.ids));
}"""


def focused_row(page) -> str | None:
    return page.evaluate("document.activeElement && document.activeElement.dataset.jobId || null")


@pytest.mark.django_db(transaction=True)
def test_keyboard_only_use_of_the_grid(page, demo_data):  # noqa: F811
    log_in(page, "/")
    expect_rows(page, 9)
    page.evaluate(LISTEN)
    ids = shown_ids(page)

    # "/" goes to the first filter; Escape comes back to the rows.
    page.get_by_role("heading", name="Jobs", exact=True).click()
    page.keyboard.press("/")
    expect(page.get_by_label("Filter Job id (starts with)")).to_be_focused()
    page.keyboard.press("Escape")
    assert focused_row(page) == ids[0]
    ring = page.evaluate(
        "getComputedStyle(document.activeElement.querySelector('td[data-col=state]')).boxShadow"
    )
    assert ring not in ("", "none")  # the focused row is outlined

    page.keyboard.press("ArrowDown")
    assert focused_row(page) == ids[1]
    page.keyboard.press("End")
    assert focused_row(page) == ids[-1]
    page.keyboard.press("Home")
    assert focused_row(page) == ids[0]
    page.keyboard.press("PageDown")
    assert focused_row(page) == ids[-1]  # ten rows down, or the last
    page.keyboard.press("PageUp")
    assert focused_row(page) == ids[0]
    page.keyboard.press("ArrowUp")
    assert focused_row(page) == ids[0]

    # Space selects the focused row, Enter opens it.
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Space")
    expect(page.locator("#grid-selected")).to_have_text("1 selected")
    expect(page.locator(f"{ROWS}[data-job-id='{ids[1]}'] input.row-select")).to_be_checked()
    assert page.evaluate("window.__selections.at(-1)") == [ids[1]]
    page.keyboard.press("Enter")
    assert page.evaluate("window.__opened") == [ids[1]]
    # The focused row is the grid's one tab stop.
    assert page.locator(f"{ROWS}[tabindex='0']").get_attribute("data-job-id") == ids[1]
    checked(page)


@pytest.mark.django_db(transaction=True)
def test_selection_by_checkboxes_ranges_and_the_page(page, demo_data, screenshot):  # noqa: F811
    log_in(page, "/?state=failed&state=queued&state=running")
    page.evaluate(LISTEN)
    ids = shown_ids(page)
    assert len(ids) == 8
    boxes = page.locator(f"{ROWS} input.row-select")
    boxes.nth(1).check()
    boxes.nth(4).click(modifiers=["Shift"])
    expect(page.locator("#grid-selected")).to_have_text("4 selected")
    assert page.evaluate("window.__selections.at(-1)") == ids[1:5]
    expect(page.locator(f"{ROWS}.selected")).to_have_count(4)
    select_all = page.get_by_label("Select all jobs on this page")
    assert page.evaluate("document.getElementById('select-all').indeterminate")
    select_all.check()
    expect(page.locator("#grid-selected")).to_have_text("8 selected")
    assert page.evaluate("window.__selections.at(-1)") == ids
    select_all.uncheck()
    expect(page.locator("#grid-selected")).to_have_text("0 selected")
    assert page.evaluate("window.__selections.at(-1)") == []

    # Clicking a row (not its link or checkbox) opens the job.
    page.locator(f"{ROWS}[data-job-id='{ids[2]}'] td[data-col='queue']").click()
    assert page.evaluate("window.__opened") == [ids[2]]
    page.keyboard.press("Escape")  # the side panel, if open, closes
    checked(page)

    # The picture: a filter in the header and a few rows selected.
    page.goto("/?state=failed&state=queued&state=running")
    expect_rows(page, 8)
    boxes.nth(0).check()
    boxes.nth(2).check()
    boxes.nth(3).check()
    expect(page.locator("#grid-selected")).to_have_text("3 selected")
    page.locator("main").click(position={"x": 5, "y": 5})
    screenshot(page, "jobs-grid")
    assert page.problems == []


@pytest.mark.django_db(transaction=True)
def test_the_grid_on_a_phone(page, demo_data, screenshot):  # noqa: F811
    page.set_viewport_size({"width": 375, "height": 740})
    log_in(page, "/")
    expect_rows(page, 9)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    filter_row = page.locator("#grid-filter-row")
    expect(filter_row).to_be_hidden()
    screenshot(page, "jobs-grid-phone")
    checked(page)

    # The filters are one toggle away, and work.
    page.get_by_label("Show filters").check()
    expect(filter_row).to_be_visible()
    page.get_by_label("Filter Job set (starts with)").fill("eval")
    expect(page).to_have_url(re.compile(r"job_set=eval"))
    expect_rows(page, 2)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    checked(page)

    # The grid scrolls inside its box; the job id stays in view.
    wrap = page.locator("#grid-wrap")
    assert wrap.evaluate("w => w.scrollWidth > w.clientWidth")
    id_cell = page.locator(f"{ROWS} td[data-col='id']").first
    before = id_cell.bounding_box()["x"]
    wrap.evaluate("w => { w.scrollLeft = 300; }")
    expect(page.locator(f"{ROWS} td[data-col='state']").first).to_be_in_viewport()
    assert id_cell.bounding_box()["x"] == pytest.approx(before, abs=1)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # "/" opens the filters too.
    page.get_by_label("Show filters").uncheck()
    page.keyboard.press("/")
    expect(page.get_by_label("Filter Job id (starts with)")).to_be_focused()
    assert page.problems == []
