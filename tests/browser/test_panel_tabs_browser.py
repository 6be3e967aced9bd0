"""The side panel's tab strip in real Chromium keeps its height and its labels however much
a tab holds: with a job of 20 runs and as many events, at 1280 and 390 px wide, every tab's
label is visible, the strip is at least 30 px high, and the tab's body scrolls instead."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from armada.models import Event
from tests.browser.axe import assert_accessible
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db(transaction=True)

JOB = "01jbtabs20runs"
RUNS = 20
TABS = ("Details", "Runs", "YAML", "Events", "Logs")
MIN_STRIP_HEIGHT = 30


@pytest.fixture
def many_runs(fast_passwords, admin_user, queue):  # noqa: F811
    """A job that failed 20 times, each run retried but the last, with an event per run."""
    start = timezone.now() - timedelta(hours=2)
    make_job(
        JOB,
        state="failed",
        run_count=RUNS,
        failure_count=RUNS,
        retry_count=RUNS - 1,
        submitted_at=start,
        last_transition_at=start + timedelta(minutes=RUNS * 5),
    )
    for i in range(RUNS):
        at = start + timedelta(minutes=5 * i)
        make_run(
            f"run-{i:02d}",
            JOB,
            state="failed",
            node=f"node-{i % 4}",
            leased_at=at,
            running_at=at + timedelta(seconds=10),
            finished_at=at + timedelta(minutes=4),
            exit_code=137,
            reason="OOMKilled",
            failure_category="oom",
            failure_subcategory="memory",
            retryable=i < RUNS - 1,
            decision={"decision": "retry" if i < RUNS - 1 else "fail_policy_limit"},
        )
    Event.objects.bulk_create(
        Event(created=start + timedelta(minutes=i), queue="demo", job_set="set-1", job_id=JOB,
              type="failed" if i % 2 else "leased")
        for i in range(2 * RUNS)
    )  # fmt: skip
    return JOB


def strip_is_whole(page) -> None:
    """Every tab's label is visible and the strip keeps its height."""
    panel = page.locator("#job-panel")
    strip = panel.get_by_role("tablist")
    box = strip.bounding_box()
    assert box is not None and box["height"] >= MIN_STRIP_HEIGHT, box
    for name in TABS:
        tab = panel.get_by_role("tab", name=name)
        expect(tab).to_be_visible()
        expect(tab).to_have_text(name)
        tab_box = tab.bounding_box()
        assert tab_box is not None and tab_box["height"] >= MIN_STRIP_HEIGHT - 6, (name, tab_box)
        # Wholly inside the strip (not cut off by it) and inside the window.
        assert box["y"] - 1 <= tab_box["y"], (name, tab_box, box)
        assert tab_box["y"] + tab_box["height"] <= box["y"] + box["height"] + 1, (name, tab_box)
        assert tab_box["x"] + tab_box["width"] <= page.viewport_size["width"] + 1, (name, tab_box)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_tab_strip_keeps_its_height_with_many_runs(page, many_runs, width):
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, f"/?live=0&job={many_runs}")
    panel = page.locator("#job-panel")
    expect(panel.get_by_role("heading", name=many_runs)).to_be_visible()
    strip_is_whole(page)
    for name, part in (("Runs", "#run-run-19"), ("Events", "li, tr")):
        panel.get_by_role("tab", name=name).click()
        body = panel.get_by_role("tabpanel", name=name)
        expect(body.locator(part).first).to_be_visible()
        strip_is_whole(page)
        # The body scrolls, not the strip: it is shorter than what it holds.
        assert panel.locator(".panel-body").evaluate("b => b.scrollHeight > b.clientHeight")
    assert_accessible(page)
    no_problems(page)
