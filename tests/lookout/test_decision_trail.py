"""Lookout's reading of a run's decision trail (``lookout.queries.decision_trail``): rules
numbered from 1, memory as people write it with the amount it grew."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lookout.queries import decision_trail

MI = 2**20 * 1000  # milli-units of one MiB


def rows(**trail) -> dict[str, str]:
    return dict(decision_trail(SimpleNamespace(decision=trail)) or {})


def test_an_undecided_run_has_no_trail():
    assert decision_trail(SimpleNamespace(decision={})) is None


def test_the_rule_is_numbered_from_one():
    shown = rows(decision="retry", policy="ml", policyVersion=2, ruleIndex=4, retryLimit=3)
    assert shown["Matched rule"] == "rule 5"
    assert shown["Policy"] == "ml (version 2)"
    assert rows(decision="fail_rule", policy="ml", ruleIndex=0)["Matched rule"] == "rule 1"


@pytest.mark.parametrize(
    ("label", "matched"),
    [
        ("fail_default", "none (default action)"),
        ("retry", "none (default action)"),
        ("fail_global_limit", None),
        ("gang_skipped", None),
    ],
)
def test_no_rule_is_said_only_when_the_rules_were_read(label, matched):
    assert rows(decision=label, policy="ml", ruleIndex=None).get("Matched rule") == matched


@pytest.mark.parametrize(
    ("memory", "shown"),
    [
        ({"kind": "factor", "before": 256 * MI, "after": 864 * MI}, "256Mi → 864Mi (×3.375)"),
        ({"kind": "factor", "before": 1024 * MI, "after": 1536 * MI}, "1Gi → 1.5Gi (×1.5)"),
        ({"kind": "static", "before": 256 * MI, "after": 768 * MI}, "256Mi → 768Mi (+512Mi)"),
        ({"kind": "factor", "before": "1Gi", "after": "2Gi"}, "1Gi → 2Gi"),
    ],
)
def test_memory_is_shown_with_the_amount_it_grew(memory, shown):
    assert rows(decision="retry", mutation={"memory": memory})["Memory"] == shown


def test_budget_cap_nodes_and_reason():
    shown = rows(
        decision="retry",
        retriesUsed=1,
        retryLimit=4,
        globalUsed=1,
        globalCap=10,
        mutation={"avoidNodes": ["node-7"], "memorySkipped": "static after factor"},
        reason="retry 2 of 4 (rule 5)",
    )
    assert shown["Budget"] == "1 of 4 used"
    assert shown["Global cap"] == "1 of 10 used"
    assert shown["Nodes avoided"] == "node-7"
    assert shown["Memory bump skipped"] == "static after factor"
    assert shown["Reason"] == "retry 2 of 4 (rule 5)"
