"""The retry-cost page in real Chromium: totals, three charts with their labels inside their
drawings, tables per queue, policy, category and decision and the retry-yield table; the
period chooser works; the page passes the accessibility check at 1280 px and on a phone
(where it does not scroll sideways: wide tables scroll in their own region), and nothing is
logged to the console. The screenshots retry-cost and retry-cost-phone come from here."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.axe import assert_accessible
from tests.browser.test_charts_browser import (
    assert_labels_inside,
    no_sideways_scroll,
    visible_charts,
)
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401
from tests.lookout.test_retry_cost_page import cost, yielded

PHONE = {"width": 375, "height": 740}


@pytest.fixture
def costs(fast_passwords, admin_user, queue):  # noqa: F811
    """A day of failures and retries in two queues, hour by hour, and their yield."""
    for hour in range(0, 24):
        cost(
            "demo",
            "training",
            "oom",
            "retry",
            "failed_run",
            hours_ago=hour + 0.5,
            core=1 + hour % 5,
            gib=4 * (1 + hour % 3),
            runs=1 + hour % 4,
        )
        cost(
            "demo",
            "training",
            "oom",
            "retry",
            "retried_attempt",
            hours_ago=hour + 0.5,
            core=0.5 + hour % 3,
            gib=2.0,
            runs=1 + hour % 2,
        )
        if hour % 3 == 0:
            cost(
                "research",
                "nightly",
                "gpu-xid",
                "fail_policy_limit",
                "failed_run",
                hours_ago=hour + 0.5,
                core=8,
                gib=64,
                runs=1,
            )
    yielded("demo", "oom", 4, retried=30)
    yielded("demo", "oom", 4, succeeded=18, retries=1)
    yielded("demo", "oom", 4, succeeded=6, retries=2)
    yielded("research", "gpu-xid", 0, retried=8, succeeded=1, retries=3)
    return admin_user


@pytest.mark.django_db(transaction=True)
def test_the_cost_page_charts_tables_and_yield(page, costs, screenshot):
    log_in(page, "/metrics/cost?period=24h")
    expect(page.get_by_role("heading", name="Retry cost", level=1)).to_be_visible()
    expect(page.get_by_role("link", name="Retry cost")).to_have_attribute("aria-current", "page")
    for name in ("Core-hours", "Memory GiB-hours"):
        expect(
            page.get_by_role("img", name=f"{name} of failed runs and retried attempts")
        ).to_be_visible()
    expect(page.locator("#gpu-hours-title").locator("..")).to_contain_text("Nothing counted")
    charts = visible_charts(page)
    assert len(charts) == 2  # the GPU chart has nothing to draw: it says so
    assert_labels_inside(charts)
    expect(page.locator("#cost-queue tbody tr")).to_have_count(2)
    expect(page.locator("#cost-yield")).to_contain_text("rule 4")
    expect(page.locator("#cost-yield")).to_contain_text("80%")
    assert_accessible(page)
    screenshot(page, "retry-cost")
    no_problems(page)

    page.get_by_role("combobox", name="Period").select_option("30d")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"period=30d"))
    expect(page.locator("#cost-range")).to_contain_text("by day")
    assert_labels_inside(visible_charts(page))
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_the_cost_page_fits_a_phone(page, costs, screenshot):
    page.set_viewport_size(PHONE)
    log_in(page, "/metrics/cost?period=24h")
    expect(
        page.get_by_role("img", name="Core-hours of failed runs and retried attempts")
    ).to_be_visible()
    no_sideways_scroll(page)
    charts = visible_charts(page)
    assert charts and all("-narrow-" in c["label"] for c in charts)
    assert_labels_inside(charts)
    assert_accessible(page)
    screenshot(page, "retry-cost-phone")
    no_problems(page)
    response = page.goto("/metrics/cost?period=2h")
    assert response.status == 400
    expect(page.locator("main")).to_contain_text("period: must be one of 24h, 7d, 30d")
