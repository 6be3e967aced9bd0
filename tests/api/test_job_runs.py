"""A job's runs in the API: what each attempt asked for and its decision trail, in the units
people write (``256Mi``, ``500m``) and with rules numbered from 1; the stored trail keeps
its milli-units and 0-based ``ruleIndex``."""

from __future__ import annotations

import pytest

from armada.api.serializers.trails import trail_data
from armada.core.quantity import parse_quantity
from armada.models import Run
from armada.services.policies import policy_create
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from tests.conftest import at
from tests.lookout.builders import make_job, make_run
from tests.services.test_decisions import POLICY, configure, drive, runs, submit

pytestmark = pytest.mark.django_db

MI = 2**20 * 1000  # milli-units of one MiB


@pytest.fixture
def with_policy(queue, admin_user):
    """Policy ``training`` (its fourth rule retries oom with memory x1.5) on queue demo, read
    by a fresh policy cache."""
    policy_cache.__init__()
    policy_create(actor=admin_user, data=POLICY, now=at(0))
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["training"]}, now=at(0))
    yield
    policy_cache.__init__()


def test_a_decided_oom_run_reads_with_quantities_and_the_rule_from_one(
    settings, with_policy, owner, api
):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"condition": "OOMKilled"}, memory="256Mi")
    drive(agent, range(1, 12))
    stored = runs(job_id)[0].decision
    assert stored["ruleIndex"] == 3  # the fourth rule of the policy, kept 0-based
    assert stored["mutation"]["memory"]["before"] == 256 * MI

    body = api.get(f"/api/v1/jobs/{job_id}").json()
    first, second, third = body["runs"]
    assert first["decision"]["rule"] == 4
    assert "ruleIndex" not in first["decision"]
    assert first["decision"]["mutation"]["memory"] == {
        "kind": "factor",
        "before": "256Mi",
        "after": "384Mi",
    }
    assert second["decision"]["mutation"]["memory"] == {
        "kind": "factor",
        "before": "384Mi",
        "after": "576Mi",
    }
    # Each attempt's own requests: the memory the pod of that attempt asked for.
    assert [r["requests"] for r in body["runs"]] == [
        {"cpu": "1", "memory": "256Mi"},
        {"cpu": "1", "memory": "384Mi"},
        {"cpu": "1", "memory": "576Mi"},
    ]
    assert third["decision"]["decision"] == "fail_policy_limit"
    assert body["requests"] == {"cpu": "1", "memory": "576Mi"}
    # Round-trippable: the strings parse back to exactly what was stored.
    for run, data in zip(runs(job_id)[:2], body["runs"][:2], strict=True):
        memory = data["decision"]["mutation"]["memory"]
        assert parse_quantity(memory["after"]) == run.decision["mutation"]["memory"]["after"]


def test_trail_shapes(api, queue):
    make_job("01t", state="failed", requests={"cpu": 500, "memory": 1536 * MI})
    make_run(
        "r-rule",
        "01t",
        state="failed",
        requests={"cpu": 500, "memory": 1536 * MI, "nvidia.com/gpu": 2000},
        decision={
            "decision": "retry",
            "retry": True,
            "policy": "ml",
            "policyVersion": 2,
            "ruleIndex": 4,
            "retriesUsed": 0,
            "retryLimit": 3,
            "globalUsed": 0,
            "globalCap": 10,
            "gangSkipped": False,
            "mutation": {
                "memory": {"kind": "static", "before": 1536 * MI, "after": 2048 * MI},
                "avoidNodes": ["node-1"],
            },
            "reason": "retry 1 of 3 (rule 5)",
        },
    )
    make_run(
        "r-default",
        "01t",
        state="failed",
        decision={"decision": "fail_default", "policy": "ml", "ruleIndex": None, "reason": "x"},
    )
    make_run("r-ended", "01t", state="failed", decision={"decision": "not_retried", "reason": "y"})
    make_run("r-open", "01t")
    body = api.get("/api/v1/jobs/01t").json()
    by_id = {r["id"]: r for r in body["runs"]}
    rule = by_id["r-rule"]["decision"]
    assert rule["rule"] == 5 and rule["reason"].endswith("(rule 5)")
    assert rule["mutation"] == {
        "memory": {"kind": "static", "before": "1.5Gi", "after": "2Gi"},
        "avoidNodes": ["node-1"],
    }
    assert by_id["r-rule"]["requests"] == {"cpu": "500m", "memory": "1.5Gi", "nvidia.com/gpu": "2"}
    assert body["requests"] == {"cpu": "500m", "memory": "1.5Gi"}
    assert by_id["r-default"]["decision"] == {
        "decision": "fail_default",
        "policy": "ml",
        "rule": None,
        "reason": "x",
    }
    assert by_id["r-ended"]["decision"] == {"decision": "not_retried", "reason": "y"}
    assert by_id["r-open"]["decision"] == {}
    # The stored trail is untouched by reading it.
    assert Run.objects.get(id="r-rule").decision["ruleIndex"] == 4


def test_trail_data_passes_strings_and_unknown_keys_through():
    stored = {"ruleIndex": 0, "mutation": {"memory": {"before": "1Gi", "after": 2**31 * 1000}}}
    assert trail_data(stored) == {
        "rule": 1,
        "mutation": {"memory": {"before": "1Gi", "after": "2Gi"}},
    }
    assert trail_data({"extra": 1}) == {"extra": 1}
    assert trail_data(None) == {}


def test_the_schema_documents_the_trail(api):
    schema = api.get("/api/v1/schema?format=json").json()
    components = schema["components"]["schemas"]
    trail = components["DecisionTrail"]["properties"]
    assert "rule" in trail and "ruleIndex" not in trail
    assert trail["rule"]["minimum"] == 1
    memory = components["MemoryChange"]["properties"]
    assert memory["before"]["type"] == "string"
    run = components["Run"]["properties"]
    assert run["decision"]["allOf"] == [{"$ref": "#/components/schemas/DecisionTrail"}]
    assert run["requests"]["additionalProperties"]["type"] == "string"
