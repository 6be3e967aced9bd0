"""Lookout under its Content-Security-Policy in real Chromium: every page arrives with the
policy, the browser reports no violation, and the pages' scripts still work (the editor's
Validate button fetches, the jobs grid's filters fetch and swap rows)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import lookout_pages
from tests.browser.test_lookout_browser import demo_data  # noqa: F401
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401

# Every violation the page sees is kept on ``window.cspViolations`` (and is also a console
# error, which ``no_problems`` catches).
RECORD_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.cspViolations.push(`${e.violatedDirective}: ${e.blockedURI}`);
});
"""


def _visit(page, path: str) -> None:
    response = page.goto(path)
    assert response is not None and response.status == 200, path
    policy = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy and "style-src 'self'" in policy, (path, policy)
    assert page.evaluate("window.cspViolations") == [], path


@pytest.mark.django_db(transaction=True)
def test_every_page_keeps_its_policy_and_its_scripts_work(page, demo_data):  # noqa: F811
    page.add_init_script(RECORD_VIOLATIONS)
    log_in(page, "/")
    job_id = demo_data["failed-oom"]
    for path in (*lookout_pages(job_id), "/policies/", "/policies/ml/", "/tokens/"):
        _visit(page, path)
    no_problems(page)

    # The editor's script runs and its fetch is allowed (connect-src 'self').
    _visit(page, "/policies/ml/edit")
    page.get_by_role("button", name="Validate").click()
    expect(page.locator("#editor-errors")).to_contain_text("No problems found")

    # The jobs grid's filters fetch the rows and swap them in (htmx, no reload).
    _visit(page, "/")
    page.get_by_label("Filter Job set (starts with)").fill("sweep")
    expect(page).to_have_url(re.compile(r"job_set=sweep"))
    expect(page.locator("#job-rows tr.job-row")).to_have_count(3)
    assert page.evaluate("window.cspViolations") == []
    no_problems(page)
