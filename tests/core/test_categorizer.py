"""armada.core.categorizer: first matching rule wins; what each matcher looks at; defaults."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from armada.core.categorizer import (
    INTERNAL,
    INTERNAL_SUBCATEGORIES,
    JOB_CREATION_FAILED,
    LEASE_EXPIRED,
    MAX_RUNS_EXCEEDED,
    POD_MISSING,
    STUCK_TERMINATING,
    Categorization,
    Categorizer,
    ContainerSignal,
    FailureSignals,
    internal,
)
from armada.core.config import ErrorCategories, parse_config
from armada.core.errors import ValidationFailed

# The shipped example, verbatim.
EXAMPLE_YAML = """
errorCategories:
  enabled: true
  defaultCategory: unknown
  categories:
    - name: oom
      action: Delete
      rules:
        - onConditions: [OOMKilled]
          hint: "The job used more memory than its limit; ask for more memory."
    - name: user-error
      action: Retain
      rules:
        - onExitCodes: {operator: In, values: [1, 2, 126, 127]}
          hint: "The program failed; see its log."
        - onTerminationMessage: {pattern: "(?i)invalid argument"}
    - name: gpu
      action: Delete
      rules:
        - onTerminationMessage: {pattern: "CUDA error|Xid [0-9]+"}
          subcategory: transient
    - name: internal
      action: Delete
      rules:
        - onPodError: {pattern: "node .* (lost|not ready)"}
          subcategory: node-failure
        - onConditions: [Evicted]
          subcategory: eviction
"""
EXAMPLE = yaml.safe_load(EXAMPLE_YAML)["errorCategories"]
OOM_HINT = "The job used more memory than its limit; ask for more memory."
FAILED_HINT = "The program failed; see its log."


def load(error_categories: dict[str, Any]) -> ErrorCategories:
    """Validate through the real entry point, as start-up does."""
    cfg = parse_config({"executors": [{"id": "local", "errorCategories": error_categories}]})
    return cfg.executors[0].error_categories


def categorizer(*categories: dict[str, Any], enabled: bool = True, **fields: Any) -> Categorizer:
    return Categorizer(load({"enabled": enabled, "categories": list(categories), **fields}))


def cat(name: str, *rules: dict[str, Any], action: str = "Retain") -> dict[str, Any]:
    return {"name": name, "action": action, "rules": list(rules)}


def c(
    exit_code: int | None = 1, name: str = "main", reason: str = "", message: str = ""
) -> ContainerSignal:
    return ContainerSignal(name, exit_code, reason or ("Error" if exit_code else ""), message)


def failure(
    *containers: ContainerSignal, conditions: tuple[str, ...] = (), pod_error: str = ""
) -> FailureSignals:
    return FailureSignals(tuple(containers), frozenset(conditions), pod_error)


def labels(result: Categorization) -> tuple[str, str, str, str]:
    return (result.category, result.subcategory, result.action, result.hint)


UNKNOWN = ("unknown", "", "Retain", "")

# --- the shipped example ------------------------------------------------------------------------

EXAMPLE_CASES = [
    ("pod-level-oom", failure(c(137), conditions=("OOMKilled",)), ("oom", "", "Delete", OOM_HINT)),
    ("container-oom-reason", failure(c(137, reason="OOMKilled")), ("oom", "", "Delete", OOM_HINT)),
    (
        "oom-beats-user-exit-code",  # exit 1 is user-error too, but oom comes first
        failure(c(1, reason="OOMKilled")),
        ("oom", "", "Delete", OOM_HINT),
    ),
    ("exit-1", failure(c(1)), ("user-error", "", "Retain", FAILED_HINT)),
    ("exit-127", failure(c(127)), ("user-error", "", "Retain", FAILED_HINT)),
    ("exit-3-unlisted", failure(c(3)), UNKNOWN),
    (
        "invalid-argument-any-case",
        failure(c(3, message="flag parse: Invalid Argument --x")),
        ("user-error", "", "Retain", ""),
    ),
    (
        "user-error-beats-gpu",  # exit 2 and a CUDA message: user-error is listed first
        failure(c(2, message="CUDA error: an illegal memory access")),
        ("user-error", "", "Retain", FAILED_HINT),
    ),
    ("cuda-error", failure(c(3, message="CUDA error: ECC")), ("gpu", "transient", "Delete", "")),
    (
        "xid-mid-message",
        failure(c(139, message="NVRM: GPU at 0000:3b: Xid 79, fallen off the bus")),
        ("gpu", "transient", "Delete", ""),
    ),
    ("xid-without-number", failure(c(3, message="Xid unknown")), UNKNOWN),
    ("cuda-lower-case", failure(c(3, message="cuda error")), UNKNOWN),
    (
        "gpu-message-of-sidecar",
        failure(c(0, name="main"), c(3, name="monitor", message="Xid 48")),
        ("gpu", "transient", "Delete", ""),
    ),
    (
        "node-lost",
        failure(pod_error="node worker-3 was lost"),
        (INTERNAL, "node-failure", "Delete", ""),
    ),
    (
        "node-not-ready",
        failure(c(None), pod_error="node gpu-7 not ready for 5m"),
        (INTERNAL, "node-failure", "Delete", ""),
    ),
    ("image-pull-error", failure(pod_error="ErrImagePull: busybox:nope"), UNKNOWN),
    ("evicted", failure(c(137), conditions=("Evicted",)), (INTERNAL, "eviction", "Delete", "")),
    ("deadline-exceeded-no-rule", failure(c(None), conditions=("DeadlineExceeded",)), UNKNOWN),
    ("exit-0", failure(c(0)), UNKNOWN),
    ("nothing-known", failure(), UNKNOWN),
    ("not-terminated", failure(c(None)), UNKNOWN),
    (
        "second-container-exit-2",
        failure(c(0, name="sidecar"), c(2)),
        ("user-error", "", "Retain", FAILED_HINT),
    ),
]


@pytest.mark.parametrize(
    ("signals", "expected"),
    [case[1:] for case in EXAMPLE_CASES],
    ids=[case[0] for case in EXAMPLE_CASES],
)
def test_shipped_example(signals, expected):
    assert labels(Categorizer(load(EXAMPLE)).categorize(signals)) == expected


def test_shipped_example_actions_decide_pod_deletion():
    example = Categorizer(load(EXAMPLE))
    assert example.categorize(failure(c(1))).delete_pod is False  # Retain: kept as evidence
    assert example.categorize(failure(c(1, reason="OOMKilled"))).delete_pod is True
    assert example.categorize(failure(c(3))).delete_pod is False  # the default is Retain


def test_reordering_categories_changes_the_winner():
    data = copy.deepcopy(EXAMPLE)
    data["categories"].reverse()  # internal, gpu, user-error, oom
    signals = failure(c(2, reason="OOMKilled", message="CUDA error"), conditions=("Evicted",))
    assert labels(Categorizer(load(EXAMPLE)).categorize(signals)) == ("oom", "", "Delete", OOM_HINT)
    assert labels(Categorizer(load(data)).categorize(signals)) == (
        INTERNAL,
        "eviction",
        "Delete",
        "",
    )


# --- matching order -----------------------------------------------------------------------------


def test_first_matching_rule_within_a_category_wins():
    cz = categorizer(
        cat(
            "c",
            {
                "onExitCodes": {"operator": "In", "values": [3]},
                "subcategory": "first",
                "hint": "h1",
            },
            {"onExitCodes": {"operator": "NotIn", "values": [1]}, "subcategory": "second"},
        )
    )
    assert labels(cz.categorize(failure(c(3)))) == ("c", "first", "Retain", "h1")
    assert labels(cz.categorize(failure(c(4)))) == ("c", "second", "Retain", "")


def test_first_matching_category_wins_even_when_a_later_rule_is_more_specific():
    cz = categorizer(
        cat("broad", {"onExitCodes": {"operator": "NotIn", "values": [255]}}),
        cat("narrow", {"onExitCodes": {"operator": "In", "values": [3]}}, action="Delete"),
    )
    assert labels(cz.categorize(failure(c(3)))) == ("broad", "", "Retain", "")


# --- exit codes -------------------------------------------------------------------------------

EXIT_CODE_CASES = [
    ("in-listed", "In", [1, 3], None, failure(c(3)), True),
    ("in-unlisted", "In", [1, 3], None, failure(c(2)), False),
    ("in-zero-listed-never-matches", "In", [0, 1], None, failure(c(0)), False),
    ("in-no-exit-code", "In", [1], None, failure(c(None)), False),
    ("not-in-unlisted", "NotIn", [1, 3], None, failure(c(2)), True),
    ("not-in-listed", "NotIn", [1, 3], None, failure(c(3)), False),
    ("not-in-zero-never-matches", "NotIn", [1], None, failure(c(0)), False),
    ("not-in-no-exit-code", "NotIn", [1], None, failure(c(None)), False),
    ("not-in-negative", "NotIn", [1], None, failure(c(-1)), True),
    ("no-containers", "NotIn", [1], None, failure(), False),
    ("any-container", "In", [3], None, failure(c(0, name="main"), c(3, name="sidecar")), True),
    (
        "not-in-any-container",
        "NotIn",
        [1],
        None,
        failure(c(1, name="main"), c(2, name="sidecar")),
        True,
    ),
    (
        "named-container-matches",
        "In",
        [3],
        "main",
        failure(c(3, name="main"), c(0, name="sidecar")),
        True,
    ),
    (
        "other-container-ignored",
        "In",
        [3],
        "main",
        failure(c(0, name="main"), c(3, name="sidecar")),
        False,
    ),
    (
        "not-in-other-container-ignored",
        "NotIn",
        [1],
        "main",
        failure(c(1, name="main"), c(2, name="sidecar")),
        False,
    ),
    ("named-container-absent", "In", [3], "main", failure(c(3, name="sidecar")), False),
    (
        "named-container-exit-0",
        "NotIn",
        [1],
        "main",
        failure(c(0, name="main"), c(2, name="sidecar")),
        False,
    ),
]


@pytest.mark.parametrize(
    ("operator", "values", "container", "signals", "matches"),
    [case[1:] for case in EXIT_CODE_CASES],
    ids=[case[0] for case in EXIT_CODE_CASES],
)
def test_exit_codes(operator, values, container, signals, matches):
    rule: dict[str, Any] = {"onExitCodes": {"operator": operator, "values": values}}
    if container:
        rule["containerName"] = container
    cz = categorizer(cat("hit", rule), defaultCategory="miss")
    assert cz.categorize(signals).category == ("hit" if matches else "miss")


# --- conditions -------------------------------------------------------------------------------

CONDITION_CASES = [
    ("oom-pod-level", ["OOMKilled"], None, failure(conditions=("OOMKilled",)), True),
    ("oom-container-reason", ["OOMKilled"], None, failure(c(137, reason="OOMKilled")), True),
    (
        "oom-any-container",
        ["OOMKilled"],
        None,
        failure(c(0, name="a"), c(137, name="b", reason="OOMKilled")),
        True,
    ),
    ("oom-reason-error-is-not-oom", ["OOMKilled"], None, failure(c(137, reason="Error")), False),
    (
        "oom-named-container-reason",
        ["OOMKilled"],
        "main",
        failure(c(137, name="main", reason="OOMKilled")),
        True,
    ),
    (
        "oom-other-container-ignored",
        ["OOMKilled"],
        "main",
        failure(c(137, name="side", reason="OOMKilled")),
        False,
    ),
    (
        "oom-pod-level-not-attributed-to-named-container",
        ["OOMKilled"],
        "main",
        failure(c(1, name="main"), conditions=("OOMKilled",)),
        False,
    ),
    ("evicted", ["Evicted"], None, failure(c(137), conditions=("Evicted",)), True),
    ("evicted-ignores-container-name", ["Evicted"], "main", failure(conditions=("Evicted",)), True),
    ("evicted-not-a-container-reason", ["Evicted"], None, failure(c(137, reason="Evicted")), False),
    (
        "deadline-exceeded",
        ["DeadlineExceeded"],
        None,
        failure(conditions=("DeadlineExceeded",)),
        True,
    ),
    ("other-condition", ["DeadlineExceeded"], None, failure(conditions=("Evicted",)), False),
    (
        "any-listed-condition",
        ["Evicted", "DeadlineExceeded"],
        None,
        failure(conditions=("DeadlineExceeded",)),
        True,
    ),
    ("unknown-pod-condition-ignored", ["Evicted"], None, failure(conditions=("NodeLost",)), False),
    ("no-conditions", ["OOMKilled", "Evicted", "DeadlineExceeded"], None, failure(c(1)), False),
]


@pytest.mark.parametrize(
    ("conditions", "container", "signals", "matches"),
    [case[1:] for case in CONDITION_CASES],
    ids=[case[0] for case in CONDITION_CASES],
)
def test_conditions(conditions, container, signals, matches):
    rule: dict[str, Any] = {"onConditions": conditions}
    if container:
        rule["containerName"] = container
    cz = categorizer(cat("hit", rule), defaultCategory="miss")
    assert cz.categorize(signals).category == ("hit" if matches else "miss")


# --- termination messages and pod errors ------------------------------------------------------

MESSAGE_CASES = [
    (
        "search-mid-text",
        "disk full",
        None,
        failure(c(1, message="write /out: disk full (ENOSPC)")),
        True,
    ),
    ("anchored-start", "^disk", None, failure(c(1, message="write: disk full")), False),
    ("case-sensitive", "disk full", None, failure(c(1, message="DISK FULL")), False),
    ("inline-ignore-case", "(?i)disk full", None, failure(c(1, message="DISK FULL")), True),
    ("multi-line-message", "^panic:", None, failure(c(2, message="started\npanic: boom")), False),
    ("multi-line-flag", "(?m)^panic:", None, failure(c(2, message="started\npanic: boom")), True),
    (
        "message-of-exit-0-container",
        "boom",
        None,
        failure(c(0, name="a", message="boom"), c(1, name="b")),
        True,
    ),
    ("empty-message-never-matches", ".*", None, failure(c(1)), False),
    ("empty-message-never-matches-empty-pattern", "^$", None, failure(c(1)), False),
    ("named-container", "boom", "main", failure(c(1, name="main", message="boom")), True),
    (
        "other-container-ignored",
        "boom",
        "main",
        failure(c(1, name="main"), c(1, name="side", message="boom")),
        False,
    ),
    ("pod-error-not-a-termination-message", "boom", None, failure(c(1), pod_error="boom"), False),
]


@pytest.mark.parametrize(
    ("pattern", "container", "signals", "matches"),
    [case[1:] for case in MESSAGE_CASES],
    ids=[case[0] for case in MESSAGE_CASES],
)
def test_termination_message(pattern, container, signals, matches):
    rule: dict[str, Any] = {"onTerminationMessage": {"pattern": pattern}}
    if container:
        rule["containerName"] = container
    cz = categorizer(cat("hit", rule), defaultCategory="miss")
    assert cz.categorize(signals).category == ("hit" if matches else "miss")


POD_ERROR_CASES = [
    ("search-mid-text", "ImagePull", None, failure(pod_error='Back-off: ErrImagePull "x:1"'), True),
    ("no-match", "ImagePull", None, failure(pod_error="node lost"), False),
    ("anchored", "^node", None, failure(pod_error="the node was lost"), False),
    ("container-name-ignored", "lost", "main", failure(pod_error="node lost"), True),
    (
        "container-name-ignored-other-containers",
        "lost",
        "main",
        failure(c(1, name="x"), pod_error="node lost"),
        True,
    ),
    ("empty-pod-error-never-matches", ".*", None, failure(c(1)), False),
    (
        "termination-message-not-a-pod-error",
        "lost",
        None,
        failure(c(1, message="node lost")),
        False,
    ),
]


@pytest.mark.parametrize(
    ("pattern", "container", "signals", "matches"),
    [case[1:] for case in POD_ERROR_CASES],
    ids=[case[0] for case in POD_ERROR_CASES],
)
def test_pod_error(pattern, container, signals, matches):
    rule: dict[str, Any] = {"onPodError": {"pattern": pattern}}
    if container:
        rule["containerName"] = container
    cz = categorizer(cat("hit", rule), defaultCategory="miss")
    assert cz.categorize(signals).category == ("hit" if matches else "miss")


# --- results: defaults, disabled, hints, actions ----------------------------------------------

RULE_EXIT_3 = {
    "onExitCodes": {"operator": "In", "values": [3]},
    "subcategory": "three",
    "hint": "see",
}

RESULT_CASES = [
    (
        "match-carries-subcategory-action-hint",
        {"enabled": True, "categories": [cat("c", RULE_EXIT_3, action="Delete")]},
        failure(c(3)),
        ("c", "three", "Delete", "see"),
    ),
    (
        "match-without-subcategory-or-hint",
        {
            "enabled": True,
            "categories": [cat("c", {"onExitCodes": {"operator": "In", "values": [3]}})],
        },
        failure(c(3)),
        ("c", "", "Retain", ""),
    ),
    (
        "default-category-and-subcategory",
        {
            "enabled": True,
            "defaultCategory": "unknown",
            "defaultSubcategory": "unmatched",
            "categories": [cat("c", RULE_EXIT_3, action="Delete")],
        },
        failure(c(4)),
        ("unknown", "unmatched", "Retain", ""),
    ),
    (
        "empty-defaults",
        {"enabled": True, "categories": [cat("c", RULE_EXIT_3, action="Delete")]},
        failure(c(4)),
        ("", "", "Retain", ""),
    ),
    (
        "enabled-without-categories",
        {"enabled": True, "defaultCategory": "any"},
        failure(c(1)),
        ("any", "", "Retain", ""),
    ),
    (
        "disabled-ignores-matching-rules",
        {"enabled": False, "categories": [cat("c", RULE_EXIT_3, action="Delete")]},
        failure(c(3)),
        ("", "", "Retain", ""),
    ),
    (
        "disabled-ignores-defaults",
        {"enabled": False, "defaultCategory": "unknown", "defaultSubcategory": "x"},
        failure(c(3)),
        ("", "", "Retain", ""),
    ),
    ("not-configured", {}, failure(c(3), conditions=("OOMKilled",)), ("", "", "Retain", "")),
]


@pytest.mark.parametrize(
    ("config", "signals", "expected"),
    [case[1:] for case in RESULT_CASES],
    ids=[case[0] for case in RESULT_CASES],
)
def test_result(config, signals, expected):
    result = Categorizer(load(config)).categorize(signals)
    assert labels(result) == expected
    assert result.delete_pod is (expected[2] == "Delete")


def test_disabled_result_is_the_empty_categorization():
    assert (
        categorizer(cat("c", RULE_EXIT_3), enabled=False).categorize(failure(c(3)))
        == Categorization()
    )
    assert Categorizer(ErrorCategories()).categorize(failure(c(3))) == Categorization()


def test_results_are_values():
    cz = categorizer(cat("c", RULE_EXIT_3, action="Delete"))
    assert cz.categorize(failure(c(3))) == Categorization("c", "three", "Delete", "see")
    with pytest.raises(AttributeError):
        cz.categorize(failure(c(3))).category = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("action", "delete_pod"), [("Delete", True), ("Retain", False)], ids=["delete", "retain"]
)
def test_delete_pod_follows_action(action, delete_pod):
    assert Categorization("c", action=action).delete_pod is delete_pod


def test_default_categorization_is_empty_and_retains():
    assert labels(Categorization()) == ("", "", "Retain", "")
    assert Categorization().delete_pod is False


# --- built-in internal categories -------------------------------------------------------------


@pytest.mark.parametrize(
    ("constant", "spelling"),
    [
        (INTERNAL, "internal"),
        (LEASE_EXPIRED, "lease-expired"),
        (MAX_RUNS_EXCEEDED, "max-runs-exceeded"),
        (POD_MISSING, "pod-missing"),
        (STUCK_TERMINATING, "stuck-terminating"),
        (JOB_CREATION_FAILED, "job-creation-failed"),
    ],
    ids=[
        "internal",
        "lease-expired",
        "max-runs-exceeded",
        "pod-missing",
        "stuck-terminating",
        "job-creation-failed",
    ],
)
def test_built_in_spellings(constant, spelling):
    # Retry policies match these byte for byte: the spelling is the contract.
    assert constant == spelling


def test_internal_subcategories_are_the_five():
    assert INTERNAL_SUBCATEGORIES == (
        LEASE_EXPIRED,
        MAX_RUNS_EXCEEDED,
        POD_MISSING,
        STUCK_TERMINATING,
        JOB_CREATION_FAILED,
    )


@pytest.mark.parametrize("subcategory", INTERNAL_SUBCATEGORIES, ids=list(INTERNAL_SUBCATEGORIES))
def test_internal_helper(subcategory):
    result = internal(subcategory)
    assert labels(result) == ("internal", subcategory, "Delete", "")
    assert result.delete_pod is True


def test_internal_helper_carries_hint():
    assert (
        internal(LEASE_EXPIRED, hint="executor stopped heart-beating").hint
        == "executor stopped heart-beating"
    )


@pytest.mark.parametrize(
    "subcategory", ["node-failure", "lease-expried", ""], ids=["configured-one", "typo", "empty"]
)
def test_internal_helper_refuses_other_subcategories(subcategory):
    with pytest.raises(ValueError, match="not a built-in internal subcategory"):
        internal(subcategory)


def test_configured_internal_category_with_own_subcategories_works():
    result = Categorizer(load(EXAMPLE)).categorize(failure(pod_error="node n1 lost"))
    assert result == Categorization(INTERNAL, "node-failure", "Delete", "")


# --- start-up validation: errors name the place -----------------------------------------------


def example_with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """The shipped example with the value at ``path`` (a key or index sequence) replaced."""
    data = copy.deepcopy(EXAMPLE)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


WHERE = "executors[0].errorCategories"
RULE_1_0 = f"{WHERE}.categories[1].rules[0]"
MATCHERS = "a rule needs exactly one of onExitCodes, onConditions, onTerminationMessage, onPodError"

VALIDATION_CASES = [
    (
        "duplicate-category-name",
        example_with(("categories", 3, "name"), "user-error"),
        f"{WHERE}.categories[3].name",
        "duplicate category name 'user-error' (also categories[1])",
    ),
    (
        "category-without-rules",
        example_with(("categories", 2, "rules"), []),
        f"{WHERE}.categories[2].rules",
        "List should have at least 1 item after validation, not 0",
    ),
    (
        "rule-without-matcher",
        example_with(("categories", 1, "rules", 0), {"hint": "h"}),
        RULE_1_0,
        f"{MATCHERS} (found none)",
    ),
    (
        "rule-with-two-matchers",
        example_with(
            ("categories", 1, "rules", 0),
            {"onExitCodes": {"operator": "In", "values": [1]}, "onConditions": ["Evicted"]},
        ),
        RULE_1_0,
        f"{MATCHERS} (found onExitCodes, onConditions)",
    ),
    (
        "bad-termination-message-regex",
        example_with(
            ("categories", 2, "rules", 0, "onTerminationMessage", "pattern"), "CUDA (error"
        ),
        f"{WHERE}.categories[2].rules[0].onTerminationMessage.pattern",
        "not a valid regular expression: missing ), unterminated subpattern at position 5",
    ),
    (
        "bad-pod-error-regex",
        example_with(("categories", 3, "rules", 0, "onPodError", "pattern"), "node [lost"),
        f"{WHERE}.categories[3].rules[0].onPodError.pattern",
        "not a valid regular expression: unterminated character set at position 5",
    ),
    (
        "unknown-condition",
        example_with(("categories", 3, "rules", 1, "onConditions"), ["Evicted", "Preempted"]),
        f"{WHERE}.categories[3].rules[1].onConditions[1]",
        "Input should be 'OOMKilled', 'Evicted' or 'DeadlineExceeded'",
    ),
    (
        "unknown-operator",
        example_with(("categories", 1, "rules", 0, "onExitCodes", "operator"), "Equals"),
        f"{RULE_1_0}.onExitCodes.operator",
        "Input should be 'In' or 'NotIn'",
    ),
    (
        "empty-exit-code-values",
        example_with(("categories", 1, "rules", 0, "onExitCodes", "values"), []),
        f"{RULE_1_0}.onExitCodes.values",
        "List should have at least 1 item after validation, not 0",
    ),
]


@pytest.mark.parametrize(
    ("error_categories", "field", "message"),
    [case[1:] for case in VALIDATION_CASES],
    ids=[case[0] for case in VALIDATION_CASES],
)
def test_invalid_configuration_names_the_place(error_categories, field, message):
    with pytest.raises(ValidationFailed) as info:
        load(error_categories)
    assert [(e.field, e.message) for e in info.value.errors] == [(field, message)]
