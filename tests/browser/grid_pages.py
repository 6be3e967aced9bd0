"""Helpers of the jobs grid's browser tests: the rows shown, a mark that a page was not
reloaded, the checks every state of the grid passes."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.axe import assert_accessible

ROWS = "#job-rows tr.job-row"


def shown_ids(page) -> list[str]:
    return page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.dataset.jobId)")


def mark_page(page) -> None:
    """Mark the document: ``still_same_page`` is true until the page is loaded again."""
    page.evaluate("window.__gridMark = 'kept'")


def still_same_page(page) -> bool:
    return page.evaluate("window.__gridMark === 'kept'")


def checked(page) -> None:
    """No console error and no serious accessibility problem in the grid as it is now."""
    assert page.problems == [], page.problems
    assert_accessible(page)


def expect_rows(page, count: int) -> None:
    expect(page.locator(ROWS)).to_have_count(count)


def open_filter(page, column: str):
    """Open the popover filter of ``column``'s header; the popover's locator."""
    details = page.locator(f"#grid-filter-row td[data-col='{column}'] details")
    details.locator("summary").click()
    expect(details.locator(".pop")).to_be_visible()
    return details
