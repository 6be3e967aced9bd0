"""Rules are numbered from 1 everywhere a person reads one in Lookout: the policy page's rule
list, the rule tester (its matched rule and a recorded decision's), and the editor's error
entries; a field path keeps the document's 0-based index (``rules[2]`` is rule 3)."""

from __future__ import annotations

import pytest
import yaml
from django.test import Client

from armada.core.config import parse_config
from armada.models import Run
from armada.services.policies import policy_create
from armada.services.submit import job_submit
from lookout.policy_text import TextError, rules_text
from tests.conftest import T0, at, job, job_file
from tests.lookout.test_policies_pages import CONFIG, POLICY

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def engine_config(settings):
    settings.ARMADA = parse_config(CONFIG)


@pytest.fixture
def admin(admin_user) -> Client:
    policy_create(actor=admin_user, data=yaml.safe_load(POLICY), now=T0)
    client = Client()
    client.force_login(admin_user)
    return client


def test_the_policy_page_lists_its_rules_from_one(admin):
    response = admin.get("/policies/ml/")
    assert [(r.number, r.action, r.matches, r.mutation) for r in response.context["rules"]] == [
        (1, "Fail", "category user-error", []),
        (2, "Retry", "category gpu, subcategory transient", []),
        (3, "Retry", "category oom", ["memory × 1.5"]),
    ]
    html = response.content.decode()
    assert '<li id="rule-3"><span class="rule-number">Rule 3</span>' in html
    assert "rule 1 is <code>rules[0]</code>" in html


def test_rules_in_words():
    rules = [
        {
            "action": "Retry",
            "onCategory": "oom",
            "mutate": {"resources": {"memory": {"static": "1536Mi"}}},
        },
        {"action": "Retry", "onCategory": "node", "mutate": {"affinity": {"avoidSameNode": True}}},
        "not a rule",
    ]
    assert [(r.number, r.mutation) for r in rules_text(rules)] == [
        (1, ["memory + 1.5Gi"]),
        (2, ["avoid the nodes earlier runs used"]),
        (3, []),
    ]
    assert rules_text(None) == []


def test_the_tester_links_the_matched_rule_and_numbers_the_recorded_one(admin, owner, queue):
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[job()]), now=T0)
    Run.objects.create(
        id="01run0",
        job_id=job_id,
        executor="ex",
        node="n-1",
        pool="default",
        state="failed",
        leased_at=at(0),
        failure_category="oom",
        decision={
            "decision": "retry",
            "policy": "ml",
            "policyVersion": 1,
            "ruleIndex": 2,
            "retriesUsed": 0,
            "reason": "retry 1 of 3 (rule 3)",
        },
    )
    response = admin.get("/policies/ml/", {"test": "1", "run": "01run0"})
    outcome = response.context["outcome"]
    assert (outcome.rule_number, outcome.recorded_rule) == (3, 3)
    html = response.content.decode()
    assert '<a href="#rule-3">rule 3</a>: Retry on category oom' in html
    assert "by ml version 1, rule 3: retry 1 of 3 (rule 3)" in html


def test_a_cap_decision_does_not_claim_that_no_rule_matched(admin):
    response = admin.get("/policies/ml/", {"test": "1", "category": "oom", "retries_used": "10"})
    assert response.context["outcome"].decision.label == "fail_global_limit"
    assert "none: decided before the rules were read" in response.content.decode()
    default = admin.get("/policies/ml/", {"test": "1", "category": "other"})
    assert "none: defaultAction Fail" in default.content.decode()


def test_editor_errors_name_the_rule_from_one(admin):
    bad = POLICY.replace("factor: 1.5", "factor: 0.5")
    response = admin.post("/policies/ml/edit", {"document": bad, "base_version": "1"})
    html = response.content.decode()
    assert (
        '<code>rules[2].mutate.resources.memory.factor</code> <span class="rule-ref">(rule 3)</span>'
        in html
    )
    body = admin.post("/policies/validate", {"document": bad, "name": "ml"}).json()
    assert [(e["field"], e["rule"]) for e in body["errors"]] == [
        ("rules[2].mutate.resources.memory.factor", 3)
    ]
    assert TextError("retryLimit", "x").rule is None
    assert TextError("rules[0]", "x").rule == 1
