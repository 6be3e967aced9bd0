"""An ordinary user who may watch one queue, in real Chromium: the menu offers only the
pages that open for them (no Retry policies, no Admin), and the decision metrics count only
their queue, the cluster-wide failure categories left out with the reason."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from armada.services.counters import counters_add, tally
from armada.services.metric_history import metrics_sample
from armada.services.queues import queue_create
from tests.browser.axe import axe_violations
from tests.browser.test_policies_browser import log_in, no_problems
from tests.conftest import T0

DECISIONS = "armada_scheduler_retry_policy_decisions_total"


def _count(queue: str, amount: int) -> None:
    labels = {"queue": queue, "pool": "default", "policy": "p", "decision": "retry"}
    counters_add(name=DECISIONS, increments={k: amount for k in tally(labels)})


@pytest.mark.django_db(transaction=True)
def test_a_viewer_of_one_queue_sees_its_menu_and_its_counts(page, admin_user, django_user_model):
    django_user_model.objects.create_user("wanda", password="wanda-password")
    grant = [{"subjects": [{"kind": "User", "name": "wanda"}], "verbs": ["watch"]}]
    queue_create(actor=admin_user, data={"name": "demo", "permissions": grant}, now=T0)
    queue_create(actor=admin_user, data={"name": "secret"}, now=T0)
    _count("demo", 1)
    _count("secret", 1)
    metrics_sample(now=timezone.now() - timedelta(minutes=30))
    _count("demo", 2)
    _count("secret", 5)
    metrics_sample(now=timezone.now() - timedelta(minutes=5))

    log_in(page, "/metrics/decisions?period=1h", "wanda", "wanda-password")
    menu = page.get_by_role("navigation", name="Main")
    expect(menu.get_by_role("link")).to_have_text(
        ["Jobs", "Queues", "Decision metrics", "Retry cost", "Tokens", "API"]
    )
    expect(menu.get_by_role("link", name="Decision metrics")).to_have_attribute(
        "aria-current", "page"
    )
    legend = page.get_by_role("list", name="Policy p: decisions: lines and totals")
    expect(legend).to_contain_text("retry: 2 charted")  # demo's 2, not secret's 5 too
    expect(page.get_by_role("figure", name="Queue demo: decisions")).to_be_visible()
    expect(page.get_by_text("Queue secret")).to_have_count(0)
    expect(page.locator("#categories-hidden")).to_contain_text("watch_all_events")
    assert axe_violations(page) == []
    no_problems(page)
