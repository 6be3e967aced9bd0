"""The accessibility check itself: it must report what it is there to catch, or a page that
"passes" it would say nothing."""

from __future__ import annotations

import pytest

from tests.browser.axe import assert_accessible, axe_violations


def test_the_check_reports_serious_and_critical_violations(page):
    page.set_content(
        "<!doctype html><html lang='en'><head><title>t</title></head><body><main>"
        "<img src='data:,'><button></button>"
        "</main></body></html>"
    )
    problems = axe_violations(page)
    assert any("image-alt" in p for p in problems), problems
    assert any("button-name" in p for p in problems), problems
    with pytest.raises(AssertionError, match="image-alt"):
        assert_accessible(page)


def test_a_clean_page_passes(page):
    page.set_content(
        "<!doctype html><html lang='en'><head><title>t</title></head><body><main>"
        "<h1>Jobs</h1><img src='data:,' alt='logo'><button>Cancel</button>"
        "</main></body></html>"
    )
    assert_accessible(page)
