"""armada.core.config: parse_config defaults and errors that name the key."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from armada.core.config import (
    ArmadaConfig,
    ErrorCategories,
    Executor,
    NodeGroup,
    PriorityClass,
    parse_config,
)
from armada.core.errors import ValidationFailed

CONFIG_FILE = Path(__file__).resolve().parents[2] / "config" / "armada.yaml"


def executor(id_: str = "local", **fields) -> dict:
    return {"id": id_, **fields}


def node_group(name: str = "node", cpu: str = "8", memory: str = "32Gi", **fields) -> dict:
    return {"name": name, "allocatable": {"cpu": cpu, "memory": memory}, **fields}


def category(name: str = "oom", *rules: dict, **fields) -> dict:
    return {"name": name, "rules": list(rules) or [{"onConditions": ["OOMKilled"]}], **fields}


def with_categories(*categories: dict, **fields) -> dict:
    return {"executors": [executor(errorCategories={"categories": list(categories), **fields})]}


def errors_of(data) -> list[tuple[str, str]]:
    with pytest.raises(ValidationFailed) as info:
        parse_config(data)
    assert info.value.errors, "ValidationFailed must carry at least one error"
    return [(e.field, e.message) for e in info.value.errors]


# --- defaults ---------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [None, {}], ids=["none", "empty-mapping"])
def test_defaults(data):
    cfg = parse_config(data)
    s = cfg.scheduling
    assert s.cycle_period == 1.0
    assert s.max_retries == 3
    assert s.retry_policy.enabled is False
    assert s.retry_policy.global_max_retries is None
    assert s.retry_policy.default_policy_name == ""
    assert s.priority_classes == {
        "armada-default": PriorityClass(priority=1000, preemptible=False),
        "armada-preemptible": PriorityClass(priority=1000, preemptible=True),
    }
    assert s.default_priority_class_name == "armada-default"
    assert [(p.name, p.short_job_penalty_cutoff) for p in s.pools] == [("default", 0.0)]
    assert s.node_id_label == "kubernetes.io/hostname"
    assert s.indexed_node_labels == ["kubernetes.io/hostname"]
    assert s.maximum_jobs_per_round == 10000
    assert cfg.executor_timeout == 60.0
    assert cfg.queue_refresh_period == 10.0
    assert cfg.metrics.job_state_metrics_reset_interval == 43200.0
    assert cfg.auth.permission_group_mapping == {}
    assert cfg.executors == []


def test_executor_defaults():
    e = parse_config({"executors": [executor("ex-1")]}).executor("ex-1")
    assert e.pool == "default"
    assert e.backend == "fake"
    assert e.tick_period == 1.0
    assert e.tracked_node_labels == []
    assert e.nodes == []
    assert e.error_categories.enabled is False
    assert e.error_categories.categories == []


def test_config_is_frozen():
    cfg = parse_config({})
    with pytest.raises(ValueError):
        cfg.executor_timeout = 5.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        cfg.scheduling.max_retries = 1  # type: ignore[misc]


def test_values_are_parsed():
    cfg = parse_config(
        {
            "scheduling": {
                "cyclePeriod": "500ms",
                "maxRetries": 0,
                "retryPolicy": {"enabled": True, "globalMaxRetries": 0, "defaultPolicyName": "p"},
                "priorityClasses": {
                    "urgent": {"priority": 2000},
                    "low": {"priority": 0, "preemptible": True},
                },
                "defaultPriorityClassName": "low",
                "pools": [{"name": "cpu", "shortJobPenaltyCutoff": "1m"}, {"name": "gpu"}],
                "maximumJobsPerRound": 5,
            },
            "executorTimeout": "1h30m",
            "queueRefreshPeriod": 2,
            "metrics": {"jobStateMetricsResetInterval": 0},
            "auth": {"permissionGroupMapping": {"submit_any_jobs": ["admins"]}},
            "executors": [
                executor(
                    "gpu-1",
                    pool="gpu",
                    tickPeriod="250ms",
                    nodes=[
                        node_group(
                            "big",
                            count=3,
                            labels={"zone": "a"},
                            taints=[{"key": "gpu", "value": "yes", "effect": "NoExecute"}],
                        )
                    ],
                )
            ],
        }
    )
    s = cfg.scheduling
    assert s.cycle_period == 0.5
    assert s.retry_policy.global_max_retries == 0
    assert s.priority_classes["urgent"] == PriorityClass(priority=2000, preemptible=False)
    assert s.default_priority_class_name == "low"
    assert [(p.name, p.short_job_penalty_cutoff) for p in s.pools] == [("cpu", 60.0), ("gpu", 0.0)]
    assert cfg.executor_timeout == 5400.0
    assert cfg.queue_refresh_period == 2.0
    assert cfg.metrics.job_state_metrics_reset_interval == 0.0
    e = cfg.executor("gpu-1")
    assert e.tick_period == 0.25
    group = e.nodes[0]
    assert group.allocatable == {"cpu": 8000, "memory": 32 * 1024**3 * 1000}
    assert group.node_names() == ["big-0", "big-1", "big-2"]
    assert group.taints[0].effect == "NoExecute"


def test_taint_defaults():
    group = (
        parse_config({"executors": [executor(nodes=[node_group(taints=[{"key": "k"}])])]})
        .executors[0]
        .nodes[0]
    )
    assert (group.taints[0].value, group.taints[0].effect) == ("", "NoSchedule")


@pytest.mark.parametrize(
    ("count", "names"),
    [(1, ["n"]), (2, ["n-0", "n-1"]), (4, ["n-0", "n-1", "n-2", "n-3"])],
    ids=["single-keeps-name", "two", "four"],
)
def test_node_group_names(count, names):
    group = NodeGroup.model_validate({"name": "n", "count": count, "allocatable": {"cpu": "1"}})
    assert group.node_names() == names


def test_executor_lookup():
    cfg = parse_config({"executors": [executor("a"), executor("b")]})
    assert cfg.executor("b").id == "b"
    with pytest.raises(KeyError):
        cfg.executor("c")


@pytest.mark.parametrize(
    "rule",
    [
        {"onExitCodes": {"operator": "In", "values": [1, 2]}},
        {"onExitCodes": {"operator": "NotIn", "values": [0]}},
        {"onConditions": ["OOMKilled", "Evicted"]},
        {"onTerminationMessage": {"pattern": "out of (memory|disk)"}},
        {
            "onPodError": {"pattern": "ImagePull"},
            "containerName": "main",
            "subcategory": "image",
            "hint": "check",
        },
    ],
    ids=["exit-codes-in", "exit-codes-not-in", "conditions", "termination-message", "pod-error"],
)
def test_error_category_rule_with_one_matcher_is_valid(rule):
    cfg = parse_config(with_categories(category("c", rule), enabled=True, defaultCategory="c"))
    assert cfg.executors[0].error_categories.categories[0].rules[0].model_dump(exclude_none=True)


@pytest.mark.parametrize(
    "data",
    [
        with_categories(
            category("internal", {"onConditions": ["Evicted"], "subcategory": "eviction"})
        ),
        with_categories(
            category("infra", {"onConditions": ["Evicted"], "subcategory": "pod-missing"})
        ),
        with_categories(defaultCategory="internal", defaultSubcategory="unmatched"),
        with_categories(defaultCategory="unknown", defaultSubcategory="lease-expired"),
    ],
    ids=[
        "internal-own-subcategory",
        "reserved-name-in-other-category",
        "internal-default-own-subcategory",
        "reserved-name-as-other-default",
    ],
)
def test_only_internal_built_in_pairs_are_reserved(data):
    # Only category internal with a built-in subcategory is the control plane's own label.
    assert parse_config(data).executors[0].error_categories


# --- the shipped file -------------------------------------------------------------------------


def test_shipped_config_file_loads_and_validates():
    data = yaml.safe_load(CONFIG_FILE.read_text())
    cfg = parse_config(data)
    assert isinstance(cfg, ArmadaConfig)
    local = cfg.executor("local")
    assert local.pool == "default"
    assert local.backend == "fake"
    assert local.nodes[0].node_names() == ["node-0", "node-1", "node-2", "node-3"]
    assert local.nodes[0].allocatable == {
        "cpu": 8000,
        "memory": 32 * 1024**3 * 1000,
        "ephemeral-storage": 100 * 1024**3 * 1000,
    }


def test_shipped_config_file_shows_the_defaults():
    """The file shows every key with its default; its executor is an example (nodes and the
    shipped error categories), otherwise at its defaults too."""
    data = yaml.safe_load(CONFIG_FILE.read_text())
    cfg = parse_config(data)
    defaults = parse_config({})
    assert cfg.model_copy(update={"executors": []}) == defaults
    local = cfg.executor("local")
    assert local.model_copy(
        update={"nodes": [], "error_categories": ErrorCategories(), "tracked_node_labels": []}
    ) == Executor(id="local")
    assert [c.name for c in local.error_categories.categories] == [
        "oom",
        "gpu",
        "internal",
        "user-error",
    ]


# --- errors -----------------------------------------------------------------------------------


ERROR_CASES = [
    # (id, data, field, fragment of the message)
    (
        "retry-policy-enabled-without-limit",
        {"scheduling": {"retryPolicy": {"enabled": True}}},
        "scheduling.retryPolicy",
        "globalMaxRetries is required",
    ),
    (
        "retry-policy-enabled-null-limit",
        {"scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": None}}},
        "scheduling.retryPolicy",
        "globalMaxRetries is required",
    ),
    (
        "retry-policy-negative-limit",
        {"scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": -1}}},
        "scheduling.retryPolicy.globalMaxRetries",
        "greater than or equal to 0",
    ),
    (
        "retry-policy-enabled-as-string",
        {"scheduling": {"retryPolicy": {"enabled": "yes", "globalMaxRetries": 1}}},
        "scheduling.retryPolicy.enabled",
        "valid boolean",
    ),
    ("unknown-top-level-key", {"executorTimeut": "1s"}, "executorTimeut", "unknown key"),
    (
        "unknown-scheduling-key",
        {"scheduling": {"cyclePeriode": "1s"}},
        "scheduling.cyclePeriode",
        "unknown key",
    ),
    (
        "unknown-key-in-executor",
        {"executors": [executor(tickperiod="1s")]},
        "executors[0].tickperiod",
        "unknown key",
    ),
    (
        "unknown-key-in-node-group",
        {"executors": [executor(nodes=[node_group(zone="a")])]},
        "executors[0].nodes[0].zone",
        "unknown key",
    ),
    (
        "bad-duration",
        {"scheduling": {"cyclePeriod": "soon"}},
        "scheduling.cyclePeriod",
        "'soon' is not a duration",
    ),
    ("duration-without-unit", {"executorTimeout": "60"}, "executorTimeout", "is not a duration"),
    ("negative-duration", {"queueRefreshPeriod": -1}, "queueRefreshPeriod", "cannot be negative"),
    (
        "zero-cycle-period",
        {"scheduling": {"cyclePeriod": "0s"}},
        "scheduling.cyclePeriod",
        "greater than 0",
    ),
    ("zero-executor-timeout", {"executorTimeout": 0}, "executorTimeout", "greater than 0"),
    (
        "infinite-executor-timeout",
        {"executorTimeout": float("inf")},
        "executorTimeout",
        "is not a duration",
    ),
    (
        "bad-reset-interval",
        {"metrics": {"jobStateMetricsResetInterval": "12 hours"}},
        "metrics.jobStateMetricsResetInterval",
        "is not a duration",
    ),
    (
        "bad-tick-period",
        {"executors": [executor(tickPeriod="fast")]},
        "executors[0].tickPeriod",
        "is not a duration",
    ),
    (
        "bad-short-job-penalty",
        {"scheduling": {"pools": [{"name": "default", "shortJobPenaltyCutoff": "1y"}]}},
        "scheduling.pools[0].shortJobPenaltyCutoff",
        "is not a duration",
    ),
    (
        "max-retries-as-string",
        {"scheduling": {"maxRetries": "3"}},
        "scheduling.maxRetries",
        "valid integer",
    ),
    (
        "max-retries-negative",
        {"scheduling": {"maxRetries": -1}},
        "scheduling.maxRetries",
        "greater than or equal to 0",
    ),
    (
        "max-jobs-zero",
        {"scheduling": {"maximumJobsPerRound": 0}},
        "scheduling.maximumJobsPerRound",
        "greater than 0",
    ),
    ("no-pools", {"scheduling": {"pools": []}}, "scheduling.pools", "at least 1 item"),
    (
        "empty-pool-name",
        {"scheduling": {"pools": [{"name": ""}]}},
        "scheduling.pools[0].name",
        "at least 1 character",
    ),
    (
        "duplicate-pool-names",
        {
            "scheduling": {
                "pools": [{"name": "a"}, {"name": "a"}],
                "defaultPriorityClassName": "armada-default",
            }
        },
        "scheduling.pools",
        "pool names must be unique",
    ),
    (
        "default-priority-class-unknown",
        {"scheduling": {"defaultPriorityClassName": "urgent"}},
        "scheduling.defaultPriorityClassName",
        "'urgent' is not one of priorityClasses (armada-default, armada-preemptible)",
    ),
    (
        "default-priority-class-missing-from-replaced-classes",
        {"scheduling": {"priorityClasses": {"urgent": {"priority": 5}}}},
        "scheduling.defaultPriorityClassName",
        "'armada-default' is not one of priorityClasses (urgent)",
    ),
    (
        "priority-class-negative",
        {"scheduling": {"priorityClasses": {"armada-default": {"priority": -1}}}},
        "scheduling.priorityClasses.armada-default.priority",
        "greater than or equal to 0",
    ),
    (
        "priority-class-unknown-key",
        {"scheduling": {"priorityClasses": {"armada-default": {"priority": 1, "weight": 2}}}},
        "scheduling.priorityClasses.armada-default.weight",
        "unknown key",
    ),
    (
        "executor-pool-not-in-pools",
        {"executors": [executor("a"), executor("b", pool="gpu")]},
        "executors[1].pool",
        "executor 'b' names pool 'gpu', which is not in scheduling.pools (default)",
    ),
    (
        "duplicate-executor-ids",
        {"executors": [executor("a"), executor("b"), executor("a")]},
        "executors",
        "duplicate id(s) a",
    ),
    ("executor-id-upper-case", {"executors": [executor("Local")]}, "executors[0].id", "RFC 1123"),
    ("executor-id-underscore", {"executors": [executor("my_exec")]}, "executors[0].id", "RFC 1123"),
    ("executor-id-leading-dash", {"executors": [executor("-a")]}, "executors[0].id", "RFC 1123"),
    ("executor-id-trailing-dash", {"executors": [executor("a-")]}, "executors[0].id", "RFC 1123"),
    ("executor-id-empty", {"executors": [executor("")]}, "executors[0].id", "RFC 1123"),
    (
        "executor-id-64-chars",
        {"executors": [executor("a" * 64)]},
        "executors[0].id",
        "at most 63 characters",
    ),
    (
        "executor-id-missing",
        {"executors": [{"pool": "default"}]},
        "executors[0].id",
        "Field required",
    ),
    (
        "executor-unknown-backend",
        {"executors": [executor(backend="k8s")]},
        "executors[0].backend",
        "'fake'",
    ),
    (
        "node-group-bad-quantity",
        {"executors": [executor(nodes=[node_group(memory="lots")])]},
        "executors[0].nodes[0].allocatable.memory",
        "'lots' is not a quantity",
    ),
    (
        "node-group-missing-allocatable",
        {"executors": [executor(nodes=[{"name": "n"}])]},
        "executors[0].nodes[0].allocatable",
        "Field required",
    ),
    (
        "node-group-zero-count",
        {"executors": [executor(nodes=[node_group(count=0)])]},
        "executors[0].nodes[0].count",
        "greater than or equal to 1",
    ),
    (
        "node-group-bad-taint-effect",
        {"executors": [executor(nodes=[node_group(taints=[{"key": "k", "effect": "Never"}])])]},
        "executors[0].nodes[0].taints[0].effect",
        "'NoSchedule', 'PreferNoSchedule' or 'NoExecute'",
    ),
    (
        "category-rule-without-matcher",
        with_categories(category("c", {"hint": "nothing to match"})),
        "executors[0].errorCategories.categories[0].rules[0]",
        "exactly one of onExitCodes, onConditions, onTerminationMessage, onPodError (found none)",
    ),
    (
        "category-rule-with-two-matchers",
        with_categories(
            category("c", {"onConditions": ["OOMKilled"]}),
            category(
                "d",
                {"onConditions": ["Evicted"]},
                {"onExitCodes": {"operator": "In", "values": [1]}, "onPodError": {"pattern": "x"}},
            ),
        ),
        "executors[0].errorCategories.categories[1].rules[1]",
        "(found onExitCodes, onPodError)",
    ),
    (
        "category-bad-termination-regex",
        with_categories(category("c", {"onTerminationMessage": {"pattern": "(unclosed"}})),
        "executors[0].errorCategories.categories[0].rules[0].onTerminationMessage.pattern",
        "not a valid regular expression",
    ),
    (
        "category-bad-pod-error-regex",
        with_categories(category("c", {"onPodError": {"pattern": "*"}})),
        "executors[0].errorCategories.categories[0].rules[0].onPodError.pattern",
        "not a valid regular expression",
    ),
    (
        "category-empty-conditions",
        with_categories(category("c", {"onConditions": []})),
        "executors[0].errorCategories.categories[0].rules[0].onConditions",
        "at least 1 item",
    ),
    (
        "category-unknown-condition",
        with_categories(category("c", {"onConditions": ["Crashed"]})),
        "executors[0].errorCategories.categories[0].rules[0].onConditions[0]",
        "'OOMKilled', 'Evicted' or 'DeadlineExceeded'",
    ),
    (
        "category-exit-codes-bad-operator",
        with_categories(category("c", {"onExitCodes": {"operator": "Equals", "values": [1]}})),
        "executors[0].errorCategories.categories[0].rules[0].onExitCodes.operator",
        "'In' or 'NotIn'",
    ),
    (
        "category-exit-codes-empty",
        with_categories(category("c", {"onExitCodes": {"operator": "In", "values": []}})),
        "executors[0].errorCategories.categories[0].rules[0].onExitCodes.values",
        "at least 1 item",
    ),
    (
        "category-without-rules",
        with_categories({"name": "c", "rules": []}),
        "executors[0].errorCategories.categories[0].rules",
        "at least 1 item",
    ),
    (
        "category-bad-action",
        with_categories(category("c", action="Keep")),
        "executors[0].errorCategories.categories[0].action",
        "'Retain' or 'Delete'",
    ),
    (
        "duplicate-category-names",
        with_categories(category("b"), category("a"), category("b")),
        "executors[0].errorCategories.categories[2].name",
        "duplicate category name 'b' (also categories[0])",
    ),
    (
        "category-rule-empty-container-name",
        with_categories(
            category("c"), category("d", {"onConditions": ["OOMKilled"], "containerName": ""})
        ),
        "executors[0].errorCategories.categories[1].rules[0].containerName",
        "at least 1 character",
    ),
    (
        "internal-rule-with-reserved-subcategory",
        with_categories(
            category("oom"),
            category(
                "internal",
                {"onPodError": {"pattern": "lost"}, "subcategory": "node-failure"},
                {"onPodError": {"pattern": "gone"}, "subcategory": "pod-missing"},
            ),
        ),
        "executors[0].errorCategories.categories[1].rules[1].subcategory",
        "internal / pod-missing is reserved for failures the control plane labels itself",
    ),
    (
        "internal-default-with-reserved-subcategory",
        with_categories(defaultCategory="internal", defaultSubcategory="lease-expired"),
        "executors[0].errorCategories.defaultSubcategory",
        "internal / lease-expired is reserved",
    ),
    (
        "unknown-permission",
        {"auth": {"permissionGroupMapping": {"submit_any_jobs": ["a"], "launch_rockets": ["b"]}}},
        "auth.permissionGroupMapping",
        "unknown permission(s) launch_rockets; known: submit_any_jobs, cancel_any_jobs",
    ),
]


@pytest.mark.parametrize(
    ("data", "field", "fragment"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_error_names_the_key(data, field, fragment):
    errors = errors_of(data)
    assert [f for f, _ in errors] == [field], errors
    assert fragment in errors[0][1]


@pytest.mark.parametrize(
    "data",
    [[], "scheduling: {}", 42],
    ids=["list", "string", "number"],
)
def test_top_level_must_be_a_mapping(data):
    assert errors_of(data) == [("", "the configuration file must hold a mapping at the top level")]


def test_every_problem_is_reported_at_once():
    errors = errors_of(
        {
            "scheduling": {"cyclePeriod": "soon", "maxRetries": -1, "typo": 1},
            "executorTimeout": "x",
            "executors": [executor("Bad_Id"), executor("ok", tickPeriod=0)],
        }
    )
    assert sorted(f for f, _ in errors) == sorted(
        [
            "scheduling.cyclePeriod",
            "scheduling.maxRetries",
            "scheduling.typo",
            "executorTimeout",
            "executors[0].id",
            "executors[1].tickPeriod",
        ]
    )


def test_validation_failed_renders_key_and_message():
    with pytest.raises(ValidationFailed) as info:
        parse_config({"executors": [executor("a", pool="gpu")]})
    assert str(info.value).startswith("executors[0].pool: executor 'a' names pool 'gpu'")


def test_parse_config_does_not_modify_its_input():
    data = yaml.safe_load(CONFIG_FILE.read_text())
    before = copy.deepcopy(data)
    parse_config(data)
    assert data == before


def test_keys_are_accepted_only_as_documented():
    with pytest.raises(ValidationFailed) as exc:
        parse_config({"scheduling": {"cycle_period": "2s"}})
    assert [(e.field, e.message) for e in exc.value.errors] == [
        ("scheduling.cycle_period", "unknown key")
    ]
