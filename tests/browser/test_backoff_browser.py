"""A policy whose Retry rule has a ``backoff`` (our extension), in real Chromium: the policy
page lists it with its rule, and the rule tester shows the delay a retry would wait. The page
passes the accessibility check and fits a phone screen."""

from __future__ import annotations

import pytest
import yaml
from playwright.sync_api import expect

from armada.services.policies import policy_create
from tests.browser.axe import assert_accessible
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401
from tests.conftest import T0

POLICY = """apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: paced
retryLimit: 5
defaultAction: Fail
rules:
- action: Retry
  onCategory: gpu
  backoff: {initial: 30s, factor: 2, max: 10m}
- action: Retry
  onCategory: network
"""


@pytest.fixture
def paced(fast_passwords, settings, admin_user):  # noqa: F811
    from armada.core.config import parse_config

    settings.ARMADA = parse_config(
        {
            "scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": 10}},
            "executors": [{"id": "local"}],
        }
    )
    return policy_create(actor=admin_user, data=yaml.safe_load(POLICY), now=T0)


@pytest.mark.django_db(transaction=True)
def test_the_tester_shows_the_retry_delay(page, paced, screenshot):
    log_in(page, "/policies/paced/")
    rules = page.locator("ol.rules")
    expect(rules.locator("#rule-1")).to_contain_text("retry delay 30s, × 2 per retry, at most 10m")
    page.get_by_label("Failure category").fill("gpu")
    page.get_by_label("Retries already used").fill("2")
    page.get_by_role("button", name="Test").click()
    result = page.locator("#tester-result")
    expect(result.locator(".verdict")).to_have_text("Retry")
    expect(result.locator(".reason")).to_contain_text("after a retry delay of 2m")
    expect(result.locator(".retry-delay")).to_contain_text("2m before the job may be leased again")
    result.scroll_into_view_if_needed()
    screenshot(page, "policy-tester-backoff")
    assert_accessible(page)
    page.set_viewport_size({"width": 390, "height": 844})
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the tester is {overflow}px wider than a phone screen"
    no_problems(page)

    # A rule without backoff: no delay line at all.
    page.get_by_label("Failure category").fill("network")
    page.get_by_role("button", name="Test").click()
    expect(page.locator("#tester-result .verdict")).to_have_text("Retry")
    expect(page.locator("#tester-result .retry-delay")).to_have_count(0)
    no_problems(page)
