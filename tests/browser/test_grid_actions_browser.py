"""The jobs grid's bulk actions in real Chromium: select rows, cancel them after a confirmation
that says how many, reprioritize, preempt (offered only for running jobs), copy the ids to
the clipboard, a refusal for a queue where the user may not cancel, Escape closing the dialog
with focus back on its button. The rows change without a reload; no console errors; the
dialog passes the accessibility check. The screenshot jobs-bulk-confirm comes from here."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from armada.models import Event, Job, Queue, Run
from armada.services.queues import queue_create
from tests.browser.axe import assert_accessible
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401
from tests.conftest import T0
from tests.lookout.builders import make_job, make_run

QUEUED = ["job-q1", "job-q2", "job-q3"]
RUNNING = ["job-r1", "job-r2"]
LOCKED = ["job-l1", "job-l2"]  # in queue "locked": olive may watch, not act


@pytest.fixture
def grid_jobs(fast_passwords, admin_user, owner, django_user_model):  # noqa: F811
    django_user_model.objects.create_user("sam", password="sam-password")
    queue_create(actor=admin_user, data={"name": "demo", "owners": ["olive"]}, now=T0)
    queue_create(
        actor=admin_user,
        data={
            "name": "locked",
            "owners": ["sam"],
            "permissions": [
                {"subjects": [{"kind": "User", "name": "olive"}], "verbs": ["watch"]},
                {"subjects": [{"kind": "User", "name": "vera"}], "verbs": ["watch"]},
            ],
        },
        now=T0,
    )
    for job_id in QUEUED:
        make_job(job_id)
    for job_id in RUNNING:
        make_job(job_id, state="running")
        make_run(f"run-{job_id}", job_id)
    make_job("job-done", state="succeeded")
    for job_id in LOCKED:
        make_job(job_id, "locked", job_set="set-l")


def row(page, job_id: str):
    return page.locator(f'#job-rows tr[data-job-id="{job_id}"]')


def select(page, *job_ids: str) -> None:
    for job_id in job_ids:
        row(page, job_id).locator("input.row-select").check()


def open_grid(page, username: str = "root", password: str = "root-password") -> None:
    log_in(page, "/", username, password)
    expect(page.locator("#job-rows tr.job-row").first).to_be_visible()
    # A mark that a reload would wipe: the rows must change without one.
    page.evaluate("window.__noReload = true")


def still_same_page(page) -> None:
    assert page.evaluate("window.__noReload === true")


def mark_rows(page, job_ids) -> None:
    """Tag the current row elements, to tell later whether they were replaced."""
    for job_id in job_ids:
        row(page, job_id).evaluate("tr => { tr.dataset.old = 'yes'; }")


@pytest.mark.django_db(transaction=True)
def test_cancel_three_jobs_with_a_confirmation(page, live_server, grid_jobs, screenshot):
    open_grid(page)
    toolbar = page.locator("#bulk-actions")
    cancel = toolbar.get_by_role("button", name="Cancel", exact=True)
    expect(cancel).to_be_disabled()
    expect(toolbar.locator("#bulk-count")).to_have_text("None selected")

    select(page, *QUEUED[:2], RUNNING[0])
    expect(toolbar.locator("#bulk-count")).to_have_text("3 selected")
    expect(cancel).to_be_enabled()
    mark_rows(page, [*QUEUED[:2], RUNNING[0]])
    cancel.click()
    dialog = page.locator("#bulk-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading")).to_have_text("Cancel the selected jobs")
    expect(dialog.locator("#bulk-plan")).to_have_text("Cancel 3 jobs?")
    confirm = dialog.locator("#bulk-confirm")
    expect(confirm).to_have_text("Cancel 3 jobs")
    expect(confirm).to_be_enabled()
    expect(dialog.get_by_label("Reason (optional)")).to_be_focused()
    dialog.get_by_label("Reason (optional)").fill("submitted by mistake")
    assert_accessible(page)
    screenshot(page, "jobs-bulk-confirm")

    confirm.click()
    expect(dialog).to_be_hidden()
    message = toolbar.locator("#bulk-message [role=status]")
    expect(message).to_have_text("Cancelling 3 jobs.")
    expect(toolbar.locator("#bulk-message")).to_be_focused()
    for job_id in QUEUED[:2]:
        expect(row(page, job_id)).to_have_attribute("data-state", "cancelled")
        expect(row(page, job_id).locator('td[data-col="state"]')).to_contain_text("cancelled")
    # Every acted-on row was read again (the running one, asked to stop, too), unticked.
    expect(page.locator("#job-rows tr[data-old]")).to_have_count(0)
    expect(page.locator("#job-rows input.row-select:checked")).to_have_count(0)
    expect(toolbar.locator("#bulk-count")).to_have_text("None selected")
    expect(cancel).to_be_disabled()
    still_same_page(page)
    assert Job.objects.get(id=QUEUED[0]).terminal_message == "submitted by mistake"
    assert Run.objects.get(job_id=RUNNING[0]).stop_kind == "cancel"
    assert Event.objects.filter(type="cancelling").count() == 3
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_rows_that_no_longer_match_the_filters_leave_the_grid(page, live_server, grid_jobs):
    log_in(page, "/?state=queued")
    queued = len(QUEUED) + len(LOCKED)
    expect(page.locator("#job-rows tr.job-row")).to_have_count(queued)
    page.evaluate("window.__noReload = true")
    select(page, *QUEUED[:2])
    page.locator("#bulk-actions").get_by_role("button", name="Cancel", exact=True).click()
    page.locator("#bulk-confirm").click()
    expect(page.locator("#bulk-message")).to_contain_text("Cancelling 2 jobs.")
    # Cancelled jobs are not queued: the grid filtered to queued jobs drops their rows.
    expect(page.locator("#job-rows tr.job-row")).to_have_count(queued - 2)
    expect(row(page, QUEUED[2])).to_be_visible()
    still_same_page(page)
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_a_finished_job_is_named_in_the_confirmation_and_skipped(page, live_server, grid_jobs):
    open_grid(page)
    select(page, QUEUED[0], "job-done")
    page.locator("#bulk-actions").get_by_role("button", name="Cancel", exact=True).click()
    plan = page.locator("#bulk-plan")
    expect(plan).to_contain_text("Cancel 1 of the 2 jobs selected?")
    expect(plan).to_contain_text("1 is already finished.")
    page.locator("#bulk-confirm").click()
    expect(page.locator("#bulk-message")).to_contain_text("Skipped 1 already finished.")
    assert Job.objects.get(id="job-done").state == "succeeded"
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_reprioritize_two_jobs(page, live_server, grid_jobs):
    open_grid(page)
    select(page, QUEUED[2], RUNNING[1])
    mark_rows(page, [QUEUED[2], RUNNING[1]])
    page.locator("#bulk-actions").get_by_role("button", name="Reprioritize").click()
    dialog = page.locator("#bulk-dialog")
    expect(dialog.locator("#bulk-plan")).to_have_text("Reprioritize 2 jobs?")
    priority = dialog.get_by_label("New priority (0 comes first)")
    expect(priority).to_be_focused()
    expect(dialog.get_by_label("Reason (optional)")).to_be_hidden()
    priority.fill("7")
    dialog.locator("#bulk-confirm").click()
    expect(page.locator("#bulk-message [role=status]")).to_have_text("Priority of 2 jobs set to 7.")
    expect(page.locator("#job-rows tr[data-old]")).to_have_count(0)
    assert {j.priority for j in Job.objects.filter(id__in=[QUEUED[2], RUNNING[1]])} == {7}
    still_same_page(page)
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_a_bad_priority_is_answered_in_the_dialog(page, live_server, grid_jobs):
    open_grid(page)
    select(page, QUEUED[0])
    page.locator("#bulk-actions").get_by_role("button", name="Reprioritize").click()
    expect(page.locator("#bulk-confirm")).to_be_enabled()
    page.get_by_label("New priority (0 comes first)").fill("99999999999")
    # The browser's own check (max) holds the form; the server would answer 400 too.
    page.locator("#bulk-confirm").click()
    expect(page.locator("#bulk-dialog")).to_be_visible()
    assert page.get_by_label("New priority (0 comes first)").evaluate("i => !i.validity.valid")
    assert Job.objects.get(id=QUEUED[0]).priority == 0
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_preempt_is_offered_only_for_running_jobs(page, live_server, grid_jobs):
    open_grid(page)
    preempt = page.locator("#bulk-actions").get_by_role("button", name="Preempt")
    select(page, QUEUED[0], QUEUED[1])
    expect(preempt).to_be_disabled()
    select(page, RUNNING[0])
    expect(preempt).to_be_enabled()
    preempt.click()
    plan = page.locator("#bulk-plan")
    expect(plan).to_contain_text("Preempt 1 of the 3 jobs selected?")
    expect(plan).to_contain_text("2 are not running: nothing to preempt.")
    expect(page.locator("#bulk-confirm")).to_have_text("Preempt 1 job")
    page.locator("#bulk-confirm").click()
    expect(page.locator("#bulk-message")).to_contain_text("Preempting 1 job.")
    run = Run.objects.get(job_id=RUNNING[0])
    assert (run.stop_kind, run.stop_reason) == ("preempt", "preempted by an operator")
    assert Job.objects.get(id=QUEUED[0]).state == "queued"
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_copy_ids_puts_them_on_the_clipboard(page, live_server, grid_jobs):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    open_grid(page)
    copy = page.locator("#bulk-actions").get_by_role("button", name="Copy ids")
    expect(copy).to_be_disabled()
    select(page, QUEUED[0], RUNNING[0], "job-done")
    copy.click()
    expect(page.locator("#bulk-message [role=status]")).to_have_text("Copied 3 ids.")
    shown = page.locator("#job-rows input.row-select:checked").evaluate_all(
        "boxes => boxes.map(b => b.value)"
    )
    assert sorted(shown) == sorted([QUEUED[0], RUNNING[0], "job-done"])
    assert page.evaluate("navigator.clipboard.readText()") == "\n".join(shown)
    expect(page.locator("#bulk-dialog")).to_be_hidden()
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_copy_ids_without_a_clipboard_offers_the_ids_to_select(page, live_server, grid_jobs):
    open_grid(page)
    page.evaluate("Object.defineProperty(navigator, 'clipboard', {value: undefined})")
    select(page, QUEUED[0], QUEUED[1])
    page.locator("#bulk-actions").get_by_role("button", name="Copy ids").click()
    text = page.get_by_label("Job ids, one per line: select and copy them")
    expect(text).to_be_visible()
    expect(text).to_be_focused()
    assert sorted(text.input_value().split("\n")) == QUEUED[:2]
    expect(page.locator("#bulk-confirm")).to_be_hidden()
    page.keyboard.press("Escape")
    expect(page.locator("#bulk-dialog")).to_be_hidden()
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_a_queue_where_the_user_may_not_cancel_is_refused(page, live_server, grid_jobs):
    open_grid(page, "olive", "olive-password")
    select(page, QUEUED[0], *LOCKED)
    mark_rows(page, [QUEUED[0], *LOCKED])
    page.locator("#bulk-actions").get_by_role("button", name="Cancel", exact=True).click()
    plan = page.locator("#bulk-plan")
    expect(plan).to_contain_text("Cancel 1 of the 3 jobs selected?")
    expect(plan).to_contain_text("2 are in queue locked where you may not cancel")
    page.locator("#bulk-confirm").click()
    message = page.locator("#bulk-message")
    expect(message).to_contain_text("Cancelling 1 job.")
    expect(message).to_contain_text("Refused 2 in queue locked: you may not cancel there")
    expect(page.locator("#job-rows tr[data-old]")).to_have_count(0)
    assert set(Job.objects.filter(id__in=LOCKED).values_list("state", flat=True)) == {"queued"}
    # Only refused jobs selected: nothing to confirm.
    select(page, *LOCKED)
    page.locator("#bulk-actions").get_by_role("button", name="Cancel", exact=True).click()
    expect(plan).to_contain_text("None of the 2 jobs selected can be cancelled.")
    expect(page.locator("#bulk-confirm")).to_be_disabled()
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_a_user_who_may_act_nowhere_is_offered_only_copy(
    page, live_server, grid_jobs, django_user_model
):
    django_user_model.objects.create_user("vera", password="vera-password")
    open_grid(page, "vera", "vera-password")
    toolbar = page.locator("#bulk-actions")
    expect(page.locator("#job-rows tr.job-row")).to_have_count(len(LOCKED))
    for name in ("Cancel", "Reprioritize", "Preempt"):
        expect(toolbar.get_by_role("button", name=name, exact=True)).to_have_count(0)
    expect(toolbar.get_by_role("button", name="Copy ids")).to_be_visible()
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_escape_closes_the_dialog_and_focus_returns_to_its_button(page, live_server, grid_jobs):
    open_grid(page)
    select(page, QUEUED[0])
    cancel = page.locator("#bulk-actions").get_by_role("button", name="Cancel", exact=True)
    cancel.focus()
    page.keyboard.press("Enter")
    dialog = page.locator("#bulk-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#bulk-plan")).to_have_text("Cancel 1 job?")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(cancel).to_be_focused()
    # Close does the same.
    page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()
    expect(cancel).to_be_focused()
    assert Job.objects.get(id=QUEUED[0]).state == "queued"
    assert not Event.objects.exists()
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_the_toolbar_fits_a_phone(page, live_server, grid_jobs):
    page.set_viewport_size({"width": 375, "height": 740})
    open_grid(page)
    select(page, QUEUED[0])
    page.locator("#bulk-actions").get_by_role("button", name="Cancel", exact=True).click()
    expect(page.locator("#bulk-plan")).to_have_text("Cancel 1 job?")
    box = page.locator("#bulk-dialog").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375
    page.keyboard.press("Escape")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    toolbar = page.locator("#bulk-actions").bounding_box()
    assert toolbar is not None and toolbar["x"] + toolbar["width"] <= 375
    assert Queue.objects.filter(name="demo").exists()
    no_problems(page)
