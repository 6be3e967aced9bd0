"""Logging in and managing API tokens in real Chromium, by keyboard and without JavaScript:
a user who is not staff logs in on Lookout's own page, creates a token (its key shown once,
with the focus on it), uses it on the API, revokes it after a confirmation and logs out."""

from __future__ import annotations

import re

import pytest
import requests
from playwright.sync_api import expect

from tests.browser.test_policies_browser import log_in, no_problems


@pytest.mark.django_db(transaction=True)
def test_log_in_create_use_and_revoke_a_token_by_keyboard(
    page_without_js, live_server, owner, queue, screenshot
):
    page = page_without_js
    page.goto("/tokens/")
    expect(page).to_have_url(re.compile(r"/login\?next=/tokens/$"))
    expect(page.get_by_label("Username")).to_be_focused()
    page.keyboard.type("olive")
    page.keyboard.press("Tab")
    page.keyboard.type("olive-password")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/tokens/$"))
    expect(page.get_by_text("You have no tokens yet.")).to_be_visible()
    expect(page.get_by_role("link", name="Admin")).to_have_count(0)  # olive is not staff

    page.get_by_label("Name").focus()
    page.keyboard.type("laptop")
    page.get_by_label("Expires").select_option("30d")
    page.get_by_label("Name").press("Enter")
    key_field = page.locator("#new-key")
    expect(key_field).to_be_focused()
    key = key_field.input_value()
    assert key.startswith("arm_")
    screenshot(page, "token-created")
    api = f"{live_server.url}/api/v1/queues"
    answer = requests.get(api, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert answer.status_code == 200 and [q["name"] for q in answer.json()] == ["demo"]

    page.goto("/tokens/")
    assert key not in page.content()
    expect(page.get_by_role("row", name=re.compile("laptop"))).to_contain_text(key[:12])
    page.get_by_role("link", name="Revoke token laptop").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Revoke token laptop?")).to_be_visible()
    page.get_by_role("button", name="Revoke token").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_text("Token laptop revoked")).to_be_visible()
    answer = requests.get(api, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert answer.status_code == 401 and "was revoked" in answer.json()["message"]

    page.get_by_role("button", name="Log out").focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/login$"))
    page.goto("/tokens/")
    expect(page).to_have_url(re.compile(r"/login\?next=/tokens/$"))
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_a_throttled_login_says_how_long_to_wait(page_without_js, owner):
    page = page_without_js
    for password in ["wrong"] * 5 + ["olive-password"]:
        page.goto("/login")
        page.get_by_label("Username").fill("olive")
        page.get_by_label("Password").fill(password)
        page.get_by_label("Password").press("Enter")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Too many failed logins for user 'olive': try again in")
    expect(page).to_have_url(re.compile(r"/login$"))


@pytest.mark.django_db(transaction=True)
def test_the_new_key_is_copied_with_a_button(page, live_server, owner):
    """With JavaScript, a "Copy key" button puts the key on the clipboard and says so; the
    expiry offered first is the configured lifetime (90 days), and never is not offered."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    log_in(page, "/tokens/", username="olive", password="olive-password")
    expires = page.get_by_label("Expires")
    expect(expires).to_have_value("90d")
    expect(expires.locator("option", has_text="never")).to_have_count(0)
    page.get_by_label("Name").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    key = page.locator("#new-key").input_value()
    assert key.startswith("arm_")
    page.get_by_role("button", name="Copy key").click()
    expect(page.locator("#copy-status")).to_have_text("Copied the key to the clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == key
    no_problems(page)
