"""Our extension ``backoff`` on Retry rules: parsing (armada.core.backoff, through
parse_policy), the file form, and the delay ``decide`` gives (armada.core.retry)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from armada.core.backoff import Backoff
from armada.core.errors import ValidationFailed
from armada.core.policy import RetryPolicy, Rule, parse_policy, policy_document
from armada.core.retry import Decision, Failure, RetrySettings, decide


def policy_with(backoff: Any, *, action: str = "Retry") -> dict[str, Any]:
    """A valid policy whose rules[1] (a rule on ``oom``) carries ``backoff``."""
    return {
        "name": "p",
        "retryLimit": 5,
        "defaultAction": "Fail",
        "rules": [
            {"action": "Fail", "onCategory": "user-error"},
            {"action": action, "onCategory": "oom", "backoff": backoff},
        ],
    }


def errors_of(data: Any) -> dict[str, str]:
    with pytest.raises(ValidationFailed) as info:
        parse_policy(data)
    return {e.field: e.message for e in info.value.errors}


B = "rules[1].backoff"

# --- parsing ----------------------------------------------------------------------------------

VALID = [
    ("the-issue-example", {"initial": "30s", "factor": 2, "max": "10m"}, Backoff(30, 2.0, 600)),
    ("fixed-delay", {"initial": "1m"}, Backoff(60, 1.0, None)),
    ("factor-one-with-max", {"initial": "5s", "factor": 1, "max": "5s"}, Backoff(5, 1.0, 5)),
    ("bare-seconds", {"initial": 30, "max": 90.5, "factor": 1.5}, Backoff(30, 1.5, 90.5)),
    ("compound-durations", {"initial": "1h30m", "max": "1d", "factor": 3}, Backoff(5400, 3, 86400)),
    ("milliseconds", {"initial": "250ms", "factor": 2, "max": "2s"}, Backoff(0.25, 2, 2)),
    ("kept-to-the-ms", {"initial": "0.0015s"}, Backoff(0.002, 1.0, None)),
]


@pytest.mark.parametrize(("block", "expected"), [v[1:] for v in VALID], ids=[v[0] for v in VALID])
def test_a_valid_backoff_parses(block, expected):
    policy = parse_policy(policy_with(block))
    assert policy.rules[1].backoff == expected
    assert policy.warnings == ()


INVALID = [
    ("not-a-mapping", "30s", {B: "must be a mapping"}),
    ("initial-missing", {"factor": 2, "max": "1m"}, {f"{B}.initial": "is required"}),
    ("initial-not-a-duration", {"initial": "soon"}, {f"{B}.initial": "is not a duration"}),
    ("initial-zero", {"initial": "0s"}, {f"{B}.initial": "at least 1ms"}),
    ("initial-below-a-ms", {"initial": "0.0001s"}, {f"{B}.initial": "at least 1ms"}),
    ("initial-negative", {"initial": -5}, {f"{B}.initial": "cannot be negative"}),
    ("initial-a-bool", {"initial": True}, {f"{B}.initial": "expected a duration"}),
    ("initial-a-list", {"initial": ["30s"]}, {f"{B}.initial": "is not a duration"}),
    ("initial-too-long", {"initial": "1000000d"}, {f"{B}.initial": "at most 100 years"}),
    ("factor-below-one", {"initial": "1s", "factor": 0.5, "max": "1m"}, {f"{B}.factor": "1 or more"}),
    ("factor-a-string", {"initial": "1s", "factor": "2", "max": "1m"}, {f"{B}.factor": "1 or more"}),
    ("factor-a-bool", {"initial": "1s", "factor": True, "max": "1m"}, {f"{B}.factor": "1 or more"}),
    ("factor-infinite", {"initial": "1s", "factor": float("inf"), "max": "1m"}, {f"{B}.factor": "finite"}),
    ("factor-nan", {"initial": "1s", "factor": float("nan"), "max": "1m"}, {f"{B}.factor": "finite"}),
    ("factor-beyond-floats", {"initial": "1s", "factor": 10**400, "max": "1m"}, {f"{B}.factor": "finite"}),
    ("max-below-initial", {"initial": "1m", "max": "30s"}, {f"{B}.max": "at least initial (1m)"}),
    ("max-missing-with-growth", {"initial": "1s", "factor": 2}, {f"{B}.max": "is required when factor"}),
    ("max-not-a-duration", {"initial": "1s", "max": "10 minutes"}, {f"{B}.max": "is not a duration"}),
    ("unknown-key", {"initial": "1s", "jitter": True}, {f"{B}.jitter": "unknown field; allowed: initial, factor, max"}),
    (
        "every-problem-at-once",
        {"initial": "x", "factor": 0, "colour": 1},
        {f"{B}.initial": "not a duration", f"{B}.factor": "1 or more", f"{B}.colour": "unknown"},
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("block", "expected"), [v[1:] for v in INVALID], ids=[v[0] for v in INVALID]
)
def test_an_invalid_backoff_names_its_field(block, expected):
    errors = errors_of(policy_with(block))
    assert set(errors) == set(expected)
    for name, fragment in expected.items():
        assert fragment in errors[name], (name, errors[name])


def test_a_bad_backoff_on_a_fail_rule_is_still_an_error():
    assert set(errors_of(policy_with({"initial": "soon"}, action="Fail"))) == {f"{B}.initial"}


def test_a_backoff_on_a_fail_rule_is_dropped_with_a_warning_like_mutate():
    policy = parse_policy(policy_with({"initial": "30s"}, action="Fail"))
    assert policy.rules[1] == Rule("Fail", "oom")
    assert [w.field for w in policy.warnings] == [B]
    assert "no effect on a Fail rule" in policy.warnings[0].message
    assert "backoff" not in policy_document(policy)["rules"][1]


def test_a_policy_without_backoff_has_none():
    policy = parse_policy({"name": "p", "retryLimit": 1, "defaultAction": "Retry", "rules": [
        {"action": "Retry", "onCategory": "oom"}]})  # fmt: skip
    assert policy.rules[0].backoff is None
    assert "backoff" not in policy_document(policy)["rules"][0]


# --- the file form ----------------------------------------------------------------------------

WRITTEN = [
    ({"initial": "30s", "factor": 2, "max": "10m"}, {"initial": "30s", "factor": 2, "max": "10m"}),
    ({"initial": 90}, {"initial": "90s"}),
    (
        {"initial": "1h30m", "factor": 1.5, "max": "2h"},
        {"initial": "90m", "factor": 1.5, "max": "2h"},
    ),
    ({"initial": "500ms", "factor": 1, "max": "1s"}, {"initial": "500ms", "max": "1s"}),
]


@pytest.mark.parametrize(("block", "written"), WRITTEN)
def test_the_file_form_writes_backoff_back(block, written):
    policy = parse_policy(policy_with(block))
    document = policy_document(policy)
    assert document["rules"][1]["backoff"] == written
    assert parse_policy(document) == policy


durations = st.integers(1, 10**9).map(lambda ms: ms / 1000)


@given(
    initial=durations,
    extra=st.integers(0, 10**9).map(lambda ms: ms / 1000),
    factor=st.one_of(st.just(1), st.integers(1, 10), st.floats(1.0, 100.0)),
    with_max=st.booleans(),
)
def test_every_valid_backoff_round_trips(initial, extra, factor, with_max):
    block: dict[str, Any] = {"initial": initial, "factor": factor}
    if with_max or factor > 1:
        block["max"] = initial + extra
    policy = parse_policy(policy_with(block))
    again = parse_policy(policy_document(policy))
    assert again == policy
    assert policy_document(again) == policy_document(policy)


# --- the delay --------------------------------------------------------------------------------

ISSUE = Backoff(initial_seconds=30, factor=2, max_seconds=600)
DELAYS = [
    ("first-retry-waits-initial", ISSUE, 0, 30),
    ("second-doubles", ISSUE, 1, 60),
    ("fifth", ISSUE, 4, 480),
    ("capped-at-max", ISSUE, 5, 600),
    ("far-beyond-max-never-overflows", ISSUE, 2**31 - 1, 600),
    ("fixed", Backoff(45), 7, 45),
    ("fixed-capped-by-max", Backoff(45, 1.0, 45), 3, 45),
    ("fractional-factor", Backoff(10, 1.5, 100), 2, 22.5),
]


@pytest.mark.parametrize(
    ("backoff", "used", "seconds"), [d[1:] for d in DELAYS], ids=[d[0] for d in DELAYS]
)
def test_delay(backoff, used, seconds):
    assert backoff.delay(used) == pytest.approx(seconds)


# --- decide -----------------------------------------------------------------------------------

DELAYED = RetryPolicy(
    name="delayed",
    retry_limit=10,
    default_action="Retry",
    rules=(
        Rule("Retry", "oom", backoff=ISSUE),  # 0
        Rule("Retry", "gpu"),  # 1: no backoff
        Rule("Fail", "user-error"),  # 2
        Rule("Retry", "internal", "lease-expired", backoff=Backoff(15)),  # 3
    ),
)
ON = RetrySettings(enabled=True, global_max_retries=20)


@dataclass(frozen=True)
class Case:
    id: str
    failure: Failure
    retry: bool
    delay: float | None
    reason: str
    policy: RetryPolicy = DELAYED
    settings: RetrySettings = ON


CASES = [
    Case("rule-with-backoff-first-retry", Failure("oom", "", 0), True, 30.0,
         "retry 1 of 10 (rule 1), after a retry delay of 30s"),
    Case("rule-with-backoff-grows", Failure("oom", "", 3), True, 240.0,
         "retry 4 of 10 (rule 1), after a retry delay of 4m"),
    Case("rule-with-backoff-capped", Failure("oom", "", 9), True, 600.0,
         "retry 10 of 10 (rule 1), after a retry delay of 10m"),
    Case("rule-without-backoff", Failure("gpu", "xid", 2), True, None, "retry 3 of 10 (rule 2)"),
    Case("default-action-never-delays", Failure("network", "", 0), True, None,
         "retry 1 of 10 (defaultAction)"),
    Case("fail-rule-no-delay", Failure("user-error", "", 0), False, None,
         "Retry policy delayed: rule 3 (onCategory user-error) says Fail"),
    Case("policy-limit-no-delay", Failure("oom", "", 10), False, None,
         "Retry policy: policy retry limit exceeded (10/10)"),
    Case("global-cap-no-delay", Failure("oom", "", 20), False, None,
         "Retry policy: global retry limit reached (20/20)"),
    Case("lease-expiry-matched-by-a-rule-with-backoff", Failure("x", "", 1, lease_expired=True),
         True, 15.0, "retry 2 of 10 (rule 4), after a retry delay of 15s"),
    Case("gang-never-delayed", Failure("oom", "", 0, gang_cardinality=2), False, None,
         "Retry policy delayed: not applied to gang jobs (gang of 2); not retried"),
    Case("engine-off-no-delay", Failure("oom", "", 0), False, None,
         "Retry policies are disabled; legacy retry behaviour applies",
         settings=RetrySettings(enabled=False, global_max_retries=20)),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_decide_with_backoff(case: Case):
    decision = decide(
        failure=case.failure,
        queue_policy_names=[case.policy.name],
        policies={case.policy.name: case.policy},
        settings=case.settings,
    )
    assert decision.retry is case.retry
    assert decision.retry_delay_seconds == case.delay
    assert decision.reason == case.reason


def test_without_backoff_the_decision_is_exactly_the_same():
    """Removing every backoff changes nothing but the delay and the reason's tail."""
    plain = RetryPolicy(
        name="delayed",
        retry_limit=10,
        default_action="Retry",
        rules=tuple(
            Rule(r.action, r.on_category, r.on_subcategory, r.mutate) for r in DELAYED.rules
        ),
    )
    for case in CASES:
        args: dict[str, Any] = {"failure": case.failure, "queue_policy_names": ["delayed"],
                                "settings": case.settings}  # fmt: skip
        with_backoff = decide(policies={"delayed": DELAYED}, **args)
        without = decide(policies={"delayed": plain}, **args)
        assert without.retry_delay_seconds is None
        assert without.reason == with_backoff.reason.split(", after a retry delay")[0]
        assert without == Decision(
            **{**with_backoff.__dict__, "retry_delay_seconds": None, "reason": without.reason}
        )
