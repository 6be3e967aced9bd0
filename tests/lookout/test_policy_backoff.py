"""A Retry rule's ``backoff`` (our extension) in Lookout: the policy page lists it with its
rule, the rule tester shows the delay a retry would wait, and a rule without one shows none;
the policy and tester pages still pass as before for a policy without backoff."""

from __future__ import annotations

import pytest
import yaml
from django.test import Client

from armada.core.config import parse_config
from armada.services.policies import policy_create
from lookout.policy_text import rules_text
from tests.conftest import T0
from tests.lookout.test_policies_pages import CONFIG

pytestmark = pytest.mark.django_db

POLICY = """apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: paced
retryLimit: 5
defaultAction: Fail
rules:
  - action: Retry
    onCategory: gpu
    backoff: {initial: 30s, factor: 2, max: 5m}
  - action: Retry
    onCategory: oom
    mutate: {resources: {memory: {factor: 1.5}}}
    backoff: {initial: 1m}
  - action: Retry
    onCategory: network
"""


@pytest.fixture(autouse=True)
def engine_config(settings):
    settings.ARMADA = parse_config(CONFIG)


@pytest.fixture
def admin(admin_user) -> Client:
    policy_create(actor=admin_user, data=yaml.safe_load(POLICY), now=T0)
    client = Client()
    client.force_login(admin_user)
    return client


def test_the_policy_page_lists_each_rules_backoff(admin):
    response = admin.get("/policies/paced/")
    assert response.status_code == 200
    assert [r.mutation for r in response.context["rules"]] == [
        ["retry delay 30s, × 2 per retry, at most 5m"],
        ["memory × 1.5", "retry delay 1m"],
        [],
    ]
    assert "retry delay 30s, × 2 per retry, at most 5m" in response.content.decode()


@pytest.mark.parametrize(
    ("category", "used", "delay"),
    [
        ("gpu", "0", "30s before the job may be leased again"),
        ("gpu", "3", "4m before the job may be leased again"),
        ("gpu", "4", "5m before the job may be leased again"),
        ("oom", "2", "1m before the job may be leased again"),
    ],
)
def test_the_tester_shows_the_delay_a_retry_would_wait(admin, category, used, delay):
    response = admin.get(
        "/policies/paced/", {"test": "1", "category": category, "retries_used": used}
    )
    outcome = response.context["outcome"]
    assert outcome.verdict == "Retry"
    assert outcome.delay.startswith(delay)
    html = response.content.decode()
    assert "<dt>Retry delay</dt>" in html
    assert delay in html
    assert "after a retry delay of" in outcome.decision.reason


@pytest.mark.parametrize(
    ("category", "used"),
    [("network", "0"), ("other", "0"), ("gpu", "5")],
    ids=["rule-without-backoff", "default-action", "over-the-limit"],
)
def test_no_delay_is_shown_where_a_retry_would_not_wait(admin, category, used):
    response = admin.get(
        "/policies/paced/", {"test": "1", "category": category, "retries_used": used}
    )
    outcome = response.context["outcome"]
    assert outcome.delay == ""
    assert outcome.decision.retry_delay_seconds is None
    assert "<dt>Retry delay</dt>" not in response.content.decode()


def test_a_stored_backoff_that_cannot_be_read_is_left_out():
    rules = [
        {"action": "Retry", "onCategory": "a", "backoff": {"initial": "soon"}},
        {"action": "Retry", "onCategory": "b", "backoff": "30s"},
        {"action": "Retry", "onCategory": "c", "backoff": {"initial": 45, "max": 45}},
    ]
    assert [r.mutation for r in rules_text(rules)] == [[], [], ["retry delay 45s"]]
