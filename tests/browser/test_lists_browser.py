"""The list pages in real Chromium: the retry policies list (its columns, finding a policy by
name as you type and with JavaScript off), the queues list (the same find box), and deleting
a policy through its confirmation page. Every page passes the axe check, logs no console
error and fits a phone; the screenshots policies-list, policies-list-phone and queues come
from here."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from armada.models import Queue, RetryPolicy
from armada.services.ids import new_id
from armada.services.policies import policy_create
from armada.services.queues import queue_create
from tests.browser.axe import assert_accessible
from tests.browser.test_policies_browser import fast_passwords, log_in, no_problems  # noqa: F401
from tests.conftest import T0
from tests.lookout.builders import make_job, make_live_executor, make_run

GI = 1024**3 * 1000
PHONE = {"width": 375, "height": 740}

POLICIES = {
    "ml-training-retries": (
        3,
        "Fail",
        [
            {"action": "Fail", "onCategory": "user-error"},
            {"action": "Retry", "onCategory": "gpu", "onSubcategory": "transient"},
            {
                "action": "Retry",
                "onCategory": "oom",
                "mutate": {"resources": {"memory": {"factor": 1.5}}},
            },
            {
                "action": "Retry",
                "onCategory": "internal",
                "mutate": {"affinity": {"avoidSameNode": True}},
            },
        ],
    ),
    "gpu-transient": (5, "Fail", [{"action": "Retry", "onCategory": "gpu"}]),
    "nightly-etl": (2, "Retry", [{"action": "Fail", "onCategory": "user-error"}]),
    "oom-only": (
        1,
        "Fail",
        [
            {
                "action": "Retry",
                "onCategory": "oom",
                "mutate": {"resources": {"memory": {"static": "512Mi"}}},
            }
        ],
    ),
    "spot-preemptions": (6, "Retry", []),
}
QUEUES = {
    "demo": ["ml-training-retries"],
    "research": ["ml-training-retries", "gpu-transient"],
    "analytics": ["nightly-etl"],
    "vision": ["gpu-transient"],
    "batch-etl": ["nightly-etl"],
    "speech": [],
}


def scrolls_sideways(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.fixture
def lists_data(fast_passwords, admin_user, queue):  # noqa: F811
    """Five real policies and sixty more from teams, six queues using some of them, and a
    live executor with jobs running so that the queues have shares."""
    for name, (limit, default, rules) in POLICIES.items():
        document = {"name": name, "retryLimit": limit, "defaultAction": default, "rules": rules}
        policy_create(actor=admin_user, data=document, now=T0)
    RetryPolicy.objects.bulk_create(
        RetryPolicy(
            name=f"team-{n:02d}-retries",
            retry_limit=n % 4 + 1,
            default_action="Fail",
            rules=[{"action": "Retry", "onCategory": "oom"}],
            version=n % 3 + 1,
            created_at=T0,
            updated_at=T0 + timedelta(hours=n),
            updated_by="olive",
        )
        for n in range(60)
    )
    for name, policies in QUEUES.items():
        if name != "demo":
            queue_create(actor=admin_user, data={"name": name}, now=T0)
        Queue.objects.filter(name=name).update(retry_policies=policies)
    now = timezone.now()
    make_live_executor(now=now)
    for i, name in enumerate(["demo", "research", "research", "vision", "analytics"]):
        job_id = new_id()
        make_job(job_id, queue=name, state="running", submitted_at=now, last_transition_at=now)
        make_run(new_id(), job_id, executor="cluster-a", requests={"cpu": 4000 * (i % 2 + 1)})
    return admin_user


@pytest.mark.django_db(transaction=True)
def test_policies_list_columns_and_find_as_you_type(page, lists_data, screenshot):
    log_in(page, "/policies/")
    for header in (
        "Name",
        "Retry limit",
        "Default action",
        "Rules",
        "Queues using it",
        "Version",
        "Updated",
    ):
        expect(page.get_by_role("columnheader", name=header, exact=True)).to_be_visible()
    row = page.get_by_role("row", name=re.compile(r"^ml-training-retries "))
    expect(row.get_by_role("cell").nth(0)).to_have_text("3")
    expect(row.get_by_role("cell").nth(1)).to_have_text("Fail")
    expect(row.get_by_role("cell").nth(2)).to_have_text("4")
    expect(row.get_by_role("link", name="research")).to_have_attribute("href", "/queues/research/")
    expect(row).to_contain_text("by root")
    unused = page.get_by_role("row", name=re.compile(r"^oom-only "))
    expect(unused.get_by_role("cell").nth(3)).to_have_text("none")
    expect(page.locator("#list-count")).to_have_text(
        "65 policies; showing gpu-transient to team-44-retries"
    )
    expect(page.get_by_role("link", name="Next page →")).to_be_visible()
    screenshot(page, "policies-list")
    assert_accessible(page)
    no_problems(page)

    # Find as you type: htmx swaps the rows in place and keeps the URL current.
    page.evaluate("window.notReloaded = true")
    page.get_by_label("Find a policy by name").press_sequentially("GPU")
    expect(page.locator("#list-count")).to_have_text("1 policy with “GPU” in the name")
    expect(page.locator("table.policies tbody tr")).to_have_count(1)
    expect(page.get_by_role("link", name="gpu-transient")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/policies/\?q=GPU$"))
    assert page.evaluate("window.notReloaded") is True
    assert_accessible(page)
    page.get_by_label("Find a policy by name").fill("team-5")
    expect(page.locator("table.policies tbody tr")).to_have_count(10)
    page.get_by_label("Find a policy by name").fill("")
    expect(page.locator("table.policies tbody tr")).to_have_count(50)
    no_problems(page)

    # The next page by its link, then the same list on a phone.
    page.get_by_role("link", name="Next page →").click()
    expect(page).to_have_url(re.compile(r"after=team-44-retries"))
    expect(page.locator("table.policies tbody tr")).to_have_count(15)
    page.set_viewport_size(PHONE)
    page.goto("/policies/")
    assert scrolls_sideways(page) <= 0
    screenshot(page, "policies-list-phone")
    assert_accessible(page)
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_queues_list_find_and_screenshot(page, lists_data, screenshot):
    log_in(page, "/queues/")
    expect(page.locator("#list-count")).to_have_text("6 queues")
    research = page.get_by_role("row", name=re.compile(r"^research "))
    expect(research).to_contain_text("ml-training-retries (evaluated), gpu-transient")
    expect(research).to_contain_text("18.8%")  # 4 + 8 of the 64 cpus
    screenshot(page, "queues")
    assert_accessible(page)
    page.get_by_label("Find a queue by name").press_sequentially("ETL")
    expect(page.locator("#list-count")).to_have_text("1 queue with “ETL” in the name")
    expect(page.locator("table.queues tbody tr")).to_have_count(1)
    expect(page.get_by_role("link", name="batch-etl")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/queues/\?q=ETL$"))
    assert_accessible(page)
    page.set_viewport_size(PHONE)
    page.reload()
    expect(page.locator("table.queues tbody tr")).to_have_count(1)
    assert scrolls_sideways(page) <= 0
    assert_accessible(page)
    no_problems(page)


@pytest.mark.django_db(transaction=True)
def test_the_find_boxes_work_without_javascript(page_without_js, lists_data):
    page = page_without_js
    log_in(page, "/policies/")
    page.get_by_label("Find a policy by name").fill("etl")
    page.get_by_label("Find a policy by name").press("Enter")
    expect(page).to_have_url(re.compile(r"/policies/\?q=etl$"))
    expect(page.locator("table.policies tbody tr")).to_have_count(1)
    expect(page.get_by_role("link", name="nightly-etl")).to_be_visible()
    page.get_by_role("link", name="Show all").click()
    expect(page.locator("table.policies tbody tr")).to_have_count(50)
    page.goto("/queues/")
    page.get_by_label("Find a queue by name").fill("vis")
    page.get_by_role("button", name="Find").click()
    expect(page).to_have_url(re.compile(r"/queues/\?q=vis$"))
    expect(page.locator("table.queues tbody tr")).to_have_count(1)
    expect(page.get_by_role("link", name="vision", exact=True)).to_be_visible()


@pytest.mark.django_db(transaction=True)
def test_deleting_a_policy_asks_first_and_refuses_one_in_use(page, lists_data):
    log_in(page, "/policies/oom-only/")
    rules = page.locator("ol.rules li")
    expect(rules).to_have_count(1)
    expect(rules.first).to_have_text("Rule 1 Retry on category oom: memory + 512Mi")
    assert_accessible(page)
    page.get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", name="Delete retry policy oom-only?")).to_be_visible()
    expect(page.locator("main")).to_contain_text("No queue names this policy")
    assert_accessible(page)
    no_problems(page)
    # Nothing is deleted by looking; the button (POST with the CSRF token) does it.
    assert RetryPolicy.objects.filter(name="oom-only").exists()
    page.get_by_role("button", name="Delete retry policy oom-only").focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/policies/$"))
    expect(page.get_by_role("status").first).to_contain_text("Deleted retry policy oom-only")
    expect(page.get_by_role("link", name="oom-only")).to_have_count(0)
    assert not RetryPolicy.objects.filter(name="oom-only").exists()
    no_problems(page)

    # A policy that queues name: the page says which, offers no delete, points at detaching.
    page.goto("/policies/ml-training-retries/delete")
    expect(page.locator("#in-use")).to_contain_text("2 queues name this policy: demo, research")
    expect(page.get_by_role("button", name=re.compile("Delete retry policy"))).to_have_count(0)
    page.get_by_role("link", name="Detach it from its queues").click()
    expect(page).to_have_url(re.compile(r"/policies/ml-training-retries/#queues$"))
    assert RetryPolicy.objects.filter(name="ml-training-retries").exists()
    page.set_viewport_size(PHONE)
    page.goto("/policies/ml-training-retries/delete")
    assert scrolls_sideways(page) <= 0
    assert_accessible(page)
    no_problems(page)
