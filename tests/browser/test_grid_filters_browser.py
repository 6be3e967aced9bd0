"""The jobs grid's filters in real Chromium: a text prefix, a state multi-select, a numeric
range, a time range and an annotation chip each narrow the rows without reloading the page,
the address bar holds the view (opened again, it shows the same rows), a bad value is
answered with a message naming the filter, and the same filters work with JavaScript off."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from armada.models import Job
from tests.browser.grid_pages import (
    ROWS,
    checked,
    expect_rows,
    mark_page,
    open_filter,
    shown_ids,
    still_same_page,
)
from tests.browser.test_lookout_browser import demo_data  # noqa: F401
from tests.browser.test_policies_browser import fast_passwords, log_in  # noqa: F401

COLUMNS = "id,job_set,state,priority,submitted,category,decision,retryable,annotation:team"


def ids_where(**filters) -> set[str]:
    return set(Job.objects.filter(**filters).values_list("id", flat=True))


@pytest.mark.django_db(transaction=True)
def test_header_filters_narrow_the_rows_without_a_reload(page, demo_data):  # noqa: F811
    log_in(page, f"/?columns={COLUMNS.replace(':', '%3A').replace(',', '%2C')}")
    expect_rows(page, 9)
    checked(page)
    mark_page(page)

    # A text prefix: the job set starts with "train".
    page.get_by_label("Filter Job set (starts with)").fill("train")
    expect(page).to_have_url(re.compile(r"job_set=train"))
    expect_rows(page, 4)
    assert set(shown_ids(page)) == ids_where(job_set__startswith="train")
    checked(page)

    # A multi-select: state failed or queued (the popover, by keyboard).
    state = open_filter(page, "state")
    state.get_by_label("queued").check()
    expect(page).to_have_url(re.compile(r"state=queued"))
    state.get_by_label("failed").press("Space")
    expect(page).to_have_url(re.compile(r"state=failed"))
    expect_rows(page, 3)
    assert set(shown_ids(page)) == ids_where(
        job_set__startswith="train", state__in=["queued", "failed"]
    )
    expect(state.locator("summary")).to_have_text("queued, failed")
    checked(page)
    page.keyboard.press("Escape")
    expect(state.locator(".pop")).to_be_hidden()

    # A numeric range: priority from 1 to 1.
    priority = open_filter(page, "priority")
    priority.get_by_label("at least").fill("1")
    priority.get_by_label("at most").fill("1")
    priority.get_by_label("at most").press("Enter")
    expect(page).to_have_url(re.compile(r"priority_min=1&priority_max=1"))
    wanted = ids_where(job_set__startswith="train", state__in=["queued", "failed"], priority=1)
    expect_rows(page, len(wanted))
    assert set(shown_ids(page)) == wanted
    page.keyboard.press("Escape")

    # Clear those, then a time range: submitted in the last 21 minutes.
    page.goto(f"/?columns={COLUMNS}")
    mark_page(page)
    since = timezone.now() - timedelta(minutes=21)
    submitted = open_filter(page, "submitted")
    submitted.get_by_label("from").fill(since.strftime("%Y-%m-%dT%H:%M"))
    expect(page).to_have_url(re.compile(r"submitted_from=\d{4}-\d\d-\d\dT\d\d%3A\d\d"))
    recent = ids_where(submitted_at__gte=since.replace(second=0, microsecond=0))
    assert 0 < len(recent) < 9
    expect_rows(page, len(recent))
    assert set(shown_ids(page)) == recent
    page.keyboard.press("Escape")
    checked(page)

    # An annotation chip: team = vision, added above the grid and removed again.
    page.get_by_label("Annotation key").fill("team")
    page.get_by_label("Annotation value").fill("vision")
    page.get_by_role("button", name="Add filter").click()
    expect(page).to_have_url(re.compile(r"ann=team%3Dvision"))
    vision = recent & {j.id for j in Job.objects.all() if j.annotations.get("team") == "vision"}
    expect_rows(page, len(vision))
    assert set(shown_ids(page)) == vision
    expect(page.locator(".chip-filter")).to_contain_text("team = vision")
    checked(page)
    assert still_same_page(page)

    # The address bar reproduces the view.
    again = page.context.new_page()
    again.goto(page.url)
    expect(again.locator(ROWS)).to_have_count(len(vision))
    assert set(shown_ids(again)) == vision
    again.close()

    page.get_by_role("link", name="Remove filter team = vision").click()
    expect(page).not_to_have_url(re.compile(r"ann="))
    expect_rows(page, len(recent))
    assert still_same_page(page)

    # Back goes to the previous view (read from the server again).
    page.go_back()
    expect(page).to_have_url(re.compile(r"ann=team%3Dvision"))
    expect_rows(page, len(vision))
    expect(page.locator(".chip-filter")).to_contain_text("team = vision")
    assert page.problems == []


REFUSED = "console error: Failed to load resource: the server responded with a status of 400"


def without_the_400s(page) -> None:
    """Chromium logs every 400 answer (the page's own, and htmx's) as a console error: those
    are the answers this test asks for; anything else is a problem."""
    page.problems[:] = [p for p in page.problems if not p.startswith(REFUSED)]


@pytest.mark.django_db(transaction=True)
def test_a_bad_filter_value_says_which_filter(page, demo_data):  # noqa: F811
    log_in(page, "/?priority_min=high")
    expect(page.get_by_role("alert")).to_contain_text("invalid request: priority_min:")
    expect(page.locator("#job-rows")).to_contain_text("No jobs shown")
    assert page.problems and all(p.startswith(REFUSED) for p in page.problems)
    without_the_400s(page)
    checked(page)
    # Fixing it in the page applies at once.
    page.goto("/?columns=id,state,exit_code")
    mark_page(page)
    code = open_filter(page, "exit_code")
    code.get_by_label("at least").fill("5")
    code.get_by_label("at most").fill("1")
    code.get_by_label("at most").press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("invalid request: exit_code:")
    without_the_400s(page)
    checked(page)
    code.get_by_label("at most").fill("200")
    code.get_by_label("at most").press("Enter")
    expect(page.locator("#grid-error")).to_have_text("")
    expect_rows(page, 3)  # exit codes 79 and 137 (twice)
    assert still_same_page(page)
    without_the_400s(page)
    checked(page)


@pytest.mark.django_db(transaction=True)
def test_filters_work_without_javascript(page_without_js, demo_data):  # noqa: F811
    page = page_without_js
    log_in(page, "/")
    expect_rows(page, 9)
    page.get_by_label("Filter Job set (starts with)").fill("sweep")
    page.get_by_label("Filter Job set (starts with)").press("Enter")
    expect(page).to_have_url(re.compile(r"job_set=sweep"))
    expect_rows(page, 3)
    page.locator("#grid-filter-row td[data-col='state'] summary").click()
    page.get_by_label("running").check()
    page.get_by_role("button", name="Apply filters").click()
    expect(page).to_have_url(
        re.compile(r"job_set=sweep.*state=running|state=running.*job_set=sweep")
    )
    expect_rows(page, 1)
    assert page.problems == []
