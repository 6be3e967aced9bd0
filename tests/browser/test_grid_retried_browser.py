"""The jobs that were retried, in real Chromium: the filter bar's "Retried jobs" narrows the
grid to them without a reload; grouped by retries, a group's "list" link opens its jobs;
"Clear all filters" (shown only while a filter is set) takes every filter away from the URL,
the rows and the filter row, by keyboard, and hands the focus on. Every state passes the
accessibility check and logs no console error."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tests.browser.grid_pages import checked, expect_rows, mark_page, shown_ids, still_same_page
from tests.browser.test_policies_browser import fast_passwords, log_in  # noqa: F401
from tests.lookout.builders import make_job

pytestmark = pytest.mark.django_db(transaction=True)

# Job id -> retries (runs: one more).
RETRIES = {"01jr0": 0, "01jr1": 0, "01jr2": 1, "01jr3": 2, "01jr4": 2, "01jr5": 0}


@pytest.fixture
def retried(fast_passwords, admin_user, queue):  # noqa: F811
    now = timezone.now()
    for n, (job_id, retries) in enumerate(RETRIES.items()):
        make_job(
            job_id,
            state="failed" if retries else "succeeded",
            retry_count=retries,
            run_count=retries + 1,
            failure_count=retries,
            submitted_at=now - timedelta(minutes=30 - n),
            last_transition_at=now - timedelta(minutes=20 - n),
        )


def retried_ids(at_least: int = 1, exactly: int | None = None) -> set[str]:
    return {
        job_id
        for job_id, retries in RETRIES.items()
        if (retries == exactly if exactly is not None else retries >= at_least)
    }


def test_retried_jobs_grouped_by_retries_and_cleared(page, retried):
    log_in(page, "/?live=0&sort=retries")
    expect_rows(page, len(RETRIES))
    clear = page.get_by_role("link", name="Clear all filters")
    expect(clear).to_have_count(0)
    mark_page(page)

    # The ready view: only the retried jobs, the retries header's filter shows it.
    page.get_by_role("link", name="Retried jobs").click()
    expect(page).to_have_url(re.compile(r"retries_min=1"))
    expect_rows(page, len(retried_ids()))
    assert set(shown_ids(page)) == retried_ids()
    expect(page.locator("#grid-filter-row td[data-col='retries'] summary")).to_have_text("1 – …")
    expect(page.get_by_role("link", name="Retried jobs")).to_have_attribute("aria-current", "true")
    expect(clear).to_be_visible()
    assert still_same_page(page)
    checked(page)

    # Grouped by retries: a group per count, and its list link opens its jobs.
    page.locator("#group-by summary").click()
    page.locator("select.group-select[data-level='0']").select_option("retries")
    page.get_by_role("button", name="Apply grouping").click()
    expect(page).to_have_url(re.compile(r"group=retries"))
    groups = page.locator('tr.group-row[data-level="1"]')
    expect(groups).to_have_count(2)
    expect(groups.first.locator(".group-value")).to_have_text("2")
    expect(groups.first.locator(".group-total")).to_have_text("2 jobs")
    checked(page)
    groups.first.locator("a.group-list").click()
    expect(page).to_have_url(re.compile(r"retries=2"))
    expect_rows(page, 2)
    assert set(shown_ids(page)) == retried_ids(exactly=2)
    checked(page)

    # Clear every filter by keyboard: the sort stays, the filter row empties, the focus
    # goes on to the ready views.
    mark_page(page)
    clear.focus()
    page.keyboard.press("Enter")
    expect(page).not_to_have_url(re.compile(r"retries(_min|_max)?=\d"))
    expect(page).to_have_url(re.compile(r"sort=retries"))
    expect_rows(page, len(RETRIES))
    expect(clear).to_have_count(0)
    expect(page.locator("#grid-filter-row td[data-col='retries'] summary")).to_have_text("any")
    expect(page.get_by_role("link", name="Retried jobs")).to_be_focused()
    assert still_same_page(page)
    checked(page)
