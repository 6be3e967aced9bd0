"""The world of the retry-decision tests (test_decisions, test_decisions_policies): an
executor on the fake backend with the spec's categories, a retry policy, and helpers to submit,
drive scheduler cycles and executor ticks, and read what was decided. The fixtures
(``fresh_policy_cache``, ``with_policy``) are in tests/services/conftest.py."""

from __future__ import annotations

from armada.core.config import parse_config
from armada.models import Event, MetricCounter, Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, container, job_file
from tests.executor_api import api_agent

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
            "name": "flaky",
            "action": "Retain",
            "rules": [{"onExitCodes": {"operator": "In", "values": [3]}}],
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
        {"action": "Retry", "onCategory": "flaky"},
    ],
}


def configure(settings, *, enabled=True, cap=5, nodes=2, default_policy=""):
    config = {
        "scheduling": {
            "retryPolicy": {
                "enabled": enabled,
                "globalMaxRetries": cap,
                "defaultPolicyName": default_policy,
            }
        },
        "executors": [
            {
                "id": "test",
                "trackedNodeLabels": ["kubernetes.io/hostname"],
                "nodes": [
                    {"name": "n", "count": nodes, "allocatable": {"cpu": "8", "memory": "32Gi"}}
                ],
                "errorCategories": CATEGORIES,
            }
        ],
    }
    if enabled is False:
        config["scheduling"]["retryPolicy"] = {"enabled": False}
    settings.ARMADA = parse_config(config)
    return api_agent(settings.ARMADA.executors[0])


def submit(owner, annotations=None, memory="1Gi", extra_annotations=None) -> str:
    ann = {FAKE + k: v for k, v in (annotations or {}).items()} | (extra_annotations or {})
    spec = {"annotations": ann, "podSpec": {"containers": [container("1", memory)]}}
    return job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(0))[0]


def drive(agent, seconds: range) -> None:
    """A scheduler cycle and an executor tick each second."""
    for t in seconds:
        scheduler_cycle(now=at(t))
        agent.tick(at(t + 0.5))


def runs(job_id: str) -> list[Run]:
    return list(Run.objects.filter(job_id=job_id).order_by("leased_at", "id"))


def failed_events(job_id: str) -> list[dict]:
    return [e.payload for e in Event.objects.filter(job_id=job_id, type="failed").order_by("id")]


def decisions() -> dict[tuple, int]:
    return {
        (c.labels["queue"], c.labels["policy"], c.labels["decision"]): c.value
        for c in MetricCounter.objects.filter(name="armada_scheduler_retry_policy_decisions_total")
    }
