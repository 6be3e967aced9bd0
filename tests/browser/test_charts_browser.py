"""The decision-metrics page in real Chromium: a 40-minute history fills the charts of the
default 6-hour period; at 1280 px the charts take the content width and are tall enough to
read, no tick label is clipped (each text's box lies inside its SVG's), the page says how
fresh the history is and shows live totals beside the charted ones, the period chooser
works, the page passes the accessibility check and fits a phone, and nothing is logged to
the console. The screenshots decision-metrics and decision-metrics-phone come from here."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from armada.services.counters import counters_add, tally
from armada.services.metric_history import metrics_sample
from tests.browser.axe import assert_accessible
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401

DECISIONS = "armada_scheduler_retry_policy_decisions_total"
CATEGORIES = "armada_executor_job_failure_category_total"
GANG_SKIPS = "armada_scheduler_retry_policy_gang_skipped_total"
PHONE = {"width": 375, "height": 740}


def _count(name: str, amount: int, **labels: str) -> None:
    if amount:
        counters_add(name=name, increments={k: amount for k in tally(labels)})


@pytest.fixture
def history(fast_passwords, admin_user, queue):  # noqa: F811
    """40 minutes of history sampled every minute (a baseline, then decisions of two
    policies in two queues, failures in three categories, gang skips), and a few decisions
    since the last sample, 30 seconds ago."""
    now = timezone.now()
    _count(DECISIONS, 1, queue="demo", pool="default", policy="ml", decision="retry")
    _count(CATEGORIES, 1, failure_category="oom", failure_subcategory="memory")
    metrics_sample(now=now - timedelta(minutes=40))
    for minute in range(39, 0, -1):
        wave = (minute * 7) % 5
        _count(DECISIONS, wave, queue="demo", pool="default", policy="ml", decision="retry")
        _count(
            DECISIONS,
            minute % 3 // 2,
            queue="demo",
            pool="default",
            policy="ml",
            decision="fail_rule",
        )
        _count(
            DECISIONS,
            (minute % 4 == 0) * 2,
            queue="research",
            pool="default",
            policy="nightly",
            decision="fail_policy_limit",
        )
        _count(CATEGORIES, wave // 2, failure_category="oom", failure_subcategory="memory")
        _count(CATEGORIES, minute % 2, failure_category="user-error", failure_subcategory="exit-1")
        _count(CATEGORIES, (minute % 9 == 0) * 3, failure_category="gpu", failure_subcategory="xid")
        _count(GANG_SKIPS, minute % 6 // 5, policy="ml")
        metrics_sample(now=now - timedelta(minutes=minute, seconds=-30))
    _count(DECISIONS, 3, queue="demo", pool="default", policy="ml", decision="retry")
    return admin_user


def visible_charts(page) -> list[dict]:
    """Every shown chart drawing: its box and the boxes of its texts (client pixels)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('svg.chart-svg')]
            .filter(svg => svg.getBoundingClientRect().width > 0)
            .map(svg => {
                const box = svg.getBoundingClientRect();
                return {
                    label: svg.getAttribute('aria-labelledby'),
                    box: {left: box.left, right: box.right, top: box.top, bottom: box.bottom},
                    texts: [...svg.querySelectorAll('text')].map(t => {
                        const r = t.getBoundingClientRect();
                        return {text: t.textContent, left: r.left, right: r.right,
                                top: r.top, bottom: r.bottom};
                    }),
                };
            })"""
    )


def assert_labels_inside(charts: list[dict]) -> None:
    assert charts
    for chart in charts:
        box = chart["box"]
        assert len(chart["texts"]) >= 6, chart["label"]
        for t in chart["texts"]:
            inside = (
                t["left"] >= box["left"] - 0.5
                and t["right"] <= box["right"] + 0.5
                and t["top"] >= box["top"] - 0.5
                and t["bottom"] <= box["bottom"] + 0.5
            )
            assert inside, f"{chart['label']}: {t['text']!r} at {t} leaves {box}"


def no_sideways_scroll(page) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than the screen"


@pytest.mark.django_db(transaction=True)
def test_charts_are_big_labelled_fresh_and_accessible(page, history, screenshot):
    log_in(page, "/metrics/decisions")
    expect(page.get_by_role("heading", name="Retry decisions and failures")).to_be_visible()
    expect(page.get_by_role("link", name="Decision metrics")).to_have_attribute(
        "aria-current", "page"
    )
    # The range is fitted to the 40 minutes of history and says so.
    expect(page.locator("#chart-range")).to_contain_text("the history starts at")
    expect(page.locator("#chart-range")).to_contain_text("(last 6h)")
    expect(page.locator("#chart-freshness")).to_contain_text(
        re.compile(r"History sampled every minute; last sample \d\d:\d\d:\d\d \(\d+s ago\)")
    )
    expect(page.locator("#sampler-stale")).to_have_count(0)
    chart = page.get_by_role("img", name="Policy ml: decisions")
    expect(chart).to_be_visible()
    expect(chart).to_have_attribute("aria-describedby", re.compile(r"policy-\d+-table"))
    expect(page.get_by_role("img", name="Failed runs per failure category")).to_be_visible()
    # Live totals beside the charted ones: 3 decisions since the last sample.
    legend = page.get_by_role("list", name="Policy ml: decisions: lines and totals")
    expect(legend).to_contain_text("(+3 since the last sample)")

    charts = visible_charts(page)
    assert len(charts) == 6  # policies ml and nightly, queues demo and research, categories, gangs
    for shown in charts:
        box = shown["box"]
        assert box["right"] - box["left"] >= 600, shown
        assert box["bottom"] - box["top"] >= 300, shown
        assert "-wide-" in shown["label"]
    assert_labels_inside(charts)
    texts = [t["text"] for t in charts[0]["texts"]]
    assert "Decisions per minute" in texts and "Time (UTC)" in texts

    page.get_by_text("Data table").first.click()
    table = page.locator("table.data").first
    expect(table).to_be_visible()
    expect(table.locator("th[scope=row]").last).to_contain_text("(so far)")
    page.get_by_text("Data table").first.click()
    assert_accessible(page)
    screenshot(page, "decision-metrics")
    no_problems(page)

    # The period chooser: the whole hour, which the history covers from its start.
    page.get_by_role("combobox", name="Period").select_option("1h")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"period=1h"))
    expect(page.locator("#chart-range")).to_contain_text("the history starts at")
    assert_labels_inside(visible_charts(page))
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_charts_fit_a_phone(page, history, screenshot):
    page.set_viewport_size(PHONE)
    log_in(page, "/metrics/decisions")
    expect(page.get_by_role("img", name="Policy ml: decisions")).to_be_visible()
    no_sideways_scroll(page)
    charts = visible_charts(page)
    assert len(charts) == 6 and all("-narrow-" in c["label"] for c in charts)
    for shown in charts:
        width = shown["box"]["right"] - shown["box"]["left"]
        assert 300 <= width <= PHONE["width"], shown
    assert_labels_inside(charts)
    # Readable: tick labels at least 10 px high.
    heights = [t["bottom"] - t["top"] for t in charts[0]["texts"]]
    assert min(heights) >= 10, heights
    page.get_by_text("Data table").first.click()
    no_sideways_scroll(page)
    page.get_by_text("Data table").first.click()
    assert_accessible(page)
    page.locator("#by-policy").evaluate("heading => heading.scrollIntoView()")
    screenshot(page, "decision-metrics-phone")
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_a_stopped_sampler_is_named_and_a_bad_period_refused(page, history):
    from armada.models import LeaderLease
    from armada.services.metric_history import SAMPLED_MARK

    LeaderLease.objects.filter(name=SAMPLED_MARK).update(
        expires_at=timezone.now() - timedelta(minutes=10)
    )
    log_in(page, "/metrics/decisions?period=24h")
    expect(page.locator("#sampler-stale")).to_contain_text("may be stopped")
    assert_accessible(page)
    no_problems(page)
    response = page.goto("/metrics/decisions?period=2h")
    assert response.status == 400
    expect(page.locator("main")).to_contain_text("period: must be one of 1h, 6h, 24h, 7d")
