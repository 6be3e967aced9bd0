"""Retry policies through real processes: web, a Celery scheduler worker with beat and
Celery executor workers on the fake backend. One system per configuration; within a system
the scenarios run side by side, each job asking the fake cluster for its own failure."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.e2e]
FAKE = "fake.armadaproject.io/"

CATEGORIES = {
    "enabled": True,
    "categories": [
        {"name": "oom", "action": "Delete", "rules": [{"onConditions": ["OOMKilled"]}]},
        {
            "name": "internal",
            "action": "Delete",
            "rules": [{"onPodError": {"pattern": "was lost"}, "subcategory": "node-failure"}],
        },
        {
            "name": "user-error",
            "action": "Retain",
            "rules": [{"onExitCodes": {"operator": "In", "values": [1]}}],
        },
    ],
}
POLICY = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "training",
    "retryLimit": 2,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {"action": "Retry", "onCategory": "internal", "onSubcategory": "lease-expired"},
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
    ],
}


def executor(executor_id: str, nodes: int, labels: dict | None = None) -> dict:
    return {
        "id": executor_id,
        "tickPeriod": "300ms",
        "trackedNodeLabels": ["kubernetes.io/hostname", "zone"],
        "nodes": [
            {
                "name": f"{executor_id}-node",
                "count": nodes,
                "labels": labels or {},
                "allocatable": {"cpu": "8", "memory": "32Gi"},
            }
        ],
        "errorCategories": CATEGORIES,
    }


def config(*, enabled: bool = True, cap: int = 5, executors: list[dict] | None = None) -> dict:
    retry = {"enabled": True, "globalMaxRetries": cap} if enabled else {"enabled": False}
    return {
        "scheduling": {"cyclePeriod": "300ms", "retryPolicy": retry},
        "executorTimeout": "3s",
        "executors": executors or [executor("east", 2)],
    }


def job(
    annotations: dict | None = None,
    memory: str = "1Gi",
    node_selector: dict | None = None,
    extra: dict | None = None,
) -> dict:
    pod = {
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {
                    "requests": {"cpu": "1", "memory": memory},
                    "limits": {"cpu": "1", "memory": memory},
                },
            }
        ]
    }
    if node_selector:
        pod["nodeSelector"] = node_selector
    ann = {FAKE + k: v for k, v in (annotations or {}).items()} | (extra or {})
    return {"annotations": ann, "podSpec": pod}


def set_up(system, *, policy: bool = True) -> None:
    if policy:
        assert system.post("/api/v1/retry-policies", json=POLICY).status_code == 201
    body = {"name": "demo", "retryPolicies": ["training"] if policy else []}
    assert system.post("/api/v1/queues", json=body).status_code == 201


def submit(system, job_set: str, jobs: list[dict]) -> list[str]:
    response = system.post(
        "/api/v1/jobs", json={"queue": "demo", "jobSetId": job_set, "jobs": jobs}
    )
    assert response.status_code == 201, response.text
    return response.json()["jobIds"]


def job_state(system, job_id: str) -> dict:
    return system.get(f"/api/v1/jobs/{job_id}").json()


def finished(system, job_id: str) -> dict | None:
    body = job_state(system, job_id)
    return body if body["state"] in ("succeeded", "failed") else None


def failed_events(system, job_set: str, job_id: str) -> list[dict]:
    text = system.get(f"/api/v1/job-sets/demo/{job_set}/events").text
    return [
        e
        for e in map(json.loads, filter(None, text.splitlines()))
        if e["jobId"] == job_id and e["type"] == "failed"
    ]


def metric(system, line_prefix: str) -> float:
    text = system.get("/metrics").text
    values = [
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_prefix)
    ]
    return sum(values)


def test_policy_scenarios_side_by_side(launch):
    system = launch(config(executors=[executor("east", 2), executor("west", 1, {"zone": "west"})]))
    set_up(system)
    oom, node_failure, user_error, fail_fast, gang_a, gang_b = submit(
        system,
        "scenarios",
        [
            job({"condition": "OOMKilled", "duration": "1s"}, memory="1Gi"),
            job({"nodeLost": "true", "duration": "1s"}),
            job({"exitCode": "1", "duration": "1s"}),
            job(
                {"condition": "OOMKilled", "duration": "1s"},
                extra={"armadaproject.io/failFast": "true"},
            ),
            *[
                job(
                    {"condition": "OOMKilled", "duration": "1s"},
                    extra={"armadaproject.io/gangId": "g", "armadaproject.io/gangCardinality": "2"},
                )
                for _ in range(2)
            ],
        ],
    )
    results = {
        j: system.wait_for(f"job {j} to end", lambda j=j: finished(system, j), timeout=90)
        for j in (oom, node_failure, user_error, fail_fast, gang_a, gang_b)
    }

    # oom: retried twice with memory x1.5, then the policy's limit; the third pod was larger.
    runs = results[oom]["runs"]
    assert [r["decision"]["decision"] for r in runs] == ["retry", "retry", "fail_policy_limit"]
    memory = [r["decision"]["mutation"].get("memory", {}).get("after") for r in runs[:2]]
    assert memory == ["1.5Gi", "2.25Gi"]
    assert results[oom]["podSpec"]["containers"][0]["resources"]["limits"]["memory"] != "1Gi"
    assert results[oom]["terminalReason"] == "Retry policy: policy retry limit exceeded (2/2)"
    assert [e["retryable"] for e in failed_events(system, "scenarios", oom)] == [True, True, False]

    # node failure: retried on another node, and then it fails on that one too (the fake
    # cluster loses every node it is given) until no node is left to try.
    first, second = results[node_failure]["runs"][:2]
    assert first["failureSubcategory"] == "node-failure"
    assert second["node"] != first["node"]

    # user error: failed at once by rule.
    assert [r["decision"]["decision"] for r in results[user_error]["runs"]] == ["fail_rule"]
    assert results[user_error]["failureCategory"] == "user-error"

    # fail-fast and gang members: never retried; gang skips are counted per policy.
    for job_id in (fail_fast, gang_a, gang_b):
        assert len(results[job_id]["runs"]) == 1
    assert [r["decision"]["decision"] for r in results[gang_a]["runs"]] == ["gang_skipped"]
    assert (
        metric(system, 'armada_scheduler_retry_policy_gang_skipped_total{policy="training"}') == 2
    )
    assert (
        metric(
            system,
            'armada_scheduler_retry_policy_decisions_total{decision="retry",policy="training"',
        )
        >= 3
    )

    # Lease expiry: a job pinned to the west executor, which then stops.
    [pinned] = submit(system, "expiry", [job({"duration": "1h"}, node_selector={"zone": "west"})])
    system.wait_for(
        "the pinned job to run", lambda: job_state(system, pinned)["state"] == "running"
    )
    system.stop("executor-west")
    expired = system.wait_for(
        "the lease to expire",
        lambda: (
            (runs := job_state(system, pinned)["runs"])
            and runs[0]["state"] == "lease_expired"
            and runs[0]["decision"]
            and runs[0]
        ),
        timeout=30,
    )
    assert (expired["failureCategory"], expired["failureSubcategory"]) == (
        "internal",
        "lease-expired",
    )
    assert expired["decision"]["decision"] == "retry" and expired["decision"]["mutation"] == {}
    assert (
        job_state(system, pinned)["state"] == "queued"
    )  # waits for a west node; never fails from waiting


def test_the_kill_switch_decides_and_grants_nothing(launch):
    system = launch(config(cap=0))
    set_up(system)
    [oom] = submit(system, "kill", [job({"condition": "OOMKilled"})])
    result = system.wait_for("the job to end", lambda: finished(system, oom))
    assert [r["decision"]["decision"] for r in result["runs"]] == ["fail_global_limit"]
    assert result["failureCategory"] == "oom"
    assert failed_events(system, "kill", oom)[-1]["failureCategory"] == "oom"


def test_flag_off_is_legacy_and_disabling_it_mid_flight_loses_nothing(launch):
    system = launch(config(enabled=True))
    set_up(system)
    [slow] = submit(system, "mid", [job({"condition": "OOMKilled", "duration": "4s"})])
    system.wait_for("the first retry", lambda: len(failed_events(system, "mid", slow)) == 1)
    assert failed_events(system, "mid", slow)[0]["retryable"] is True
    # Turn the engine off: restart the scheduler with the flag off.
    system.stop("scheduler")
    system.start_scheduler(system.write_config(config(enabled=False), "flag-off.yaml"))
    result = system.wait_for("the job to end", lambda: finished(system, slow), timeout=60)
    decisions = [r["decision"]["decision"] for r in result["runs"]]
    assert decisions == ["retry", "not_retried"]
    assert result["state"] == "failed" and result["failureCategory"] == "oom"
    assert [e["retryable"] for e in failed_events(system, "mid", slow)] == [True, False]

    # With the flag off from the start, a job fails exactly as without the engine.
    [legacy] = submit(system, "legacy", [job({"condition": "OOMKilled"})])
    result = system.wait_for("the legacy job to end", lambda: finished(system, legacy))
    assert [r["decision"]["decision"] for r in result["runs"]] == ["not_retried"]
    assert result["terminalReason"] == "OOMKilled"
