"""The executor process's own metrics (``executor.metrics``), on an agent with the fake
backend: failures categorised (timed by their result), pods deleted within their grace
period, one that outlives its deadline, and one force deleted past ``podDeletionTimeout``;
read from the executor's registry and over HTTP from the address it serves. Time is passed
in; the pods' deletions take the time their jobs ask (``deletionDuration``)."""

from __future__ import annotations

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from armada.core.config import parse_config
from armada.core.errors import ValidationFailed
from armada.executor.metrics import REGISTRY, serve
from armada.models import Run
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import ApiAgent, api_agent
from tests.metrics.armada_metric_names import BY_NAME

pytestmark = pytest.mark.django_db

FAKE = "fake.armadaproject.io/"
POOL = {"pool": "default"}
OOM = {"failure_category": "oom", "failure_subcategory": ""}
RULES = "armada_executor_job_failure_rule_evaluation_duration_seconds"
OVERDUE = "armada_executor_pod_termination_overdue_seconds"
WITHIN = "armada_executor_pod_terminated_within_grace_period_total"
FORCED = "armada_executor_pod_force_deleted_total"
CATEGORIES = {
    "enabled": True,
    "defaultCategory": "unknown",
    "categories": [
        {"name": "oom", "action": "Delete", "rules": [{"onConditions": ["OOMKilled"]}]},
        {"name": "user-error", "rules": [{"onExitCodes": {"operator": "In", "values": [1]}}]},
    ],
}


def agent() -> ApiAgent:
    data = {
        "id": "test",
        "podDeletionTimeout": "30s",
        "nodes": [{"name": "n", "count": 2, "allocatable": {"cpu": "8", "memory": "32Gi"}}],
        "errorCategories": CATEGORIES,
    }
    return api_agent(parse_config({"executors": [data]}).executors[0])


def submit(owner, **annotations: str) -> str:
    ann = {FAKE + k: v for k, v in annotations.items()}
    return job_submit(actor=owner, data=job_file(jobs=[job(annotations=ann)]), now=at(0))[0]


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def values() -> dict[str, float]:
    """The values the scenario changes (the registry is the process's: compare deltas)."""
    return {
        "rules": sample(f"{RULES}_count", OOM),
        "default": sample(f"{RULES}_count", {**OOM, "failure_category": "unknown"}),
        "within": sample(WITHIN, POOL),
        "overdue": sample(f"{OVERDUE}_count", POOL),
        "overdue_sum": sample(f"{OVERDUE}_sum", POOL),
        "le10": sample(f"{OVERDUE}_bucket", {**POOL, "le": "10.0"}),
        "le15": sample(f"{OVERDUE}_bucket", {**POOL, "le": "15.0"}),
        "le30": sample(f"{OVERDUE}_bucket", {**POOL, "le": "30.0"}),
        "le45": sample(f"{OVERDUE}_bucket", {**POOL, "le": "45.0"}),
        "forced": sample(FORCED, POOL),
    }


def run_scenario(owner) -> tuple[dict[str, float], dict[str, str]]:
    """Three pods deleted three ways, and the change it made to the metrics."""
    before = values()
    a = agent()
    a.tick(at(0))
    # OOM-killed (Delete): deleted without grace when it fails at 3; gone 15 s later.
    late = submit(owner, condition="OOMKilled", duration="1s", deletionDuration="15s")
    # OOM-killed, and its pod will not go: force deleted 30 s past its deadline.
    stuck = submit(owner, condition="OOMKilled", duration="1s", deletionDuration="10m")
    # Runs for an hour; cancelled at 5, with 30 s of grace, and gone 2 s later.
    cancelled = submit(owner, duration="1h", deletionDuration="2s")
    scheduler_cycle(now=at(1))
    for t in range(2, 5):
        a.tick(at(t))
    jobs_cancel(
        actor=owner, queue="demo", job_set="set-1", job_ids=[cancelled], reason="", now=at(5)
    )
    for t in range(5, 40):
        a.tick(at(t))
    scheduler_cycle(now=at(40))  # the failures' decisions
    runs = {
        name: Run.objects.filter(job_id=job_id).latest("leased_at")
        for name, job_id in (("late", late), ("stuck", stuck), ("cancelled", cancelled))
    }
    states = {
        name: (r.state, r.failure_category, r.failure_subcategory) for name, r in runs.items()
    }
    after = values()
    return {k: after[k] - before[k] for k in after}, states


def test_deletions_and_categorisations_are_counted_in_the_executor_registry(queue, owner):
    delta, states = run_scenario(owner)
    assert states == {
        "late": ("failed", "oom", ""),
        "stuck": ("failed", "internal", "stuck-terminating"),
        "cancelled": ("cancelled", "", ""),
    }
    assert delta["rules"] == 2  # both OOM failures, by their category
    assert delta["default"] == 0
    assert delta["within"] == 1  # the cancelled pod went 2 s into its 30 s of grace
    assert delta["forced"] == 1
    # Past their deadlines (their failure, at 3): the late pod last seen at 17 (14 s), the
    # stuck one at 34, when it was force deleted (31 s).
    assert delta["overdue"] == 2
    assert delta["overdue_sum"] == pytest.approx(14 + 31)
    assert (delta["le10"], delta["le15"], delta["le30"], delta["le45"]) == (0, 1, 1, 2)


def test_the_executor_serves_its_registry_on_its_metrics_address(queue, owner):
    run_scenario(owner)
    server = serve("127.0.0.1:0")
    try:
        answer = requests.get(f"http://127.0.0.1:{server.server_port}/metrics", timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    assert answer.status_code == 200
    text = answer.text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in (RULES, OVERDUE, WITHIN, FORCED):
        m = BY_NAME[name]
        family = families[name.removesuffix("_total")]
        assert family.type == m.type, name
        if m.type == "counter":
            assert f"\n# TYPE {name} counter\n" in text, name
        assert family.samples, name
        for s in family.samples:
            assert {k for k in s.labels if k != "le"} == set(m.labels), (name, s.labels)
        if m.type == "histogram":
            bounds = {float(s.labels["le"]) for s in family.samples if s.name.endswith("_bucket")}
            assert bounds == {float(b) for b in m.buckets} | {float("inf")}, name
    assert families[FORCED.removesuffix("_total")].samples[0].value >= 1
    # Nothing of the control plane's own registry is served there.
    assert "armada_scheduler_" not in text and "django_" not in text


def test_the_metrics_address_is_host_and_port_or_empty():
    def executor(**keys):
        return parse_config({"executors": [{"id": "x", **keys}]}).executors[0]

    assert executor().metrics_address == ""
    assert executor(metricsAddress="127.0.0.1:9101").metrics_address == "127.0.0.1:9101"
    assert executor(metricsAddress=":9101").metrics_address == ":9101"
    with pytest.raises(ValidationFailed) as raised:
        executor(metricsAddress="127.0.0.1")
    assert "executors[0].metricsAddress" in str(raised.value)
