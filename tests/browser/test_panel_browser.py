"""A job's side panel and full page in real Chromium: a row of the grid opens the panel, its
tabs work by keyboard, Escape closes it and gives the focus back to the row, `?job=` opens it
again; the log viewer follows a running job as the executor writes its log, wraps, searches
and downloads; the panel covers a phone's screen; actions work from the panel. Every page
passes the accessibility check and logs no console error. The screenshots job-panel,
job-log and job-page come from here."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from armada.models import Event, Job, Run, RunLog
from tests.browser.axe import assert_accessible
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401
from tests.conftest import at
from tests.lookout.builders import make_job, make_run
from tests.lookout.panel_jobs import retried_job

pytestmark = pytest.mark.django_db(transaction=True)

LOG = "epoch 1 loss 0.93\nepoch 2 loss 0.71\nepoch 3 loss 0.55\n"
# The grid with its live updates paused: rows replaced by them while a test clicks one would
# swallow the click (the live updates have their own tests).
GRID = "/?live=0"


@pytest.fixture
def jobs(fast_passwords, admin_user, queue):  # noqa: F811
    """A running job with a log, a job retried three times with its memory grown, a queued
    job; a few events each."""
    now = timezone.now()
    make_job(
        "01jb0queued", state="queued", job_set="train-9", submitted_at=now, last_transition_at=now
    )
    retried_job("01jb1retried", start=now - timedelta(minutes=30))
    Job.objects.filter(id="01jb1retried").update(job_set="train-7", annotations={"team": "ml"})
    make_job(
        "01jb2running",
        state="running",
        job_set="train-8",
        run_count=1,
        submitted_at=now,
        last_transition_at=now,
    )
    make_run("run-live", "01jb2running", state="running", node="node-2", leased_at=now)
    RunLog.objects.create(run_id="run-live", text=LOG, updated_at=now)
    for job_id in ("01jb0queued", "01jb1retried", "01jb2running"):
        Event.objects.bulk_create(
            Event(created=at(i), queue="demo", job_set="s", job_id=job_id, type=kind)
            for i, kind in enumerate(("submitted", "queued", "leased", "running"))
        )
    return {"queued": "01jb0queued", "retried": "01jb1retried", "running": "01jb2running"}


def open_page(page, path: str) -> None:
    """Log in to ``path`` and wait for its scripts (the grid's and the panel's) to be set up."""
    log_in(page, path)


def row(page, job_id: str):
    return page.locator(f'#job-rows tr[data-job-id="{job_id}"]')


def the_panel(page):
    return page.locator("#job-panel")


def open_by_click(page, job_id: str) -> None:
    row(page, job_id).locator('td[data-col="state"]').click()
    expect(the_panel(page)).to_be_visible()
    expect(the_panel(page).get_by_role("heading", name=re.compile(job_id))).to_be_visible()


def test_a_row_opens_the_panel_with_tabs_by_keyboard_and_escape_returns_to_it(
    page, jobs, screenshot
):
    open_page(page, GRID)
    job_id = jobs["retried"]
    expect(row(page, job_id)).to_be_visible()
    open_by_click(page, job_id)
    panel = the_panel(page)
    expect(page).to_have_url(re.compile(rf"[?&]job={job_id}"))
    expect(panel.locator(".runs-summary")).to_have_text("Runs 4 · Retries 3 of 5")
    expect(panel.locator(".memory-growth")).to_have_text("256Mi → 864Mi (×3.375)")
    expect(panel.get_by_role("link", name="Open full page").first).to_have_attribute(
        "href", f"/jobs/{job_id}"
    )
    expect(row(page, job_id)).to_have_class(re.compile("panel-row"))
    # Live updates back on for the picture: rows read again keep the open job marked.
    page.get_by_role("button", name="Live").click()
    expect(page.locator("#grid-live-status")).to_have_text("Following events")
    expect(row(page, job_id)).to_have_class(re.compile("panel-row"))
    page.evaluate("() => document.activeElement.blur()")
    screenshot(page, "job-panel")
    assert_accessible(page)

    # The tabs: arrow keys move and select, Home and End go to the ends.
    details = panel.get_by_role("tab", name="Details")
    details.focus()
    page.keyboard.press("ArrowRight")
    runs = panel.get_by_role("tab", name="Runs")
    expect(runs).to_be_focused()
    expect(runs).to_have_attribute("aria-selected", "true")
    expect(panel.get_by_role("tabpanel", name="Runs")).to_be_visible()
    expect(panel.get_by_role("tabpanel", name="Runs").locator(".decision").first).to_have_text(
        "fail_rule"
    )
    expect(panel.get_by_role("tabpanel", name="Details")).to_be_hidden()
    page.keyboard.press("End")
    expect(panel.get_by_role("tab", name="Logs")).to_be_focused()
    page.keyboard.press("ArrowRight")  # wraps around
    expect(details).to_be_focused()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(panel.get_by_role("tab", name="YAML")).to_have_attribute("aria-selected", "true")
    expect(panel.get_by_role("tabpanel", name="YAML")).to_contain_text("image: busybox")
    assert_accessible(page)

    # Escape closes it, gives the focus back to the row and takes job= out of the URL.
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(row(page, job_id)).to_be_focused()
    expect(page).not_to_have_url(re.compile(r"job="))

    # Enter on the focused row opens it again; the URL with job= reopens it on load.
    page.keyboard.press("Enter")
    expect(panel).to_be_visible()
    expect(page).to_have_url(re.compile(rf"job={job_id}"))
    page.reload()
    expect(the_panel(page)).to_be_visible()
    expect(the_panel(page).get_by_role("heading", name=re.compile(job_id))).to_be_visible()
    the_panel(page).get_by_role("button", name="Close job details").click()
    expect(the_panel(page)).to_be_hidden()
    expect(row(page, job_id)).to_be_focused()
    no_problems(page)


def test_the_panel_opens_on_the_grids_event_and_acts_on_the_job(page, jobs):
    open_page(page, GRID)
    job_id = jobs["queued"]
    page.evaluate(
        "id => document.dispatchEvent(new CustomEvent('lookout:open-job', {detail: {jobId: id}}))",
        job_id,
    )
    panel = the_panel(page)
    expect(panel.get_by_role("heading", name=re.compile(job_id))).to_be_visible()
    expect(panel).to_contain_text("Why pending")
    panel.get_by_label("Reason (optional)").fill("not needed")
    panel.get_by_role("button", name="Cancel job").click()
    expect(panel.get_by_role("status").first).to_contain_text(f"Cancelling job {job_id}.")
    expect(panel.locator(".job-facts .state")).to_have_text("cancelled")
    expect(panel.get_by_role("button", name="Cancel job")).to_have_count(0)
    assert Job.objects.get(id=job_id).state == "cancelled"
    assert page.url.endswith(f"job={job_id}")  # the grid stayed where it was
    no_problems(page)


def test_the_log_follows_a_running_job_wraps_searches_and_downloads(page, jobs, screenshot):
    job_id = jobs["running"]
    open_page(page, GRID)
    page.evaluate("() => { window.notReloaded = true; }")
    open_by_click(page, job_id)
    panel = the_panel(page)
    panel.get_by_role("tab", name="Logs").click()
    log = panel.locator("pre.log")
    expect(log).to_have_text(LOG)
    expect(panel.locator(".log-status")).to_contain_text("Following")

    # The executor sends more of the log: it appears, without a reload.
    RunLog.objects.filter(run_id="run-live").update(
        text=LOG + "epoch 4 loss 0.41\n", updated_at=timezone.now()
    )
    expect(log).to_contain_text("epoch 4 loss 0.41")
    assert page.evaluate("() => window.notReloaded") is True
    # Scrolled to its end while the reader has not scrolled up.
    assert page.evaluate(
        "() => { const p = document.querySelector('#job-panel pre.log');"
        " return p.scrollHeight - p.scrollTop - p.clientHeight < 8; }"
    )

    # Wrap on and off.
    assert "log-nowrap" not in (log.get_attribute("class") or "")
    panel.get_by_label("Wrap lines").uncheck()
    expect(log).to_have_class(re.compile("log-nowrap"))
    panel.get_by_label("Wrap lines").check()
    expect(log).not_to_have_class(re.compile("log-nowrap"))

    # Search: matches marked and counted, next and previous go round.
    panel.get_by_label("Search").fill("loss 0")
    expect(panel.locator(".log-count")).to_have_text("1 of 4")
    expect(log.locator("mark")).to_have_count(4)
    panel.get_by_role("button", name="Next").click()
    expect(panel.locator(".log-count")).to_have_text("2 of 4")
    panel.get_by_role("button", name="Previous").click()
    panel.get_by_role("button", name="Previous").click()
    expect(panel.locator(".log-count")).to_have_text("4 of 4")
    expect(log.locator("mark.current")).to_have_text("loss 0")
    screenshot(page, "job-log")

    # New text keeps the search: the count follows.
    RunLog.objects.filter(run_id="run-live").update(
        text=LOG + "epoch 4 loss 0.41\nepoch 5 loss 0.33\n", updated_at=timezone.now()
    )
    expect(panel.locator(".log-count")).to_have_text("4 of 5")
    panel.get_by_label("Search").fill("")
    expect(log.locator("mark")).to_have_count(0)

    # Back at the end, the log follows again; a reader who scrolled up stays where they are.
    log.evaluate("p => { p.scrollTop = p.scrollHeight; }")
    many = "".join(f"step {i}\n" for i in range(300))
    RunLog.objects.filter(run_id="run-live").update(text=many, updated_at=timezone.now())
    expect(log).to_contain_text("step 299")
    assert log.evaluate("p => p.scrollHeight - p.scrollTop - p.clientHeight") < 8
    log.evaluate("p => { p.scrollTop = 0; }")
    RunLog.objects.filter(run_id="run-live").update(
        text=many + "step 300\n", updated_at=timezone.now()
    )
    expect(log).to_contain_text("step 300")
    assert log.evaluate("p => p.scrollTop") == 0

    # Download.
    with page.expect_download() as download:
        panel.get_by_role("link", name="Download").click()
    assert download.value.suggested_filename == f"{job_id}-run-live.log"

    # The run ends: the viewer says so and stops following.
    Run.objects.filter(id="run-live").update(state="succeeded", finished_at=timezone.now())
    expect(panel.locator(".log-status")).to_have_text("The run has ended.")
    expect(panel.locator(".log-follow-label")).to_be_hidden()
    assert_accessible(page)
    no_problems(page)


def test_a_log_with_markup_is_shown_as_text(page, jobs):
    RunLog.objects.filter(run_id="run-live").update(text='<img src=x id="injected">\n<b>b</b>')
    open_page(page, f"/jobs/{jobs['running']}")
    expect(page.locator("pre.log")).to_have_text('<img src=x id="injected">\n<b>b</b>')
    expect(page.locator("#injected")).to_have_count(0)
    page.get_by_label("Search").fill("<b>")
    expect(page.locator(".log-count")).to_have_text("1 of 1")
    expect(page.locator("#injected")).to_have_count(0)
    no_problems(page)


def test_the_full_page_shows_every_part_and_passes_the_checks(page, jobs, screenshot):
    job_id = jobs["retried"]
    open_page(page, f"/jobs/{job_id}")
    expect(page.get_by_role("heading", name=f"Job {job_id}")).to_be_visible()
    expect(page.locator(".runs-summary")).to_have_text("Runs 4 · Retries 3 of 5")
    expect(page.locator(".memory-growth")).to_have_text("256Mi → 864Mi (×3.375)")
    for name in ("Runs", "Log", "Events", "Pod spec"):
        expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    expect(page.locator(".trail").first).to_contain_text("Decision trail")
    expect(page.get_by_role("button", name="Copy YAML")).to_be_visible()
    assert_accessible(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    screenshot(page, "job-page")

    # The run picker shows an older run's log in place.
    RunLog.objects.create(run_id="r0", text="first attempt: OOMKilled", updated_at=at(5))
    page.get_by_label("Run", exact=True).select_option("r0")
    expect(page.locator("pre.log")).to_have_text("first attempt: OOMKilled")
    expect(page.get_by_role("link", name="Download")).to_have_attribute("href", "/runs/r0/log.txt")
    no_problems(page)


def test_the_full_page_works_without_script(page_without_js, jobs, live_server):
    page = page_without_js
    log_in(page, f"/jobs/{jobs['retried']}")
    RunLog.objects.create(run_id="r1", text="second attempt", updated_at=at(15))
    page.get_by_label("Run", exact=True).select_option("r1")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"run=r1"))
    expect(page.locator("pre.log")).to_have_text("second attempt")
    expect(page.get_by_role("link", name="Download")).to_have_attribute("href", "/runs/r1/log.txt")


def test_at_phone_width_the_panel_covers_the_screen(page, jobs):
    page.set_viewport_size({"width": 375, "height": 740})
    open_page(page, GRID)
    job_id = jobs["running"]
    page.evaluate(
        "id => document.dispatchEvent(new CustomEvent('lookout:open-job', {detail: {jobId: id}}))",
        job_id,
    )
    panel = the_panel(page)
    expect(panel.get_by_role("heading", name=re.compile(job_id))).to_be_visible()
    box = panel.bounding_box()
    assert box is not None
    assert (box["x"], box["y"], box["width"], box["height"]) == (0, 0, 375, 740)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    panel.get_by_role("tab", name="Logs").click()
    expect(panel.locator("pre.log")).to_contain_text("epoch 3")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    assert_accessible(page)
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    no_problems(page)


def test_on_a_wide_screen_the_panel_is_a_column_whose_width_is_kept(page, jobs):
    open_page(page, GRID)
    open_by_click(page, jobs["running"])
    panel = the_panel(page)
    grid = page.locator("#grid-wrap")  # the grid scrolls inside it
    before = panel.bounding_box()
    assert before is not None and before["x"] + before["width"] == 1280 and before["y"] == 0
    # The grid's page gives the panel its room instead of lying under it.
    main = page.locator("main").bounding_box()
    assert main is not None and main["x"] + main["width"] <= before["x"] + 1
    assert grid.bounding_box()["x"] + grid.bounding_box()["width"] <= before["x"] + 1
    # Wider with the keyboard on its edge, narrower by dragging the edge.
    edge = panel.get_by_role("separator", name="Width of the job details")
    edge.focus()
    page.keyboard.press("ArrowLeft")
    expect(edge).to_have_attribute("aria-valuenow", str(round(before["width"]) + 32))
    assert round(panel.bounding_box()["width"]) == round(before["width"]) + 32
    x = panel.bounding_box()["x"]
    page.mouse.move(x + 2, 400)
    page.mouse.down()
    page.mouse.move(x + 200, 400, steps=5)
    page.mouse.up()
    expect(edge).to_have_attribute("aria-valuenow", str(round(1280 - (x + 200))))
    width = panel.bounding_box()["width"]
    # The width is kept for the next job and the next visit.
    page.reload()
    expect(the_panel(page)).to_be_visible()
    expect(the_panel(page).get_by_role("heading", name=re.compile(jobs["running"]))).to_be_visible()
    assert the_panel(page).bounding_box()["width"] == width
    no_problems(page)


def test_following_stops_and_says_so_when_the_session_ends(page, jobs):
    open_page(page, f"/jobs/{jobs['running']}")
    status = page.locator(".log-status")
    expect(status).to_contain_text("Following")
    page.context.clear_cookies()
    expect(status).to_have_text("Your session has ended: reload the page to log in again.")
    expect(page.locator("pre.log")).to_have_text(LOG)  # the log stays as it was
    expect(page.locator(".log-follow-label")).to_be_hidden()
    no_problems(page)
