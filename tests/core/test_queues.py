"""armada.core.queues: parse_queue validates a queue body and returns model field names."""

from __future__ import annotations

import math

import pytest

from armada.core.errors import ValidationFailed
from armada.core.queues import (
    VERBS,
    QueueSpec,
    parse_queue,
    queue_warnings,
    validate_name,
)


def grant(*subjects: tuple[str, str], verbs: list[str] | None = None) -> dict:
    return {"subjects": [{"kind": k, "name": n} for k, n in subjects], "verbs": verbs or ["submit"]}


def errors_of(data, **kw) -> list[tuple[str, str]]:
    with pytest.raises(ValidationFailed) as info:
        parse_queue(data, **kw)
    assert info.value.errors
    return [(e.field, e.message) for e in info.value.errors]


def fields_of(data, **kw) -> list[str]:
    return [f for f, _ in errors_of(data, **kw)]


def test_minimal_queue():
    assert parse_queue({"name": "analytics"}) == {"name": "analytics"}


def test_full_queue_uses_model_field_names():
    out = parse_queue(
        {
            "name": "team-a",
            "priorityFactor": 2,
            "owners": ["alice", "bob", "alice"],
            "groupOwners": ["admins"],
            "permissions": [
                grant(("User", "carol"), ("Group", "ops"), verbs=["submit", "cancel", "submit"])
            ],
            "labels": {"team": "a"},
            "cordoned": True,
            "retryPolicies": ["default", "oom"],
        }
    )
    assert out == {
        "name": "team-a",
        "priority_factor": 2.0,
        "owners": ["alice", "bob"],
        "group_owners": ["admins"],
        "permissions": [
            {
                "subjects": [{"kind": "User", "name": "carol"}, {"kind": "Group", "name": "ops"}],
                "verbs": ["submit", "cancel"],
            }
        ],
        "labels": {"team": "a"},
        "cordoned": True,
        "retry_policies": ["default", "oom"],
    }
    assert isinstance(out["priority_factor"], float)
    assert set(out) - {"name"} <= set(QueueSpec.__dataclass_fields__)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, {}),
        ({"cordoned": False}, {"cordoned": False}),
        ({"priorityFactor": 1.5}, {"priority_factor": 1.5}),
        ({"labels": None}, {"labels": {}}),
        ({"permissions": None}, {"permissions": []}),
        ({"owners": None}, {"owners": []}),
        ({"name": "renamed"}, {"name": "renamed"}),
    ],
    ids=[
        "nothing",
        "cordoned",
        "priority-factor",
        "labels-null",
        "permissions-null",
        "owners-null",
        "name",
    ],
)
def test_partial_update_returns_only_given_fields(data, expected):
    assert parse_queue(data, partial=True) == expected


def test_name_is_required_unless_partial():
    assert errors_of({}) == [("name", "is required")]
    assert errors_of({"name": "Bad"}, partial=True)[0][0] == "name"


@pytest.mark.parametrize(
    "name",
    ["a", "queue-1", "0", "a" * 63, "x-y-z"],
)
def test_valid_names(name):
    assert validate_name(name) == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (None, "is required"),
        ("", "is required"),
        (5, "is required"),
        ("Analytics", "RFC 1123"),
        ("team_a", "RFC 1123"),
        ("-a", "RFC 1123"),
        ("a-", "RFC 1123"),
        ("a.b", "RFC 1123"),
        ("a" * 64, "at most 63 characters"),
    ],
    ids=repr,
)
def test_invalid_names(name, message):
    errors = validate_name(name, "metadata.name")
    assert [e.field for e in errors] == ["metadata.name"]
    assert message in errors[0].message


ERROR_CASES = [
    (
        "unknown-field",
        {"name": "q", "weight": 2},
        ["weight"],
        "unknown field; allowed: cordoned, groupOwners, labels",
    ),
    ("unknown-fields-sorted", {"name": "q", "b": 1, "a": 2}, ["a", "b"], "unknown field"),
    ("unknown-keys-of-mixed-types", {"name": "q", 1: 1, "a": 2}, ["1", "a"], "unknown field"),
    ("bad-name", {"name": "Q"}, ["name"], "RFC 1123"),
    ("name-with-trailing-newline", {"name": "q\n"}, ["name"], "RFC 1123"),
    (
        "priority-factor-below-one",
        {"name": "q", "priorityFactor": 0.5},
        ["priorityFactor"],
        "at least 1.0",
    ),
    (
        "priority-factor-zero",
        {"name": "q", "priorityFactor": 0},
        ["priorityFactor"],
        "at least 1.0",
    ),
    (
        "priority-factor-string",
        {"name": "q", "priorityFactor": "2"},
        ["priorityFactor"],
        "must be a number",
    ),
    (
        "priority-factor-bool",
        {"name": "q", "priorityFactor": True},
        ["priorityFactor"],
        "must be a number",
    ),
    (
        "priority-factor-inf",
        {"name": "q", "priorityFactor": math.inf},
        ["priorityFactor"],
        "must be a number",
    ),
    (
        "priority-factor-nan",
        {"name": "q", "priorityFactor": math.nan},
        ["priorityFactor"],
        "must be a number",
    ),
    (
        "priority-factor-beyond-any-float",
        {"name": "q", "priorityFactor": 10**400},
        ["priorityFactor"],
        "must be a number",
    ),
    ("owners-not-a-list", {"name": "q", "owners": "alice"}, ["owners"], "list of non-empty names"),
    (
        "owners-empty-name",
        {"name": "q", "owners": ["alice", ""]},
        ["owners"],
        "list of non-empty names",
    ),
    (
        "group-owners-not-strings",
        {"name": "q", "groupOwners": [1]},
        ["groupOwners"],
        "list of non-empty names",
    ),
    (
        "retry-policies-not-a-list",
        {"name": "q", "retryPolicies": "oom"},
        ["retryPolicies"],
        "list of non-empty names",
    ),
    ("cordoned-string", {"name": "q", "cordoned": "true"}, ["cordoned"], "must be true or false"),
    ("cordoned-int", {"name": "q", "cordoned": 1}, ["cordoned"], "must be true or false"),
    (
        "labels-not-a-mapping",
        {"name": "q", "labels": ["a"]},
        ["labels"],
        "mapping of strings to strings",
    ),
    (
        "labels-non-string-value",
        {"name": "q", "labels": {"a": 1}},
        ["labels"],
        "mapping of strings to strings",
    ),
    (
        "label-key-with-a-space",
        {"name": "q", "labels": {"my team": "a"}},
        ["labels[my team]"],
        "(the key) the name 'my team' must be letters, digits",
    ),
    (
        "label-key-prefix-not-a-subdomain",
        {"name": "q", "labels": {"Example.COM/team": "a"}},
        ["labels[Example.COM/team]"],
        "must be a DNS subdomain",
    ),
    (
        "label-value-too-long",
        {"name": "q", "labels": {"team": "a" * 64}},
        ["labels[team]"],
        "at most 63 characters",
    ),
    (
        "label-value-with-a-slash",
        {"name": "q", "labels": {"ok": "a", "team": "a/b"}},
        ["labels[team]"],
        "must be empty or letters, digits",
    ),
    (
        "permissions-not-a-list",
        {"name": "q", "permissions": {"verbs": []}},
        ["permissions"],
        "must be a list",
    ),
    (
        "grant-not-a-mapping",
        {"name": "q", "permissions": ["x"]},
        ["permissions[0]"],
        "only subjects and verbs",
    ),
    (
        "grant-extra-key",
        {"name": "q", "permissions": [grant(("User", "a")) | {"queues": ["x"]}]},
        ["permissions[0]"],
        "only subjects and verbs",
    ),
    (
        "grant-without-subjects",
        {"name": "q", "permissions": [{"verbs": ["submit"]}]},
        ["permissions[0].subjects"],
        "non-empty list",
    ),
    (
        "grant-bad-subject-kind",
        {"name": "q", "permissions": [grant(("User", "a"), ("Team", "b"))]},
        ["permissions[0].subjects[1]"],
        "kind: User|Group",
    ),
    (
        "grant-subject-without-name",
        {"name": "q", "permissions": [{"subjects": [{"kind": "User"}], "verbs": ["submit"]}]},
        ["permissions[0].subjects[0]"],
        "name: <name>",
    ),
    (
        "grant-unknown-verb",
        {"name": "q", "permissions": [grant(("User", "a"), verbs=["submit", "delete"])]},
        ["permissions[0].verbs"],
        "non-empty list of " + ", ".join(VERBS),
    ),
    (
        "grant-no-verbs",
        {"name": "q", "permissions": [{"subjects": [{"kind": "User", "name": "a"}], "verbs": []}]},
        ["permissions[0].verbs"],
        "non-empty list",
    ),
    (
        "second-grant-bad",
        {"name": "q", "permissions": [grant(("User", "a")), {"subjects": [], "verbs": ["x"]}]},
        ["permissions[1].subjects", "permissions[1].verbs"],
        "non-empty list",
    ),
]


@pytest.mark.parametrize(
    ("data", "fields", "fragment"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_errors_name_the_field(data, fields, fragment):
    errors = errors_of(data)
    assert [f for f, _ in errors] == fields, errors
    assert fragment in errors[0][1]


def test_every_problem_is_reported():
    assert fields_of({"name": "Bad", "priorityFactor": 0, "cordoned": "no", "extra": 1}) == [
        "extra",
        "name",
        "priorityFactor",
        "cordoned",
    ]


@pytest.mark.parametrize("data", [None, [], "name: q"], ids=["none", "list", "string"])
def test_body_must_be_a_mapping(data):
    assert errors_of(data) == [("", "a queue is a mapping")]


def test_queue_spec_defaults():
    spec = QueueSpec(name="q")
    assert (spec.priority_factor, spec.owners, spec.cordoned, spec.labels) == (1.0, [], False, {})


IGNORED = [
    ({"name": "q", "resourceLimits": {"cpu": 0.2, "memory": 1}}, ["resourceLimits"]),
    ({"name": "q", "resourceLimits": {}}, []),
    ({"name": "q", "resourceLimits": None}, []),
    ({"name": "q"}, []),
]


@pytest.mark.parametrize(("data", "warned"), IGNORED)
def test_ignored_fields_are_accepted_not_returned_and_warned_about(data, warned):
    assert parse_queue(data) == {"name": "q"}
    warnings = queue_warnings(data)
    assert [w.split(":", 1)[0] for w in warnings] == warned
    assert all("deprecated and ignored" in w for w in warnings)


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ({"cpu": 1.01}, "resourceLimits.cpu"),
        ({"cpu": -0.5}, "resourceLimits.cpu"),
        ({"cpu": True}, "resourceLimits.cpu"),
        ({"cpu": float("nan")}, "resourceLimits.cpu"),
        ({"": 0.5}, "resourceLimits"),
        ([0.5], "resourceLimits"),
    ],
)
def test_ignored_resource_limits_must_still_be_well_formed(limits, field):
    assert field in fields_of({"name": "q", "resourceLimits": limits})


# --- resourceLimitsByPriorityClassName ----------------------------------------------------------

LIMITS = "resourceLimitsByPriorityClassName"
PC = "armada-preemptible"
KNOWN = {"priority_classes": ["armada-default", PC], "pools": ["default", "gpu-pool"]}


def limits_of(value, **kw) -> dict:
    return parse_queue({"name": "q", LIMITS: value}, **(KNOWN | kw))[
        "resource_limits_by_priority_class_name"
    ]


ACCEPTED_LIMITS = [
    ("empty", {}, {}),
    ("null", None, {}),
    (
        "armada-shaped",
        {
            PC: {
                "maximumResourceFraction": {"cpu": 0.3, "memory": 0.3},
                "maximumResourceFractionByPool": {
                    "gpu-pool": {"maximumResourceFraction": {"cpu": 0.1}}
                },
            }
        },
        {
            PC: {
                "maximumResourceFraction": {"cpu": 0.3, "memory": 0.3},
                "maximumResourceFractionByPool": {
                    "gpu-pool": {"maximumResourceFraction": {"cpu": 0.1}}
                },
            }
        },
    ),
    (
        "keys-filled-in-ints-to-floats",
        {PC: {"maximumResourceFraction": {"nvidia.com/gpu": 1, "cpu": 0}}},
        {
            PC: {
                "maximumResourceFraction": {"nvidia.com/gpu": 1.0, "cpu": 0.0},
                "maximumResourceFractionByPool": {},
            }
        },
    ),
    (
        "empty-entries",
        {PC: {}, "armada-default": None},
        {
            PC: {"maximumResourceFraction": {}, "maximumResourceFractionByPool": {}},
            "armada-default": {"maximumResourceFraction": {}, "maximumResourceFractionByPool": {}},
        },
    ),
    (
        "empty-pool-entry",
        {PC: {"maximumResourceFraction": None, "maximumResourceFractionByPool": {"default": {}}}},
        {
            PC: {
                "maximumResourceFraction": {},
                "maximumResourceFractionByPool": {"default": {"maximumResourceFraction": {}}},
            }
        },
    ),
]


@pytest.mark.parametrize(
    ("value", "stored"),
    [case[1:] for case in ACCEPTED_LIMITS],
    ids=[case[0] for case in ACCEPTED_LIMITS],
)
def test_limits_by_priority_class_are_normalised(value, stored):
    assert limits_of(value) == stored
    assert limits_of(stored) == stored  # the stored shape is a valid body


def frac(value, resource: str = "cpu") -> dict:
    return {PC: {"maximumResourceFraction": {resource: value}}}


def pool_frac(value, pool: str = "gpu-pool") -> dict:
    return {
        PC: {"maximumResourceFractionByPool": {pool: {"maximumResourceFraction": {"cpu": value}}}}
    }


AT = f"{LIMITS}.{PC}"
LIMIT_ERRORS = [
    ("not-a-mapping", ["x"], LIMITS, "must be a mapping of priority class names"),
    ("entry-not-a-mapping", {PC: 0.5}, AT, "must be a mapping"),
    ("empty-class-name", {"": {}}, LIMITS, "priority class names must be non-empty"),
    (
        "unknown-class",
        {"armada-urgent": {}},
        f"{LIMITS}.armada-urgent",
        "unknown priority class; configured: armada-default, armada-preemptible",
    ),
    (
        "unknown-key",
        {PC: {"maximumResourceFractions": {}}},
        f"{AT}.maximumResourceFractions",
        "unknown field; allowed: maximumResourceFraction, maximumResourceFractionByPool",
    ),
    ("over-one", frac(1.01), f"{AT}.maximumResourceFraction.cpu", "must be a number from 0 to 1"),
    ("negative", frac(-0.1), f"{AT}.maximumResourceFraction.cpu", "must be a number from 0 to 1"),
    ("bool", frac(True), f"{AT}.maximumResourceFraction.cpu", "must be a number from 0 to 1"),
    ("string", frac("0.3"), f"{AT}.maximumResourceFraction.cpu", "must be a number from 0 to 1"),
    ("nan", frac(math.nan), f"{AT}.maximumResourceFraction.cpu", "must be a number from 0 to 1"),
    ("inf", frac(math.inf), f"{AT}.maximumResourceFraction.cpu", "must be a number from 0 to 1"),
    ("huge-int", frac(10**400), f"{AT}.maximumResourceFraction.cpu", "from 0 to 1"),
    ("empty-resource", frac(0.5, ""), f"{AT}.maximumResourceFraction", "resource names must be"),
    (
        "fractions-not-a-mapping",
        {PC: {"maximumResourceFraction": 0.3}},
        f"{AT}.maximumResourceFraction",
        "must be a mapping of resource names to fractions",
    ),
    (
        "by-pool-not-a-mapping",
        {PC: {"maximumResourceFractionByPool": ["gpu-pool"]}},
        f"{AT}.maximumResourceFractionByPool",
        "must be a mapping of pool names",
    ),
    (
        "empty-pool-name",
        pool_frac(0.1, ""),
        f"{AT}.maximumResourceFractionByPool",
        "pool names must be non-empty",
    ),
    (
        "unknown-pool",
        pool_frac(0.1, "cpu-pool"),
        f"{AT}.maximumResourceFractionByPool.cpu-pool",
        "unknown pool; configured: default, gpu-pool",
    ),
    (
        "pool-fraction-over-one",
        pool_frac(2),
        f"{AT}.maximumResourceFractionByPool.gpu-pool.maximumResourceFraction.cpu",
        "must be a number from 0 to 1",
    ),
    (
        "pool-without-its-key",
        {PC: {"maximumResourceFractionByPool": {"gpu-pool": {"cpu": 0.1}}}},
        f"{AT}.maximumResourceFractionByPool.gpu-pool.cpu",
        "unknown field; allowed: maximumResourceFraction",
    ),
]


@pytest.mark.parametrize(
    ("value", "field", "message"),
    [case[1:] for case in LIMIT_ERRORS],
    ids=[case[0] for case in LIMIT_ERRORS],
)
def test_limit_errors_name_the_full_path(value, field, message):
    errors = errors_of({"name": "q", LIMITS: value}, **KNOWN)
    assert errors == [(field, errors[0][1])]
    assert message in errors[0][1]


def test_every_limit_problem_is_reported_with_the_queues_own():
    value = {PC: {"maximumResourceFraction": {"cpu": 2, "memory": -1}}, "nope": {}}
    assert fields_of({"name": "q", "priorityFactor": 0, LIMITS: value}, **KNOWN) == [
        "priorityFactor",
        f"{LIMITS}.nope",
        f"{AT}.maximumResourceFraction.cpu",
        f"{AT}.maximumResourceFraction.memory",
    ]


def test_without_configured_names_only_the_shape_is_checked():
    value = {"any-class": {"maximumResourceFractionByPool": {"any-pool": {}}}}
    assert parse_queue({"name": "q", LIMITS: value})["resource_limits_by_priority_class_name"]
    assert fields_of({"name": "q", LIMITS: value}, priority_classes=[], pools=[]) == [
        f"{LIMITS}.any-class"
    ]
    assert errors_of({"name": "q", LIMITS: {"x": {}}}, priority_classes=[])[0][1].endswith(
        "configured: none"
    )


def test_partial_update_takes_limits_only_when_given():
    assert parse_queue({}, partial=True, **KNOWN) == {}
    assert parse_queue({LIMITS: None}, partial=True, **KNOWN) == {
        "resource_limits_by_priority_class_name": {}
    }


def test_limits_are_a_queue_spec_field():
    assert QueueSpec(name="q").resource_limits_by_priority_class_name == {}
