"""Granting watch on a queue from its Lookout page in real Chromium: the admin fills the
Permissions form (a plain form), the new row appears, the page passes the accessibility
check, and the user granted then finds the queue in the queue list and opens it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.axe import assert_accessible
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("fast_passwords")
def test_granting_watch_lets_the_user_see_the_queue(page, admin_user, queue, outsider):
    log_in(page, "/queues/demo/")
    form = page.locator("form.permission-form")
    form.get_by_label("User or group").select_option("User")
    form.get_by_label("Name").fill("otto")
    form.get_by_label("watch").check()
    form.get_by_role("button", name="Grant").click()
    expect(page.locator(".messages")).to_contain_text("Granted watch to user otto on queue demo.")
    row = page.locator(
        "table.permission-rows tr", has=page.get_by_role("rowheader", name="user otto")
    )
    expect(row).to_contain_text("watch")
    expect(row.get_by_role("button", name="Remove every permission of user otto")).to_be_visible()
    assert_accessible(page)
    no_problems(page)

    page.context.clear_cookies()
    log_in(page, "/queues/", "otto", "otto-password")
    page.get_by_role("link", name="demo", exact=True).click()
    expect(page.get_by_role("heading", name="Queue demo", level=1)).to_be_visible()
    expect(page.locator("dl.facts")).to_contain_text("watch")
    no_problems(page)
