"""The grouped jobs grid in real Chromium: group by queue then job set, expand a queue, expand
a job set into its job rows and page through them, collapse, do it all with the keyboard,
reopen a shared URL with its groups open, read the per-state counts; every state passes the
accessibility check, fits a phone, and logs no console error."""

from __future__ import annotations

import json
import random
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from armada.services.queues import queue_create
from tests.browser.axe import assert_accessible
from tests.browser.test_grid_live_browser import (  # noqa: F401 - fixtures
    LIVE_TIMEOUT,
    asgi_server,
    open_page,
)
from tests.browser.test_policies_browser import log_in, no_problems
from tests.conftest import T0
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db(transaction=True)

VIEW = "/?group=queue,job_set&per_page=25"


STATES = ["succeeded"] * 4 + ["failed"] * 3 + ["running"] * 2 + ["queued"] * 2 + ["cancelled"]
CATEGORIES = {"oom": "container-oom", "user-error": "exit-1", "gpu": "xid-79"}


@pytest.fixture
def grouped(admin_user, queue):
    """Three queues; demo has a big job set (30 jobs) and two small ones. States, failure
    categories and latest runs vary as they do in a busy cluster."""
    for name in ("research", "batch"):
        queue_create(actor=admin_user, data={"name": name, "owners": ["olive"]}, now=T0)
    rnd = random.Random(5)
    now = timezone.now()
    n = 0
    for queue_name, job_set, count in (
        ("demo", "train-big", 30),
        ("demo", "eval", 4),
        ("demo", "sweep-7", 3),
        ("research", "ablation", 6),
        ("batch", "nightly", 5),
    ):
        for _ in range(count):
            n += 1
            job_id = f"01jg{n:04d}"
            state = rnd.choice(STATES)
            category = rnd.choice(list(CATEGORIES)) if state == "failed" else ""
            submitted = now - timedelta(minutes=300 - 3 * n)
            make_job(
                job_id,
                queue=queue_name,
                job_set=job_set,
                state=state,
                failure_category=category,
                failure_subcategory=CATEGORIES.get(category, ""),
                retry_count=1 if category == "oom" else 0,
                submitted_at=submitted,
                last_transition_at=submitted + timedelta(minutes=rnd.randrange(1, 60)),
            )
            if state == "queued":
                continue
            make_run(
                f"r{job_id}",
                job_id,
                state=state,
                node=f"node-{n % 3}",
                leased_at=submitted,
                exit_code={"succeeded": 0, "failed": 137 if category == "oom" else 1}.get(state),
                retryable=(category == "oom") if state == "failed" else None,
                decision={"decision": "fail"} if state == "failed" else {},
            )


def group_row(page, level: int, value: str):
    return page.locator(
        f'tr.group-row[data-level="{level}"]',
        has=page.locator(".group-value", has_text=re.compile(f"^{re.escape(value)}$")),
    )


def toggle(page, level: int, value: str):
    return group_row(page, level, value).locator("button.group-toggle")


def expanded_in_url(page) -> list[list]:
    query = parse_qs(urlparse(page.url).query)
    return [json.loads(v) for v in query.get("expanded", [])]


def count_rows_changed(page) -> None:
    page.evaluate(
        """() => { window.rowsChanged = 0;
        document.addEventListener("lookout:rows-changed", () => { window.rowsChanged += 1; }); }"""
    )


def test_expand_collapse_and_page_through_groups(open_page, grouped, screenshot):  # noqa: F811
    """On the ASGI server, as deployed: the live updates' stream is open beside the groups."""
    page = open_page()
    log_in(page, VIEW)
    expect(page.locator("#grid-live-status")).to_have_text("Following events", timeout=LIVE_TIMEOUT)
    top = page.locator('tr.group-row[data-level="1"]')
    expect(top).to_have_count(3)
    # Largest first, each with its total and its jobs per state as text.
    expect(top.first.locator(".group-value")).to_have_text("demo")
    expect(top.first.locator(".group-total")).to_have_text("37 jobs")
    expect(top.first.locator('.group-states [data-state="failed"]')).to_have_text(
        re.compile(r"^failed \d+$")
    )
    expect(toggle(page, 1, "demo")).to_have_attribute("aria-expanded", "false")
    assert_accessible(page)
    no_problems(page)
    count_rows_changed(page)

    toggle(page, 1, "demo").click()
    expect(toggle(page, 1, "demo")).to_have_attribute("aria-expanded", "true")
    expect(group_row(page, 1, "demo")).to_have_attribute("data-expanded", "true")
    second = page.locator('tr.group-row[data-level="2"]')
    expect(second).to_have_count(3)
    expect(second.first.locator(".group-value")).to_have_text("train-big")
    expect(second.first.locator(".group-total")).to_have_text("30 jobs")
    # The child rows come right after their group, before the next queue.
    order = page.eval_on_selector_all(
        "#job-rows tr.group-row", "rows => rows.map(r => r.getAttribute('data-level'))"
    )
    assert order == ["1", "2", "2", "2", "1", "1"]
    assert expanded_in_url(page) == [[["queue", "demo"]]]
    assert page.evaluate("window.rowsChanged") == 1

    # A small job set's jobs, between its group and the next: the documented view.
    toggle(page, 2, "eval").click()
    jobs = page.locator("#job-rows tr.job-row")
    expect(jobs).to_have_count(4)
    page.evaluate("document.activeElement.blur()")
    page.mouse.move(640, 760)
    screenshot(page, "jobs-grouped")
    toggle(page, 2, "eval").click()
    expect(jobs).to_have_count(0)
    assert page.evaluate("window.rowsChanged") == 3

    toggle(page, 2, "train-big").click()
    expect(jobs).to_have_count(25)
    more = page.get_by_role("button", name="Show 25 more jobs of demo / train-big")
    expect(more).to_be_visible()
    controls = toggle(page, 2, "train-big").get_attribute("aria-controls").split()
    assert len(controls) == 26
    for name in controls:
        expect(page.locator(f"#{name}")).to_have_count(1)
    assert expanded_in_url(page) == [
        [["queue", "demo"]],
        [["queue", "demo"], ["job_set", "train-big"]],
    ]
    assert_accessible(page)

    more.click()
    expect(jobs).to_have_count(30)
    expect(more).to_have_count(0)
    assert page.evaluate("window.rowsChanged") == 5
    ids = page.eval_on_selector_all(
        "#job-rows tr.job-row", "rows => rows.map(r => r.dataset.jobId)"
    )
    assert len(set(ids)) == 30

    toggle(page, 1, "demo").click()
    expect(page.locator('tr.group-row[data-level="2"]')).to_have_count(0)
    expect(jobs).to_have_count(0)
    expect(toggle(page, 1, "demo")).to_have_attribute("aria-expanded", "false")
    assert expanded_in_url(page) == []
    no_problems(page)


def test_the_keyboard_expands_moves_and_collapses(page, grouped):
    log_in(page, VIEW)
    demo = toggle(page, 1, "demo")
    demo.focus()
    page.keyboard.press("ArrowRight")
    expect(demo).to_have_attribute("aria-expanded", "true")
    expect(page.locator('tr.group-row[data-level="2"]')).to_have_count(3)
    page.keyboard.press("ArrowRight")  # open: to its first child
    expect(toggle(page, 2, "train-big")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#job-rows tr.job-row")).to_have_count(25)
    page.keyboard.press("Space")
    expect(page.locator("#job-rows tr.job-row")).to_have_count(0)
    page.keyboard.press("ArrowLeft")  # closed: to its parent
    expect(demo).to_be_focused()
    page.keyboard.press("ArrowLeft")
    expect(demo).to_have_attribute("aria-expanded", "false")
    expect(page.locator('tr.group-row[data-level="2"]')).to_have_count(0)
    expect(demo).to_be_focused()
    no_problems(page)


def test_a_shared_url_reopens_its_groups(page, grouped):
    log_in(page, VIEW)
    toggle(page, 1, "research").click()
    toggle(page, 2, "ablation").click()
    expect(page.locator("#job-rows tr.job-row")).to_have_count(6)
    shared = page.url
    page.goto("/queues/")
    page.goto(shared)
    expect(toggle(page, 1, "research")).to_have_attribute("aria-expanded", "true")
    expect(toggle(page, 2, "ablation")).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#job-rows tr.job-row")).to_have_count(6)
    expect(toggle(page, 1, "demo")).to_have_attribute("aria-expanded", "false")
    # The rows the server rendered open are named by their toggles.
    controls = toggle(page, 2, "ablation").get_attribute("aria-controls").split()
    assert len(controls) == 6
    for name in controls:
        expect(page.locator(f"#{name}")).to_have_count(1)
    assert_accessible(page)
    # Collapsing a reopened group removes it, and what was open below it, from the URL.
    toggle(page, 1, "research").click()
    expect(page.locator("#job-rows tr.job-row")).to_have_count(0)
    assert expanded_in_url(page) == []
    no_problems(page)


def test_grouped_rows_fit_a_phone(page, grouped):
    page.set_viewport_size({"width": 375, "height": 740})
    log_in(page, VIEW)
    toggle(page, 1, "demo").click()
    expect(page.locator('tr.group-row[data-level="2"]')).to_have_count(3)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, width
    assert_accessible(page)
    no_problems(page)


def test_a_group_that_cannot_be_opened_says_why(page, grouped):
    log_in(page, VIEW)
    demo = toggle(page, 1, "demo")
    demo.evaluate(
        "b => { b.dataset.childrenUrl = b.dataset.childrenUrl.replace('queue', 'state'); }"
    )
    demo.click()
    alert = page.get_by_role("alert").filter(has_text="path: level 1 is")
    expect(alert).to_contain_text("(400)")
    assert expanded_in_url(page) == []
    demo.click()
    expect(alert).to_have_count(0)
    expect(demo).to_have_attribute("aria-expanded", "false")
    # The browser reports the refused request itself; nothing else went wrong.
    assert [p for p in page.problems if "status of 400" not in p] == []
