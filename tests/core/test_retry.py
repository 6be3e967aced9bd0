"""armada.core.retry (decide, grow_memory) and armada.core.scheduling.static_fit.

The decide table names each case after the step of ``decide``'s docstring it exercises;
cases called ``swap-X-Y`` would fail if steps X and Y ran in the other order.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from armada.core.errors import ValidationFailed
from armada.core.policy import MemoryBump, Mutation, RetryPolicy, Rule, parse_policy
from armada.core.quantity import MEMORY, Resources, parse_quantity
from armada.core.retry import (
    LABELS,
    Decision,
    Failure,
    MemoryChange,
    RetrySettings,
    decide,
    grow_memory,
)
from armada.core.scheduling import NodeState, QueuedJob, Taint, Toleration, static_fit
from armada.core.submission import pod_requests

# --- policies ---------------------------------------------------------------------------------

AVOID = Mutation(avoid_same_node=True)
GROW = Mutation(memory=MemoryBump(factor=1.5))

ML = RetryPolicy(
    name="ml",
    retry_limit=3,
    default_action="Fail",
    version=4,
    rules=(
        Rule("Fail", "user-error"),  # 0
        Rule("Retry", "gpu", "transient"),  # 1
        Rule("Retry", "internal", "lease-expired"),  # 2
        Rule("Retry", "internal", "node-failure", mutate=AVOID),  # 3
        Rule("Retry", "oom", mutate=GROW),  # 4
        Rule("Fail", "gpu"),  # 5: every other gpu subcategory
    ),
)
LENIENT = RetryPolicy(
    name="lenient",
    retry_limit=2,
    default_action="Retry",
    rules=(
        Rule("Fail", "user-error"),
        Rule("Retry", "oom", mutate=GROW),
        Rule("Fail", "gpu", "xid-79"),
    ),
)
GENEROUS = RetryPolicy(name="generous", retry_limit=10, default_action="Retry")
ZERO = RetryPolicy(name="zero", retry_limit=0, default_action="Retry")
RETRY_FIRST = RetryPolicy(
    name="retry-first",
    retry_limit=3,
    default_action="Fail",
    rules=(Rule("Retry", "oom"), Rule("Fail", "oom")),
)
FAIL_FIRST = RetryPolicy(
    name="fail-first",
    retry_limit=3,
    default_action="Retry",
    rules=(Rule("Fail", "oom"), Rule("Retry", "oom")),
)
LOST = RetryPolicy(
    name="lost",
    retry_limit=3,
    default_action="Fail",
    rules=(
        Rule(
            "Retry",
            "internal",
            "lease-expired",
            mutate=Mutation(avoid_same_node=True, memory=MemoryBump(factor=2.0)),
        ),
    ),
)
FLEET = RetryPolicy(name="fleet-default", retry_limit=1, default_action="Retry", version=2)
POLICIES = {p.name: p for p in (ML, LENIENT, GENEROUS, ZERO, RETRY_FIRST, FAIL_FIRST, LOST, FLEET)}

ON = RetrySettings(enabled=True, global_max_retries=5)
ON_DEFAULT = RetrySettings(enabled=True, global_max_retries=5, default_policy_name="fleet-default")
OFF = RetrySettings(enabled=False, global_max_retries=5, default_policy_name="fleet-default")
KILL = RetrySettings(enabled=True, global_max_retries=0)


@dataclass(frozen=True)
class Case:
    id: str
    failure: Failure
    queue: tuple[str, ...] = ("ml",)
    settings: RetrySettings = ON
    expect: dict[str, Any] = field(default_factory=dict)
    reason: str = ""  # a fragment the reason must contain


def f(category: str = "gpu", subcategory: str = "transient", used: int = 0, **kw: Any) -> Failure:
    return Failure(category=category, subcategory=subcategory, retries_used=used, **kw)


def legacy(**extra: Any) -> dict[str, Any]:
    return {"retry": False, "label": "", "policy": "", "gang_skipped": False, **extra}


def retried(policy: str, rule: int | None, **extra: Any) -> dict[str, Any]:
    return {"retry": True, "label": "retry", "policy": policy, "rule_index": rule, **extra}


def failed(label: str, policy: str = "ml", **extra: Any) -> dict[str, Any]:
    return {"retry": False, "label": label, "policy": policy, **extra}


def gang(policy: str = "", **extra: Any) -> dict[str, Any]:
    return {"retry": False, "label": "", "gang_skipped": True, "policy": policy, **extra}


CASES = [
    # 1. flag off
    Case("1-flag-off-is-legacy", f(), settings=OFF, expect=legacy(), reason="disabled"),
    Case(
        "1-flag-off-ignores-default-policy",
        f("disk", ""),
        queue=(),
        settings=OFF,
        expect=legacy(global_cap=None),
    ),
    Case(
        "swap-1-2-flag-off-before-gang",
        f(gang_cardinality=3),
        settings=OFF,
        expect=legacy(),
        reason="disabled",
    ),
    # 2. gang
    Case(
        "2-gang-skipped-names-its-policy",
        f(gang_cardinality=2),
        expect=gang("ml", policy_version=4),
        reason="gang",
    ),
    Case("2-gang-of-one-is-a-plain-job", f(gang_cardinality=1), expect=retried("ml", 1)),
    Case("2-gang-without-policy", f(gang_cardinality=4), queue=(), expect=gang("")),
    Case(
        "2-gang-under-default-policy",
        f(gang_cardinality=2),
        queue=(),
        settings=ON_DEFAULT,
        expect=gang("fleet-default"),
    ),
    Case("2-gang-with-missing-policy", f(gang_cardinality=2), queue=("gone",), expect=gang("")),
    Case(
        "swap-2-3-gang-before-failfast",
        f(gang_cardinality=2, fail_fast=True),
        expect=gang("ml"),
        reason="gang",
    ),
    Case(
        "2-gang-before-global-cap",
        f(used=5, gang_cardinality=2),
        expect=gang("ml"),
    ),
    # 3. failFast
    Case(
        "3-failfast-not-retried-by-a-retry-rule",
        f(fail_fast=True),
        expect=legacy(policy=""),
        reason="failFast",
    ),
    Case(
        "swap-3-4-failfast-with-no-policy",
        f(fail_fast=True),
        queue=(),
        expect=legacy(),
        reason="failFast",
    ),
    Case(
        "swap-3-4-failfast-with-missing-policy",
        f(fail_fast=True),
        queue=("gone",),
        expect=legacy(),
        reason="failFast",
    ),
    Case(
        "3-failfast-before-global-cap",
        f(used=9, fail_fast=True),
        expect=legacy(),
        reason="failFast",
    ),
    # 4. policy lookup
    Case("4-no-policy-is-legacy", f(), queue=(), expect=legacy(), reason="No retry policy"),
    Case(
        "4-only-the-first-queue-policy",
        f("disk", ""),
        queue=("ml", "lenient"),
        expect=failed("fail_default", "ml"),
    ),
    Case(
        "4-only-the-first-queue-policy-reversed",
        f("disk", ""),
        queue=("lenient", "ml"),
        expect=retried("lenient", None),
    ),
    Case(
        "4-default-policy-when-queue-names-none",
        f("disk", ""),
        queue=(),
        settings=ON_DEFAULT,
        expect=retried("fleet-default", None, policy_version=2, retry_limit=1),
    ),
    Case(
        "4-queue-policy-beats-default-policy",
        f("disk", ""),
        settings=ON_DEFAULT,
        expect=failed("fail_default", "ml"),
    ),
    Case(
        "4-missing-policy-is-legacy",
        f(),
        queue=("gone",),
        expect=legacy(),
        reason="Retry policy gone is unavailable",
    ),
    Case(
        "4-missing-policy-does-not-fall-through-to-default",
        f("disk", ""),
        queue=("gone",),
        settings=ON_DEFAULT,
        expect=legacy(),
        reason="unavailable",
    ),
    Case(
        "4-missing-first-policy-does-not-fall-through-to-second",
        f("disk", ""),
        queue=("gone", "lenient"),
        expect=legacy(),
        reason="unavailable",
    ),
    Case(
        "swap-4-5-no-policy-before-global-cap",
        f(used=5),
        queue=(),
        expect=legacy(),
        reason="No retry policy",
    ),
    Case(
        "swap-4-5-missing-policy-before-global-cap",
        f(used=5),
        queue=("gone",),
        expect=legacy(),
        reason="unavailable",
    ),
    # 5. global cap
    Case(
        "5-global-cap-reached",
        f("disk", "", used=5),
        queue=("generous",),
        expect=failed(
            "fail_global_limit",
            "generous",
            rule_index=None,
            retries_used=5,
            global_used=5,
            global_cap=5,
            retry_limit=10,
        ),
        reason="Retry policy: global retry limit reached (5/5)",
    ),
    Case(
        "5-below-global-cap",
        f("disk", "", used=4),
        queue=("generous",),
        expect=retried("generous", None, global_used=4, global_cap=5),
    ),
    Case(
        "swap-5-6-global-cap-before-rule-fail",
        f("user-error", "", used=5),
        expect=failed("fail_global_limit", rule_index=None),
        reason="(5/5)",
    ),
    Case(
        "swap-5-6-global-cap-before-default-fail",
        f("disk", "", used=5),
        expect=failed("fail_global_limit"),
    ),
    Case(
        "5-global-cap-before-policy-limit",
        f(used=5),
        expect=failed("fail_global_limit", retry_limit=3),
    ),
    Case(
        "5-kill-switch-still-labels",
        f(),
        settings=KILL,
        expect=failed("fail_global_limit", global_cap=0, global_used=0),
        reason="global retry limit reached (0/0)",
    ),
    Case(
        "5-kill-switch-labels-a-fail-rule-failure-too",
        f("user-error", ""),
        settings=KILL,
        expect=failed("fail_global_limit"),
    ),
    # 6. matching
    Case(
        "6-first-match-wins-retry",
        f("oom", ""),
        queue=("retry-first",),
        expect=retried("retry-first", 0),
    ),
    Case(
        "6-first-match-wins-fail",
        f("oom", ""),
        queue=("fail-first",),
        expect=failed("fail_rule", "fail-first", rule_index=0),
    ),
    Case("6-subcategory-narrows", f("gpu", "transient"), expect=retried("ml", 1)),
    Case(
        "6-other-subcategory-falls-to-broader-rule",
        f("gpu", "xid-79"),
        expect=failed("fail_rule", rule_index=5),
    ),
    Case(
        "6-empty-subcategory-does-not-match-a-narrowed-rule",
        f("gpu", ""),
        expect=failed("fail_rule", rule_index=5),
    ),
    Case(
        "6-rule-without-subcategory-matches-any",
        f("user-error", "bad-args"),
        expect=failed("fail_rule", rule_index=0),
    ),
    Case(
        "6-category-is-case-sensitive",
        f("User-Error", ""),
        expect=failed("fail_default", rule_index=None),
    ),
    Case(
        "6-subcategory-is-case-sensitive",
        f("gpu", "Transient"),
        expect=failed("fail_rule", rule_index=5),
    ),
    Case(
        "6-uncategorised-goes-to-default",
        f("", ""),
        queue=("lenient",),
        expect=retried("lenient", None),
    ),
    # 7. Fail verdicts
    Case(
        "7-rule-fail",
        f("user-error", ""),
        expect=failed("fail_rule", rule_index=0, retry_limit=3, policy_version=4),
        reason="Retry policy ml: rule 1 (onCategory user-error) says Fail",
    ),
    Case(
        "7-rule-fail-names-the-subcategory",
        f("gpu", "xid-79"),
        queue=("lenient",),
        expect=failed("fail_rule", "lenient", rule_index=2),
        reason="Retry policy lenient: rule 3 (onCategory gpu, onSubcategory xid-79) says Fail",
    ),
    Case(
        "7-default-fail",
        f("disk", "full"),
        expect=failed("fail_default", rule_index=None),
        reason="Retry policy: no rule matched; defaultAction Fail",
    ),
    Case(
        "swap-7-8-rule-fail-before-retry-limit",
        f("user-error", "", used=3),
        expect=failed("fail_rule", rule_index=0),
    ),
    Case(
        "swap-7-8-default-fail-before-retry-limit",
        f("disk", "", used=3),
        expect=failed("fail_default"),
    ),
    # 8. retryLimit
    Case(
        "swap-8-9-retry-limit-before-retry",
        f(used=3),
        expect=failed("fail_policy_limit", rule_index=1, retries_used=3, retry_limit=3),
        reason="Retry policy: policy retry limit exceeded (3/3)",
    ),
    Case(
        "8-retry-limit-zero-allows-none",
        f("disk", ""),
        queue=("zero",),
        expect=failed("fail_policy_limit", "zero", rule_index=None, retry_limit=0),
        reason="(0/0)",
    ),
    Case(
        "8-default-retry-beyond-limit",
        f("disk", "", used=2),
        queue=("lenient",),
        expect=failed("fail_policy_limit", "lenient", rule_index=None),
    ),
    Case(
        "8-lease-expiry-consumes-the-budget",
        f("", "", used=3, lease_expired=True),
        expect=failed("fail_policy_limit", rule_index=2),
    ),
    # 9. Retry
    Case(
        "9-last-retry-within-limit",
        f(used=2),
        expect=retried("ml", 1, mutation=None, retries_used=2, retry_limit=3),
        reason="retry 3 of 3 (rule 2)",
    ),
    Case(
        "9-default-retry-within-limit",
        f("disk", "", used=1),
        queue=("lenient",),
        expect=retried("lenient", None, mutation=None),
        reason="retry 2 of 2 (defaultAction)",
    ),
    Case(
        "9-retry-carries-memory-mutation",
        f("oom", ""),
        expect=retried("ml", 4, mutation=GROW),
    ),
    Case(
        "9-retry-carries-avoid-mutation",
        f("internal", "node-failure"),
        expect=retried("ml", 3, mutation=AVOID),
    ),
    Case(
        "9-lease-expiry-retried-without-mutation",
        f("internal", "lease-expired", lease_expired=True),
        queue=("lost",),
        expect=retried("lost", 0, mutation=None),
        reason="lease expired",
    ),
    Case(
        "9-lease-expiry-matched-as-internal-lease-expired",
        f("", "", lease_expired=True),
        expect=retried("ml", 2, mutation=None),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_decide(case: Case):
    decision = decide(
        failure=case.failure,
        queue_policy_names=list(case.queue),
        policies=POLICIES,
        settings=case.settings,
    )
    got = {key: getattr(decision, key) for key in case.expect}
    assert got == case.expect, decision
    assert case.reason in decision.reason, decision.reason
    assert decision.label in ("", *LABELS)
    assert decision.retries_used == decision.global_used == case.failure.retries_used
    if decision.label:  # the engine decided: a policy, its budget and the cap are known
        assert decision.policy and decision.retry_limit is not None
        assert decision.global_cap == case.settings.global_max_retries
    if not decision.retry:
        assert decision.mutation is None


def test_decide_reads_a_policy_parsed_from_its_file():
    policy = parse_policy(
        {
            "name": "ml-training-retries",
            "retryLimit": 3,
            "defaultAction": "Fail",
            "rules": [{"action": "Fail", "onCategory": "user-error"}],
        }
    )
    decision = decide(
        failure=f("user-error", ""),
        queue_policy_names=["ml-training-retries"],
        policies={policy.name: policy},
        settings=ON,
    )
    assert decision == Decision(
        retry=False,
        label="fail_rule",
        policy="ml-training-retries",
        policy_version=1,
        rule_index=0,
        retries_used=0,
        retry_limit=3,
        global_used=0,
        global_cap=5,
        reason="Retry policy ml-training-retries: rule 1 (onCategory user-error) says Fail",
    )


# --- grow_memory ------------------------------------------------------------------------------


def container(name: str, memory: str, cpu: str = "1") -> dict[str, Any]:
    values = {"cpu": cpu, "memory": memory}
    return {
        "name": name,
        "image": "busybox:1.36",
        "resources": {"requests": dict(values), "limits": dict(values)},
    }


def pod(*memories: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [container(f"c{i}", m) for i, m in enumerate(memories)],
    }
    if init:
        spec["initContainers"] = [container(f"init{i}", m) for i, m in enumerate(init)]
    return spec


def memories(spec: dict[str, Any], key: str = "containers") -> list[str]:
    """Each container's memory; asserts that requests and limits are equal."""
    out = []
    for c in spec.get(key, []):
        requests, limits = c["resources"]["requests"], c["resources"]["limits"]
        assert requests[MEMORY] == limits[MEMORY], c
        out.append(requests[MEMORY])
    return out


FACTOR_15 = MemoryBump(factor=1.5)
STATIC_512 = MemoryBump(static=parse_quantity("512Mi"))


@pytest.mark.parametrize(
    ("spec", "bump", "after"),
    [
        (pod("4Gi"), FACTOR_15, ["6Gi"]),
        (pod("4Gi", "1Gi"), FACTOR_15, ["6Gi", "1536Mi"]),
        (pod("3Mi"), FACTOR_15, ["4608Ki"]),
        (pod("1001"), FACTOR_15, ["1502"]),
        (pod("1000"), MemoryBump(factor=1.1), ["1100"]),
        (pod("1M"), FACTOR_15, ["1500000"]),
        (pod("4Gi"), STATIC_512, ["4608Mi"]),
        (pod("4Gi", "1Gi"), STATIC_512, ["4608Mi", "1Gi"]),
        (pod("1000"), MemoryBump(static=parse_quantity("24")), ["1Ki"]),
    ],
    ids=[
        "factor",
        "factor-every-container",
        "factor-to-binary-unit",
        "factor-rounds-up-to-whole-bytes",
        "factor-is-exact-not-float",
        "factor-not-binary-written-as-bytes",
        "static",
        "static-first-container-only",
        "static-to-binary-unit",
    ],
)
def test_grow_memory(spec, bump, after):
    grown, change, warning = grow_memory(spec, bump, "")
    assert memories(grown) == after
    assert warning == ""
    assert change == MemoryChange(
        before=pod_requests(spec)[MEMORY], after=pod_requests(grown)[MEMORY], kind=bump.kind
    )
    assert change.after > change.before


@pytest.mark.parametrize(
    ("bump", "steps"),
    [(FACTOR_15, ["6Gi", "9Gi", "13824Mi"]), (STATIC_512, ["4608Mi", "5Gi", "5632Mi"])],
    ids=["factor-1.5", "static-512Mi"],
)
def test_bumps_compound_across_retries(bump, steps):
    spec, kind = pod("4Gi"), ""
    for expected in steps:
        spec, change, _ = grow_memory(spec, bump, kind)
        kind = change.kind
        assert memories(spec) == [expected]


def test_factor_grows_init_containers_too():
    grown, change, _ = grow_memory(pod("1Gi", init=("8Gi",)), MemoryBump(factor=2.0), "")
    assert memories(grown) == ["2Gi"]
    assert memories(grown, "initContainers") == ["16Gi"]
    assert (change.before, change.after) == (parse_quantity("8Gi"), parse_quantity("16Gi"))


@pytest.mark.parametrize(
    ("bump", "previous"),
    [(STATIC_512, "factor"), (FACTOR_15, "static")],
    ids=["static-after-factor", "factor-after-static"],
)
def test_mixed_bump_kinds_are_skipped_with_a_warning(bump, previous):
    spec = pod("4Gi")
    grown, change, warning = grow_memory(spec, bump, previous)
    assert grown == spec
    assert change is None
    assert "skipped" in warning and previous in warning and bump.kind in warning


@pytest.mark.parametrize(
    ("bump", "previous"),
    [(FACTOR_15, "factor"), (STATIC_512, "static")],
    ids=["factor-again", "static-again"],
)
def test_the_same_kind_keeps_growing(bump, previous):
    _, change, warning = grow_memory(pod("4Gi"), bump, previous)
    assert change is not None and change.after > change.before
    assert warning == ""


def test_grow_memory_keeps_cpu_and_other_fields():
    spec = pod("4Gi")
    spec["nodeSelector"] = {"zone": "a"}
    grown, _, _ = grow_memory(spec, FACTOR_15, "")
    assert grown["nodeSelector"] == {"zone": "a"}
    assert grown["containers"][0]["resources"]["limits"]["cpu"] == "1"


@pytest.mark.parametrize(
    ("bump", "previous"),
    [(FACTOR_15, ""), (STATIC_512, ""), (STATIC_512, "factor")],
    ids=["factor", "static", "skipped"],
)
def test_grow_memory_does_not_touch_its_input(bump, previous):
    spec = pod("4Gi", "1Gi", init=("2Gi",))
    before = copy.deepcopy(spec)
    grown, _, _ = grow_memory(spec, bump, previous)
    assert spec == before
    grown["containers"][0]["resources"]["requests"]["memory"] = "1"
    assert spec == before


# --- static_fit -------------------------------------------------------------------------------


def node(
    name: str = "n0",
    cpu: str = "8",
    memory: str = "32Gi",
    *,
    used: str | None = None,
    **fields: Any,
) -> NodeState:
    return NodeState(
        id=f"ex/{name}",
        executor="ex",
        name=name,
        allocatable=Resources.parse({"cpu": cpu, "memory": memory}),
        allocated=Resources.parse({"cpu": cpu, "memory": used}) if used else Resources(),
        **fields,
    )


def job(cpu: str = "1", memory: str = "4Gi", **fields: Any) -> QueuedJob:
    return QueuedJob(
        id="j", queue="q", requests=Resources.parse({"cpu": cpu, "memory": memory}), **fields
    )


GPU_TAINT = Taint(key="gpu", value="true")

STATIC_FIT_CASES = [
    ("fits-an-empty-node", job(), [node()], True),
    ("ignores-what-is-allocated", job(), [node(used="32Gi")], True),
    ("exactly-allocatable", job("8", "32Gi"), [node()], True),
    ("too-big-for-every-node", job(memory="33Gi"), [node(), node("n1")], False),
    ("fits-one-of-several", job(memory="60Gi"), [node(), node("n1", memory="64Gi")], True),
    ("no-nodes", job(), [], False),
    ("selector-mismatch", job(node_selector={"zone": "a"}), [node(labels={"zone": "b"})], False),
    ("selector-match", job(node_selector={"zone": "a"}), [node(labels={"zone": "a"})], True),
    ("untolerated-taint", job(), [node(taints=(GPU_TAINT,))], False),
    (
        "tolerated-taint",
        job(tolerations=(Toleration(key="gpu", value="true"),)),
        [node(taints=(GPU_TAINT,))],
        True,
    ),
    ("unschedulable-node", job(), [node(unschedulable=True)], False),
    (
        "avoided-node-is-the-only-big-one",
        job(memory="60Gi", avoid_nodes=frozenset({"big"})),
        [node(), node("big", memory="64Gi")],
        False,
    ),
    (
        "avoided-node-leaves-another",
        job(avoid_nodes=frozenset({"n0"})),
        [node(), node("n1")],
        True,
    ),
    (
        "matching-node-too-small-big-node-unmatched",
        job(memory="60Gi", node_selector={"zone": "a"}),
        [node(labels={"zone": "a"}), node("big", memory="64Gi")],
        False,
    ),
]


@pytest.mark.parametrize(
    ("queued", "node_list", "fits"),
    [case[1:] for case in STATIC_FIT_CASES],
    ids=[case[0] for case in STATIC_FIT_CASES],
)
def test_static_fit(queued, node_list, fits):
    assert static_fit(queued, node_list) is fits


@pytest.mark.parametrize(
    ("retries", "fits"),
    [(1, True), (2, True), (3, False)],
    ids=["6Gi", "9Gi", "13.5Gi"],
)
def test_a_grown_job_stops_fitting(retries, fits):
    spec = pod("4Gi")
    for _ in range(retries):
        spec, _, _ = grow_memory(spec, FACTOR_15, "factor")
    grown = QueuedJob(id="j", queue="q", requests=pod_requests(spec))
    assert static_fit(grown, [node(memory="12Gi")]) is fits


def test_grow_memory_refuses_a_spec_submission_would_refuse():
    spec = pod("4Gi")
    del spec["containers"][0]["resources"]["limits"]["memory"]
    with pytest.raises(ValidationFailed):
        grow_memory(spec, FACTOR_15, "")
