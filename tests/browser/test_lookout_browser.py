"""Lookout's job and queue pages in real Chromium: filter the jobs table by failure category,
group it by state, open a job and read its runs and decision, cancel a job, turn on the auto
refresh and cordon a queue (the decision metrics page is test_charts_browser's). No page may
log a console error; the screenshots in docs/screenshots/ come from here."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from armada.models import Job, Queue, RetryPolicy
from armada.services.counters import counters_add, tally
from armada.services.ids import new_id
from armada.services.metric_history import metrics_sample
from armada.services.queues import queue_create
from tests.browser.conftest import lookout_pages
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401
from tests.conftest import T0
from tests.lookout.builders import make_job, make_live_executor, make_run

GI = 1024**3 * 1000
DECISIONS = "armada_scheduler_retry_policy_decisions_total"
CATEGORIES = "armada_executor_job_failure_category_total"


def _count(name: str, amount: int, **labels: str) -> None:
    counters_add(name=name, increments={k: amount for k in tally(labels)})


@pytest.fixture
def demo_data(fast_passwords, admin_user, queue):  # noqa: F811
    """Two queues of jobs in every state, failed runs with categories and decisions, a live
    executor with nodes, and an hour of counter history."""
    now = timezone.now()
    RetryPolicy.objects.create(name="ml", retry_limit=3, created_at=T0, updated_at=T0)
    Queue.objects.filter(name="demo").update(retry_policies=["ml"])
    queue_create(actor=admin_user, data={"name": "research", "priorityFactor": 2}, now=T0)
    make_live_executor(now=now)
    ids: dict[str, str] = {}
    plan = [
        ("demo", "train-7", "failed", "oom", "memory", "fail_policy_limit", False, 137),
        ("demo", "train-7", "queued", "oom", "memory", "retry", True, 137),
        ("demo", "train-8", "running", "", "", "", None, None),
        ("demo", "eval-1", "succeeded", "", "", "", None, 0),
        ("demo", "eval-1", "failed", "user-error", "exit-1", "fail_rule", False, 1),
        ("research", "sweep-3", "running", "", "", "", None, None),
        ("research", "sweep-3", "queued", "", "", "", None, None),
        ("research", "sweep-4", "failed", "gpu", "xid", "fail_default", False, 79),
        ("demo", "train-9", "queued", "", "", "", None, None),
    ]
    for index, (queue_name, job_set, state, category, sub, decision, retryable, code) in enumerate(
        plan
    ):
        job_id = new_id()
        ids.setdefault(f"{state}-{category or 'none'}", job_id)
        submitted = now - timedelta(minutes=40 - index * 3)
        make_job(
            job_id,
            queue=queue_name,
            job_set=job_set,
            state=state,
            submitted_at=submitted,
            last_transition_at=submitted + timedelta(minutes=2),
            failure_category=category if state == "failed" else "",
            failure_subcategory=sub if state == "failed" else "",
            failure_count=1 if decision else 0,
            run_count=0 if state == "queued" and not category else 1,
            priority=index % 3,
            annotations={"team": "vision" if index % 2 else "speech"},
        )
        if state == "queued" and not category:
            continue
        make_run(
            new_id(),
            job_id,
            node=f"node-{index % 4}",
            executor="cluster-a",
            state={"queued": "failed", "succeeded": "succeeded", "failed": "failed"}.get(
                state, "running"
            ),
            leased_at=submitted + timedelta(seconds=30),
            running_at=submitted + timedelta(minutes=1),
            finished_at=(submitted + timedelta(minutes=2)) if state != "running" else None,
            exit_code=code,
            failure_category=category,
            failure_subcategory=sub,
            reason="OOMKilled" if category == "oom" else ("Error" if category else ""),
            hint="Ask for more memory." if category == "oom" else "",
            retryable=retryable,
            requests={"cpu": 4000, "memory": 8 * GI},
            decision={
                "decision": decision,
                "policy": "ml",
                "policyVersion": 1,
                "ruleIndex": 0,
                "retriesUsed": 1,
                "retryLimit": 3,
                "mutation": {"memory": {"kind": "factor", "before": 8 * GI, "after": 12 * GI}}
                if decision == "retry"
                else {},
                "reason": f"decided: {decision}",
            }
            if decision
            else {},
        )
    # An hour of history: a baseline, then decisions and failures every few minutes.
    _count(DECISIONS, 1, queue="demo", pool="default", policy="ml", decision="retry")
    _count(CATEGORIES, 1, failure_category="oom", failure_subcategory="memory")
    metrics_sample(now=now - timedelta(minutes=60))
    for minute in range(55, 0, -5):
        _count(
            DECISIONS, minute % 3 + 1, queue="demo", pool="default", policy="ml", decision="retry"
        )
        _count(
            DECISIONS, minute % 2, queue="demo", pool="default", policy="ml", decision="fail_rule"
        )
        _count(
            DECISIONS,
            minute % 4,
            queue="research",
            pool="default",
            policy="ml",
            decision="fail_policy_limit",
        )
        _count(CATEGORIES, minute % 3, failure_category="oom", failure_subcategory="memory")
        _count(
            CATEGORIES, minute % 2 + 1, failure_category="user-error", failure_subcategory="exit-1"
        )
        _count(CATEGORIES, minute % 5 // 3, failure_category="gpu", failure_subcategory="xid")
        _count("armada_scheduler_retry_policy_gang_skipped_total", minute % 2, policy="ml")
        metrics_sample(now=now - timedelta(minutes=minute))
    return ids


@pytest.mark.django_db(transaction=True)
def test_jobs_grid_filter_open_and_cancel(page, demo_data, screenshot):
    log_in(page, "/")
    expect(page.get_by_role("heading", name="Jobs", exact=True)).to_be_visible()
    expect(page.locator("#job-rows tr.job-row")).to_have_count(9)
    no_problems(page)

    # Filter by failure category in its column header.
    page.locator("#grid-filter-row td[data-col='category'] summary").click()
    page.get_by_role("checkbox", name="oom", exact=True).check()
    expect(page).to_have_url(re.compile(r"category=oom"))
    expect(page.locator("#job-rows tr.job-row")).to_have_count(1)
    expect(page.locator("#job-rows")).to_contain_text("fail_policy_limit")
    page.keyboard.press("Escape")
    no_problems(page)

    # Open the OOM job and read its run, category, retryable flag and decision.
    job_id = demo_data["failed-oom"]
    page.get_by_role("link", name=job_id).click()
    expect(page.get_by_role("heading", name=f"Job {job_id}")).to_be_visible()
    run = page.locator("section.run").first
    expect(run).to_contain_text("oom / memory")
    expect(run.locator(".retryable")).to_have_text("no")
    expect(run.locator(".decision")).to_have_text("fail_policy_limit")
    expect(run).to_contain_text("Ask for more memory.")
    no_problems(page)

    # A retried job shows its memory mutation (the job-page picture is test_panel_browser's).
    page.goto(f"/jobs/{demo_data['queued-oom']}")
    expect(page.locator(".trail")).to_contain_text("8Gi → 12Gi")
    no_problems(page)

    # Cancel a queued job from its page.
    queued = demo_data["queued-none"]
    page.goto(f"/jobs/{queued}")
    page.get_by_label("Reason (optional)").first.fill("no longer needed")
    page.get_by_role("button", name="Cancel job").click()
    expect(page.get_by_role("status").first).to_contain_text(f"Cancelling job {queued}")
    expect(page.locator(".facts .state").first).to_have_text("cancelled")
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)
    assert Job.objects.get(id=queued).state == "cancelled"
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_queues_page_and_cordon(page, demo_data, screenshot):
    log_in(page, "/queues/")
    expect(page.get_by_role("heading", name="Queues")).to_be_visible()
    demo = page.get_by_role("row", name=re.compile(r"^demo "))
    expect(demo).to_contain_text("ml")
    expect(demo).to_contain_text("6.2%")  # one running job: 4 of the 64 cpus
    screenshot(page, "queues")
    no_problems(page)
    page.get_by_role("button", name="Cordon queue demo").click()
    expect(page.get_by_role("status").first).to_contain_text("Queue demo cordoned.")
    expect(page.get_by_role("button", name="Uncordon queue demo")).to_be_visible()
    assert Queue.objects.get(name="demo").cordoned
    page.get_by_role("link", name="research").first.click()
    expect(page.get_by_role("heading", name="Queue research")).to_be_visible()
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_the_pages_fit_a_phone_screen_and_keyboard_reaches_the_filters(page, demo_data):
    log_in(page, "/")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    # The skip link's target takes the focus once the browser has followed the link (on a
    # busy machine, after the key press returns): the next Tab starts from there.
    expect(page.locator("#main")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("#grid-toolbar :focus")).to_have_count(1)
    page.set_viewport_size({"width": 390, "height": 844})
    job_id = demo_data["failed-oom"]
    for path in lookout_pages(job_id):
        page.goto(path)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} is {overflow}px wider than the screen"
        no_problems(page)
