"""The retry-policy pages in real Chromium: log in, edit a policy with a mistake, see it
flagged on its line, fix it, save, read the new version's diff, attach the policy to a
queue and try a failure in the rule tester. Every page must load without console errors."""

from __future__ import annotations

import re

import pytest
import yaml
from playwright.sync_api import expect

from armada.core.config import parse_config
from armada.models import Queue, RetryPolicy, RetryPolicyVersion
from armada.services.policies import policy_create
from tests.conftest import T0
from tests.policy_texts import POLICY


@pytest.fixture
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def setup(fast_passwords, settings, admin_user, queue):
    settings.ARMADA = parse_config(
        {
            "scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": 10}},
            "executors": [{"id": "local"}],
        }
    )
    return policy_create(actor=admin_user, data=yaml.safe_load(POLICY), now=T0)


def log_in(page, path: str, username: str = "root", password: str = "root-password") -> None:
    """Through Lookout's real login form, which sends the browser back to ``path``."""
    page.goto(path)
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("form.login-form button[type=submit]")
    expect(page).to_have_url(re.compile(re.escape(path) + "$"))
    # The URL changes when the page starts to arrive; its deferred scripts (the handlers a
    # test is about to click) have run only once it has loaded.
    page.wait_for_load_state("load")


def no_problems(page) -> None:
    assert page.problems == [], page.problems


def caret_line(page) -> int:
    return page.eval_on_selector(
        "#document", "t => t.value.slice(0, t.selectionStart).split('\\n').length"
    )


@pytest.mark.django_db(transaction=True)
def test_edit_history_attach_and_tester(page, setup, screenshot):
    log_in(page, "/policies/")
    expect(page.get_by_role("heading", name="Retry policies")).to_be_visible()
    expect(page.get_by_role("link", name="Retry policies")).to_have_attribute(
        "aria-current", "page"
    )
    row = page.get_by_role("row", name=re.compile(r"^ml "))
    expect(row).to_contain_text("root")
    no_problems(page)

    page.get_by_role("link", name="ml", exact=True).click()
    expect(page.get_by_role("heading", name="Retry policy ml")).to_be_visible()
    expect(page.locator("pre.code").first).to_contain_text("factor: 1.5")
    screenshot(page, "policy-detail")
    no_problems(page)

    # Introduce a mistake on line 16 (factor must be above 1.0) and validate without saving.
    page.get_by_role("link", name="Edit").click()
    editor = page.get_by_label("Policy (YAML)")
    expect(editor).to_be_visible()
    editor.fill(POLICY.replace("factor: 1.5", "factor: 0.5"))
    page.get_by_role("button", name="Validate").click()
    summary = page.locator("#editor-errors")
    expect(summary).to_contain_text(
        "1 problem to fix before saving (Validate checks, it does not save)"
    )
    expect(summary).not_to_contain_text("nothing was saved")
    expect(summary.locator("li")).to_contain_text("Line 17")
    expect(summary.locator("code")).to_have_text("rules[2].mutate.resources.memory.factor")
    expect(page.locator(".gutter mark")).to_have_text("17")
    expect(summary).to_be_focused()
    page.get_by_role("button", name="Go to line 17").click()
    expect(editor).to_be_focused()
    assert caret_line(page) == 17
    assert RetryPolicy.objects.get().version == 1
    screenshot(page, "policy-edit-errors")
    no_problems(page)

    # A key given twice is refused with both lines, not silently the last one kept.
    editor.fill(POLICY.replace("retryLimit: 3\n", "retryLimit: 3\nretryLimit: 7\n"))
    page.get_by_role("button", name="Validate").click()
    expect(summary.locator("li")).to_contain_text("found duplicate key 'retryLimit'")
    line = POLICY.splitlines().index("retryLimit: 3") + 1
    expect(summary.locator("li")).to_contain_text(f"first given on line {line}")
    expect(summary.locator("li .where")).to_have_text(f"Line {line + 1}")
    assert RetryPolicy.objects.get().version == 1

    # Saving a mistake anyway is refused by the server with the same error; nothing is stored.
    editor.fill(POLICY.replace("factor: 1.5", "factor: 0.5"))
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#editor-errors li")).to_contain_text("Line 17")
    expect(page.locator("#editor-errors")).to_contain_text("nothing was saved")
    assert RetryPolicy.objects.get().version == 1
    assert RetryPolicyVersion.objects.count() == 1
    no_problems(page)

    # Fix it (and change the limit), validate, save.
    editor.fill(
        POLICY.replace("factor: 1.5", "factor: 2").replace("retryLimit: 3", "retryLimit: 4")
    )
    page.get_by_role("button", name="Validate").click()
    expect(summary).to_contain_text("No problems found")
    page.get_by_role("button", name="Save").click()
    expect(page).to_have_url(re.compile(r"/policies/ml/#history$"))
    expect(page.get_by_role("status")).to_contain_text("Saved ml, version 2.")
    history = page.locator("#history table tbody tr")
    expect(history).to_have_count(2)
    expect(history.first).to_contain_text("2")
    expect(page.get_by_role("heading", name="Version 2 compared with version 1")).to_be_visible()
    expect(page.locator(".diff-remove", has_text="-retryLimit: 3")).to_be_visible()
    expect(page.locator(".diff-add", has_text="+retryLimit: 4")).to_be_visible()
    expect(page.locator(".diff-add", has_text="factor: 2")).to_have_count(1)
    page.locator("#history").scroll_into_view_if_needed()
    screenshot(page, "policy-history-diff")
    no_problems(page)

    # Attach it to queue demo as the evaluated policy.
    page.get_by_label("Queue", exact=True).select_option("demo")
    page.get_by_label("Make it the evaluated policy").check()
    page.get_by_role("button", name="Attach").click()
    expect(page.get_by_role("status")).to_contain_text("Attached ml to queue demo.")
    expect(page.locator("#queues table")).to_contain_text("demo")
    expect(page.locator("#queues table")).to_contain_text("(evaluated)")
    assert Queue.objects.get(name="demo").retry_policies == ["ml"]
    no_problems(page)

    # The rule tester: an OOM failure on the first retry.
    page.get_by_label("Failure category").fill("oom")
    page.get_by_label("Retries already used").fill("1")
    page.get_by_role("button", name="Test").click()
    result = page.locator("#tester-result")
    expect(result.locator(".verdict")).to_have_text("Retry")
    expect(result.locator(".matched-rule")).to_contain_text("rule 3")
    expect(result.locator(".reason")).to_contain_text("retry 2 of 4 (rule 3)")
    expect(result).to_contain_text("memory × 2")
    result.scroll_into_view_if_needed()
    screenshot(page, "policy-tester")
    no_problems(page)
    assert RetryPolicy.objects.get().version == 2


@pytest.mark.django_db(transaction=True)
def test_new_policy_page_and_keyboard_order(page, setup, screenshot):
    log_in(page, "/policies/new")
    expect(page.get_by_role("heading", name="New retry policy")).to_be_visible()
    # The skip link comes first, then the navigation; Tab reaches the editor and its buttons.
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.get_by_label("Policy (YAML)").focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Validate")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Save")).to_be_focused()
    screenshot(page, "policy-new")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/policies/my-policy/#history$"))
    assert RetryPolicyVersion.objects.filter(policy_name="my-policy").count() == 1
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_the_editor_works_without_javascript(page_without_js, setup):
    page = page_without_js
    log_in(page, "/policies/ml/edit")
    expect(page.get_by_role("button", name="Validate")).to_be_hidden()
    page.get_by_label("Policy (YAML)").fill(POLICY.replace("onCategory: gpu", "onCategory: ''"))
    page.get_by_role("button", name="Save").click()
    errors = page.locator("#editor-errors")
    expect(errors).to_contain_text("nothing was saved")
    expect(errors.locator("li")).to_contain_text("Line 10")
    expect(errors.locator("code")).to_have_text("rules[1].onCategory")
    assert RetryPolicy.objects.get().version == 1


@pytest.mark.django_db(transaction=True)
def test_the_pages_fit_a_phone_screen(page, setup):
    log_in(page, "/policies/")
    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("/policies/", "/policies/ml/", "/policies/ml/edit", "/policies/new"):
        page.goto(path)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} is {overflow}px wider than the screen"
        no_problems(page)
