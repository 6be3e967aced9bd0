"""armada.core.policy: parse_policy validates a RetryPolicy file and names every field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from armada.core.errors import ValidationFailed
from armada.core.policy import (
    API_VERSION,
    MAX_RETRY_LIMIT,
    MemoryBump,
    Mutation,
    RetryPolicy,
    Rule,
    parse_policy,
    policy_document,
)
from armada.core.quantity import parse_quantity

# The example policy of the specification, as loaded from its YAML.
EXAMPLE: dict[str, Any] = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "ml-training-retries",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {"action": "Retry", "onCategory": "gpu", "onSubcategory": "transient"},
        {"action": "Retry", "onCategory": "internal", "onSubcategory": "lease-expired"},
    ],
}

# The mutation examples of the specification.
MUTATING: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "kind": "RetryPolicy",
    "name": "mutating",
    "retryLimit": 2,
    "defaultAction": "Retry",
    "rules": [
        {
            "action": "Retry",
            "onCategory": "internal",
            "onSubcategory": "node-failure",
            "mutate": {"affinity": {"avoidSameNode": True}},
        },
        {
            "action": "Retry",
            "onCategory": "oom",
            "mutate": {"resources": {"memory": {"factor": 1.5}}},
        },
        {
            "action": "Retry",
            "onCategory": "oom-small",
            "mutate": {
                "affinity": {"avoidSameNode": True},
                "resources": {"memory": {"static": "512Mi"}},
            },
        },
    ],
}


def minimal(**fields: Any) -> dict[str, Any]:
    """A valid policy with no rules; ``fields`` override or add top-level keys."""
    data: dict[str, Any] = {"name": "p", "retryLimit": 1, "defaultAction": "Fail"}
    data.update(fields)
    return data


def with_rule(**rule: Any) -> dict[str, Any]:
    """A valid policy whose rules[1] is ``rule`` (rules[0] is a valid Fail rule)."""
    return minimal(rules=[{"action": "Fail", "onCategory": "user-error"}, rule])


def with_memory(memory: Any) -> dict[str, Any]:
    return with_rule(action="Retry", onCategory="oom", mutate={"resources": {"memory": memory}})


def errors_of(data: Any) -> dict[str, str]:
    with pytest.raises(ValidationFailed) as info:
        parse_policy(data)
    return {e.field: e.message for e in info.value.errors}


# --- valid policies ---------------------------------------------------------------------------


def test_the_specification_example_parses():
    policy = parse_policy(EXAMPLE)
    assert policy == RetryPolicy(
        name="ml-training-retries",
        retry_limit=3,
        default_action="Fail",
        rules=(
            Rule(action="Fail", on_category="user-error"),
            Rule(action="Retry", on_category="gpu", on_subcategory="transient"),
            Rule(action="Retry", on_category="internal", on_subcategory="lease-expired"),
        ),
        version=1,
    )


def test_the_mutation_examples_parse():
    policy = parse_policy(MUTATING)
    assert [r.mutate for r in policy.rules] == [
        Mutation(avoid_same_node=True),
        Mutation(memory=MemoryBump(factor=1.5)),
        Mutation(avoid_same_node=True, memory=MemoryBump(static=parse_quantity("512Mi"))),
    ]
    assert policy.rules[1].mutate.memory.kind == "factor"
    assert policy.rules[2].mutate.memory.kind == "static"


@pytest.mark.parametrize("data", [EXAMPLE, MUTATING], ids=["spec-example", "mutations"])
def test_document_round_trips(data):
    document = policy_document(parse_policy(data))
    assert document == data
    assert parse_policy(document) == parse_policy(data)


def test_document_leaves_out_empty_optional_fields():
    document = policy_document(parse_policy(minimal(rules=[])))
    assert document == {
        "apiVersion": API_VERSION,
        "kind": "RetryPolicy",
        "name": "p",
        "retryLimit": 1,
        "defaultAction": "Fail",
    }


@pytest.mark.parametrize(
    ("static", "written"),
    [("512Mi", "512Mi"), ("1G", "1000000000"), (1048576, "1Mi"), ("1.5Gi", "1536Mi")],
    ids=["binary", "decimal-as-bytes", "plain-number", "fractional-binary"],
)
def test_static_is_written_back_as_a_quantity(static, written):
    policy = parse_policy(with_memory({"static": static}))
    memory = policy_document(policy)["rules"][1]["mutate"]["resources"]["memory"]
    assert memory == {"static": written}
    assert parse_policy(policy_document(policy)) == policy


@pytest.mark.parametrize(
    "mutate",
    [{}, {"affinity": {"avoidSameNode": False}}, {"affinity": {}, "resources": {}}],
    ids=["empty", "avoid-false", "empty-blocks"],
)
def test_a_mutate_block_that_changes_nothing_is_no_mutation(mutate):
    policy = parse_policy(with_rule(action="Retry", onCategory="oom", mutate=mutate))
    assert policy.rules[1].mutate is None
    assert "mutate" not in policy_document(policy)["rules"][1]


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"apiVersion": API_VERSION},
        {"kind": "RetryPolicy"},
        {"rules": None},
        {"rules": []},
        {"retryLimit": 0},
        {"retryLimit": MAX_RETRY_LIMIT},
        {"defaultAction": "Retry"},
        {"name": "a"},
        {"name": "a" * 63},
        {"name": "0-policy-9"},
    ],
    ids=[
        "minimal",
        "api-version",
        "kind",
        "rules-null",
        "rules-empty",
        "retry-limit-zero",
        "retry-limit-max",
        "default-retry",
        "name-one-char",
        "name-63-chars",
        "name-digits-and-dashes",
    ],
)
def test_valid_top_levels(fields):
    policy = parse_policy(minimal(**fields))
    assert policy.rules == ()


@pytest.mark.parametrize(
    "read_only",
    [
        {"version": 7},
        {"createdAt": "2025-01-01T00:00:00+00:00"},
        {"updatedAt": "2025-01-02T00:00:00+00:00", "updatedBy": "alice"},
        {"version": "junk", "createdAt": None, "updatedAt": 3, "updatedBy": ["x"]},
    ],
    ids=["version", "created-at", "updated", "any-value"],
)
def test_read_only_fields_are_ignored(read_only):
    policy = parse_policy({**EXAMPLE, **read_only})
    assert policy == parse_policy(EXAMPLE)
    assert policy.version == 1


def test_get_output_can_be_fed_back():
    shown = {
        **policy_document(parse_policy(EXAMPLE)),
        "version": 4,
        "createdAt": "2025-01-01T00:00:00+00:00",
        "updatedAt": "2025-02-01T00:00:00+00:00",
        "updatedBy": "alice",
    }
    assert parse_policy(shown) == parse_policy(EXAMPLE)


def test_factor_given_as_integer_is_a_float():
    policy = parse_policy(with_memory({"factor": 2}))
    assert policy.rules[1].mutate.memory == MemoryBump(factor=2.0)


def test_input_is_not_modified():
    data = copy.deepcopy(MUTATING)
    parse_policy(data)
    assert data == MUTATING


# --- errors -----------------------------------------------------------------------------------

R1 = "rules[1]"
MEM = f"{R1}.mutate.resources.memory"

ERROR_CASES = [
    # top level
    ("not-a-mapping", ["name: p"], "", "mapping"),
    ("api-version-wrong", minimal(apiVersion="armadaproject.io/v1"), "apiVersion", API_VERSION),
    ("kind-wrong", minimal(kind="Queue"), "kind", "RetryPolicy"),
    ("kind-wrong-case", minimal(kind="retrypolicy"), "kind", "RetryPolicy"),
    ("name-missing", {"retryLimit": 1, "defaultAction": "Fail"}, "name", "required"),
    ("name-upper-case", minimal(name="My-Policy"), "name", "RFC 1123"),
    ("name-underscore", minimal(name="my_policy"), "name", "RFC 1123"),
    ("name-leading-dash", minimal(name="-p"), "name", "RFC 1123"),
    ("name-trailing-dash", minimal(name="p-"), "name", "RFC 1123"),
    ("name-empty", minimal(name=""), "name", "RFC 1123"),
    ("name-64-chars", minimal(name="a" * 64), "name", "63"),
    ("name-not-string", minimal(name=12), "name", "RFC 1123"),
    ("name-trailing-newline", minimal(name="p\n"), "name", "RFC 1123"),
    ("retry-limit-missing", {"name": "p", "defaultAction": "Fail"}, "retryLimit", "required"),
    ("retry-limit-negative", minimal(retryLimit=-1), "retryLimit", "from 0"),
    ("retry-limit-too-big", minimal(retryLimit=MAX_RETRY_LIMIT + 1), "retryLimit", "from 0"),
    ("retry-limit-bool", minimal(retryLimit=True), "retryLimit", "whole number"),
    ("retry-limit-float", minimal(retryLimit=1.5), "retryLimit", "whole number"),
    ("retry-limit-string", minimal(retryLimit="3"), "retryLimit", "whole number"),
    ("default-missing", {"name": "p", "retryLimit": 1}, "defaultAction", "required"),
    ("default-lower-case", minimal(defaultAction="retry"), "defaultAction", "exact case"),
    ("default-unknown", minimal(defaultAction="Requeue"), "defaultAction", "Retry or Fail"),
    ("default-not-string", minimal(defaultAction=["Fail"]), "defaultAction", "Retry or Fail"),
    ("rules-not-list", minimal(rules={"action": "Fail"}), "rules", "list"),
    ("rule-not-mapping", minimal(rules=["Fail"]), "rules[0]", "mapping"),
    # rules
    ("rule-action-missing", with_rule(onCategory="gpu"), f"{R1}.action", "required"),
    ("rule-action-case", with_rule(action="fail", onCategory="gpu"), f"{R1}.action", "exact case"),
    ("rule-action-unknown", with_rule(action="Skip", onCategory="gpu"), f"{R1}.action", "Retry"),
    ("rule-category-missing", with_rule(action="Retry"), f"{R1}.onCategory", "required"),
    (
        "rule-category-empty",
        with_rule(action="Retry", onCategory=""),
        f"{R1}.onCategory",
        "non-empty",
    ),
    (
        "rule-category-not-string",
        with_rule(action="Retry", onCategory=137),
        f"{R1}.onCategory",
        "non-empty",
    ),
    (
        "subcategory-without-category",
        with_rule(action="Retry", onSubcategory="transient"),
        f"{R1}.onSubcategory",
        "only valid together with onCategory",
    ),
    (
        "subcategory-empty",
        with_rule(action="Retry", onCategory="gpu", onSubcategory=""),
        f"{R1}.onSubcategory",
        "non-empty",
    ),
    (
        "subcategory-not-string",
        with_rule(action="Retry", onCategory="gpu", onSubcategory=["a"]),
        f"{R1}.onSubcategory",
        "non-empty",
    ),
    (
        "bad-mutate-on-fail-rule",
        with_rule(action="Fail", onCategory="oom", mutate={"resources": {"memory": {}}}),
        f"{R1}.mutate.resources.memory",
        "exactly one of factor",
    ),
    (
        "mutate-not-mapping",
        with_rule(action="Retry", onCategory="oom", mutate=["avoidSameNode"]),
        f"{R1}.mutate",
        "mapping",
    ),
    (
        "affinity-not-mapping",
        with_rule(action="Retry", onCategory="oom", mutate={"affinity": True}),
        f"{R1}.mutate.affinity",
        "mapping",
    ),
    (
        "avoid-same-node-not-bool",
        with_rule(action="Retry", onCategory="oom", mutate={"affinity": {"avoidSameNode": "yes"}}),
        f"{R1}.mutate.affinity.avoidSameNode",
        "true or false",
    ),
    (
        "resources-not-mapping",
        with_rule(action="Retry", onCategory="oom", mutate={"resources": "1Gi"}),
        f"{R1}.mutate.resources",
        "mapping",
    ),
    # memory
    ("memory-not-mapping", with_memory("1Gi"), MEM, "mapping"),
    ("memory-neither", with_memory({}), MEM, "exactly one of factor"),
    ("memory-both", with_memory({"factor": 1.5, "static": "1Gi"}), MEM, "exactly one of factor"),
    ("factor-one", with_memory({"factor": 1.0}), f"{MEM}.factor", "greater than 1.0"),
    ("factor-below-one", with_memory({"factor": 0.5}), f"{MEM}.factor", "greater than 1.0"),
    ("factor-negative", with_memory({"factor": -2}), f"{MEM}.factor", "greater than 1.0"),
    ("factor-infinite", with_memory({"factor": float("inf")}), f"{MEM}.factor", "finite"),
    ("factor-nan", with_memory({"factor": float("nan")}), f"{MEM}.factor", "finite"),
    ("factor-string", with_memory({"factor": "1.5"}), f"{MEM}.factor", "number"),
    ("factor-bool", with_memory({"factor": True}), f"{MEM}.factor", "number"),
    ("factor-beyond-float", with_memory({"factor": 10**400}), f"{MEM}.factor", "too large"),
    ("static-zero", with_memory({"static": "0"}), f"{MEM}.static", "positive"),
    ("static-negative", with_memory({"static": "-1Gi"}), f"{MEM}.static", "not a quantity"),
    ("static-garbage", with_memory({"static": "lots"}), f"{MEM}.static", "not a quantity"),
    ("static-fraction-byte", with_memory({"static": "100m"}), f"{MEM}.static", "whole number"),
    ("static-bool", with_memory({"static": True}), f"{MEM}.static", "quantity"),
]


@pytest.mark.parametrize(
    ("data", "field", "fragment"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_error_names_the_field(data, field, fragment):
    errors = errors_of(data)
    assert field in errors, errors
    assert fragment in errors[field]


UNKNOWN_FIELD_CASES = [
    ("top-level", minimal(retrylimit=3), "retrylimit"),
    ("rule", with_rule(action="Retry", onCategory="oom", onExitCodes=[1]), f"{R1}.onExitCodes"),
    (
        "mutate",
        with_rule(action="Retry", onCategory="oom", mutate={"nodeSelector": {"a": "b"}}),
        f"{R1}.mutate.nodeSelector",
    ),
    (
        "affinity",
        with_rule(action="Retry", onCategory="oom", mutate={"affinity": {"avoidSameZone": True}}),
        f"{R1}.mutate.affinity.avoidSameZone",
    ),
    (
        "resources",
        with_rule(
            action="Retry",
            onCategory="oom",
            mutate={"resources": {"memory": {"factor": 2}, "cpu": {"factor": 2}}},
        ),
        f"{R1}.mutate.resources.cpu",
    ),
    ("memory", with_memory({"factor": 2, "max": "8Gi"}), f"{MEM}.max"),
    # read-only fields are accepted at the top level only
    ("read-only-in-rule", with_rule(action="Fail", onCategory="x", version=2), f"{R1}.version"),
]


@pytest.mark.parametrize(
    ("data", "field"),
    [case[1:] for case in UNKNOWN_FIELD_CASES],
    ids=[case[0] for case in UNKNOWN_FIELD_CASES],
)
def test_unknown_fields_are_rejected_with_their_path(data, field):
    errors = errors_of(data)
    assert errors[field].startswith("unknown field")


def test_a_non_string_key_is_named():
    errors = errors_of({**minimal(), 7: "x"})
    assert errors["7"].startswith("unknown field")


def test_every_problem_is_reported_at_once():
    data = {
        "apiVersion": "v1",
        "name": "Bad_Name",
        "retryLimit": -1,
        "defaultAction": "retry",
        "extra": 1,
        "rules": [
            {"action": "Retry"},
            {"action": "Fail", "onCategory": "oom", "mutate": {"affinity": 1}},
            {
                "action": "Retry",
                "onCategory": "oom",
                "mutate": {"resources": {"memory": {"factor": 1}, "cpu": {}}},
            },
        ],
    }
    assert set(errors_of(data)) == {
        "apiVersion",
        "name",
        "retryLimit",
        "defaultAction",
        "extra",
        "rules[0].onCategory",
        "rules[1].mutate.affinity",
        "rules[2].mutate.resources.cpu",
        "rules[2].mutate.resources.memory.factor",
    }


def test_the_error_text_reads_as_path_and_message():
    with pytest.raises(ValidationFailed) as info:
        parse_policy(with_memory({"factor": 2, "max": "8Gi"}))
    assert str(info.value).startswith("rules[1].mutate.resources.memory.max: unknown field")


@pytest.mark.parametrize(
    "mutate",
    [{"affinity": {"avoidSameNode": True}}, {"resources": {"memory": {"factor": 2}}}, {}],
    ids=["avoid-node", "memory", "empty"],
)
def test_a_mutate_block_on_a_fail_rule_is_dropped_with_a_warning(mutate):
    policy = parse_policy(with_rule(action="Fail", onCategory="oom", mutate=mutate))
    assert policy.rules[1].mutate is None
    assert "mutate" not in policy_document(policy)["rules"][1]
    assert [w.field for w in policy.warnings] == [f"{R1}.mutate"]
    assert "no effect on a Fail rule" in policy.warnings[0].message


def test_a_policy_without_doubtful_parts_has_no_warnings():
    assert parse_policy(MUTATING).warnings == ()
    # Warnings are not part of the policy: the same policy read back compares equal.
    warned = parse_policy(with_rule(action="Fail", onCategory="oom", mutate={}))
    assert warned == parse_policy(policy_document(warned))
