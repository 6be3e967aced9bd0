"""The executor agent on the fake backend: categorisation, pod deletion before reporting,
retained pods, name collisions and the legacy attempt limit, lost pods, logs, counters.
Time is passed in; every tick commits through the real services."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from armada.core.config import parse_config
from armada.executor.backends.base import PodRequest
from armada.models import Event, Job, MetricCounter, Run, RunLog
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import ApiAgent, api_agent

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
FAKE = "fake.armadaproject.io/"


def shipped_categories() -> dict:
    config = yaml.safe_load((ROOT / "config" / "armada.yaml").read_text())
    return config["executors"][0]["errorCategories"]


def agent(**executor) -> ApiAgent:
    data = {
        "id": "test",
        "nodes": [{"name": "n", "count": 2, "allocatable": {"cpu": "8", "memory": "32Gi"}}],
        "errorCategories": shipped_categories(),
        **executor,
    }
    return api_agent(parse_config({"executors": [data]}).executors[0])


def submit(owner, **annotations) -> str:
    ann = {FAKE + k: v for k, v in annotations.items()}
    return job_submit(actor=owner, data=job_file(jobs=[job(annotations=ann)]), now=at(0))[0]


def run_of(job_id: str) -> Run:
    return Run.objects.filter(job_id=job_id).latest("leased_at")


def types_for(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


def pod_names(a: ApiAgent, t: float) -> set[str]:
    return {s.name for s in a.backend.poll(at(t))}


@pytest.mark.parametrize(
    ("annotations", "category", "subcategory", "pod_kept"),
    [
        ({"condition": "OOMKilled"}, "oom", "", False),
        ({"exitCode": "1"}, "user-error", "", True),
        ({"exitCode": "3", "terminationMessage": "Invalid argument: --lr"}, "user-error", "", True),
        ({"exitCode": "3"}, "unknown", "", True),
        (
            {"exitCode": "139", "terminationMessage": "CUDA error: an illegal memory access"},
            "gpu",
            "transient",
            False,
        ),
        ({"condition": "Evicted"}, "internal", "eviction", False),
        ({"nodeLost": "true"}, "internal", "node-failure", False),
        (
            {"podError": "ErrImagePull: image registry.local/x not found"},
            "user-error",
            "image",
            True,
        ),
    ],
    ids=[
        "oom",
        "exit-1",
        "termination-message",
        "default-category",
        "gpu-transient",
        "evicted",
        "node-lost",
        "image-pull",
    ],
)
def test_every_failure_is_categorised_and_the_pod_handled_as_its_category_says(
    queue, owner, annotations, category, subcategory, pod_kept
):
    a = agent()
    a.tick(at(0))
    job_id = submit(owner, duration="1s", **annotations)
    scheduler_cycle(now=at(1))
    a.tick(at(2))
    a.tick(at(5))
    scheduler_cycle(now=at(6))  # the scheduler decides (legacy here) and emits `failed`
    run = run_of(job_id)
    assert (run.state, run.failure_category, run.failure_subcategory) == (
        "failed",
        category,
        subcategory,
    )
    failed = Event.objects.get(job_id=job_id, type="failed")
    assert failed.payload["failureCategory"] == category
    assert failed.payload["failureSubcategory"] == subcategory
    assert (f"armada-{job_id}-0" in pod_names(a, 5)) is pod_kept
    assert Job.objects.get(id=job_id).failure_category == category


def test_the_hint_is_kept_beside_the_error(queue, owner):
    a = agent()
    a.tick(at(0))
    job_id = submit(owner, condition="OOMKilled")
    scheduler_cycle(now=at(1))
    a.tick(at(2))
    a.tick(at(5))
    scheduler_cycle(now=at(6))
    hint = "The job used more memory than its limit; ask for more memory."
    assert run_of(job_id).hint == hint
    assert Event.objects.get(job_id=job_id, type="failed").payload["hint"] == hint


def test_a_deleted_pod_is_reported_only_once_it_is_gone(queue, owner):
    a = agent()
    a.tick(at(0))
    job_id = submit(owner, condition="OOMKilled", duration="1s", deletionDuration="5s")
    scheduler_cycle(now=at(1))
    a.tick(at(2))  # pending, running
    a.tick(at(4))  # ended at 3: deletion asked, pod still terminating
    assert run_of(job_id).state == "running"
    assert f"armada-{job_id}-0" in pod_names(a, 4)
    a.tick(at(8))  # still there until 9
    assert run_of(job_id).state == "running"
    a.tick(at(10))
    run = run_of(job_id)
    assert (run.state, run.failure_category) == ("failed", "oom")
    assert run.finished_at == at(3)  # the time the pod failed, not the time it went
    assert f"armada-{job_id}-0" not in pod_names(a, 10)


def test_a_pod_that_will_not_go_is_reported_stuck_terminating_and_not_retried(queue, owner):
    a = agent(podDeletionTimeout="30s")
    a.tick(at(0))
    job_id = submit(owner, condition="OOMKilled", duration="1s", deletionDuration="10m")
    scheduler_cycle(now=at(1))
    a.tick(at(2))
    a.tick(at(4))
    a.tick(at(30))
    assert run_of(job_id).state == "running"
    a.tick(at(35))
    scheduler_cycle(now=at(36))
    run = run_of(job_id)
    assert (run.state, run.failure_category, run.failure_subcategory) == (
        "failed",
        "internal",
        "stuck-terminating",
    )
    assert run.retryable is False
    assert "categorised oom" in run.message
    assert Job.objects.get(id=job_id).state == "failed"


def test_a_taken_pod_name_returns_the_lease_until_the_legacy_limit_then_max_runs_exceeded(
    queue, owner, settings
):
    """A pod kept from an earlier attempt holds the name: each lease is returned (a
    recoverable submit error), the job is leased again, and after scheduling.maxRetries
    returns it fails with MaxRunsExceeded, a message that does not mention the collision."""
    assert settings.ARMADA.scheduling.max_retries == 3
    a = agent()
    a.tick(at(0))
    job_id = submit(owner)
    # The pod of an earlier attempt, retained and slow to delete, holds the name.
    a.backend.create_pod(
        PodRequest(
            f"armada-{job_id}-0",
            "earlier-run",
            job_id,
            "n-0",
            {"containers": []},
            {FAKE + "deletionDuration": "1h"},
        ),
        at(0),
    )
    for attempt in range(1, 5):
        assert scheduler_cycle(now=at(attempt * 10)).leased == 1, attempt
        a.tick(at(attempt * 10 + 1))
    job_row = Job.objects.get(id=job_id)
    assert job_row.state == "failed"
    assert (job_row.terminal_reason, job_row.failure_category, job_row.failure_subcategory) == (
        "MaxRunsExceeded",
        "internal",
        "max-runs-exceeded",
    )
    assert "exist" not in job_row.terminal_message and "collision" not in job_row.terminal_message
    assert job_row.lease_return_count == 4 and job_row.failure_count == 0
    assert (
        list(Run.objects.filter(job_id=job_id).values_list("state", flat=True))
        == ["lease_returned"] * 4
    )
    assert types_for(job_id) == ["submitted", "queued"] + [
        "leased",
        "lease_returned",
        "queued",
    ] * 3 + [
        "leased",
        "lease_returned",
        "failed",
    ]
    assert scheduler_cycle(now=at(60)).leased == 0


def test_a_fail_fast_job_gets_no_second_attempt_after_a_lease_return(queue, owner):
    a = agent()
    a.tick(at(0))
    ann = {"armadaproject.io/failFast": "true"}
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[job(annotations=ann)]), now=at(0))
    a.backend.create_pod(
        PodRequest(
            f"armada-{job_id}-0", "old", job_id, "n-0", {}, {FAKE + "deletionDuration": "1h"}
        ),
        at(0),
    )
    scheduler_cycle(now=at(1))
    a.tick(at(2))
    job_row = Job.objects.get(id=job_id)
    assert (job_row.state, job_row.terminal_reason) == ("failed", "MaxRunsExceeded")
    assert job_row.lease_return_count == 1


def test_when_the_taken_name_frees_the_next_attempt_runs(queue, owner):
    a = agent()
    a.tick(at(0))
    job_id = submit(owner, duration="1s")
    a.backend.create_pod(PodRequest(f"armada-{job_id}-0", "old", job_id, "n-0", {}, {}), at(0))
    scheduler_cycle(now=at(1))
    a.tick(at(2))  # collision: lease returned, old pod deleted (at once)
    assert Job.objects.get(id=job_id).state == "queued"
    scheduler_cycle(now=at(3))
    a.tick(at(4))
    a.tick(at(10))
    assert Job.objects.get(id=job_id).state == "succeeded"


def test_an_executor_that_stops_heart_beating_has_its_runs_expired(queue, owner, settings):
    a = agent()
    a.tick(at(0))
    job_id = submit(owner, duration="1h")
    scheduler_cycle(now=at(1))
    a.tick(at(2))
    assert Job.objects.get(id=job_id).state == "running"
    timeout = settings.ARMADA.executor_timeout
    assert scheduler_cycle(now=at(2 + timeout - 1)).expired == 0
    report = scheduler_cycle(now=at(2 + timeout + 1))
    assert report.expired == 1
    run = run_of(job_id)
    assert (run.state, run.failure_category, run.failure_subcategory) == (
        "lease_expired",
        "internal",
        "lease-expired",
    )
    job_row = Job.objects.get(id=job_id)
    assert (job_row.state, job_row.failure_count) == ("failed", 1)
    assert types_for(job_id)[-2:] == ["lease_expired", "failed"]
    failed = Event.objects.get(job_id=job_id, type="failed")
    assert (failed.payload["failureSubcategory"], failed.payload["retryable"]) == (
        "lease-expired",
        False,
    )
    # The executor comes back: its orphaned pod is stopped, and nothing is reported twice.
    a.tick(at(2 + timeout + 2))
    assert f"armada-{job_id}-0" not in {
        s.name for s in a.backend.poll(at(2 + timeout + 2)) if not s.deleting
    }
    assert types_for(job_id).count("failed") == 1


def test_failure_categories_are_counted_for_prometheus(queue, owner, client):
    a = agent()
    a.tick(at(0))
    for _ in range(2):
        submit(owner, condition="OOMKilled")
    submit(owner, exitCode="1")
    scheduler_cycle(now=at(1))
    a.tick(at(2))
    a.tick(at(5))
    counts = {
        (c.labels["failure_category"], c.labels["failure_subcategory"]): c.value
        for c in MetricCounter.objects.filter(name="armada_executor_job_failure_category_total")
    }
    assert counts == {("oom", ""): 2, ("user-error", ""): 1}
    text = client.get("/metrics").content.decode()
    assert (
        'armada_executor_job_failure_category_total{failure_category="oom",failure_subcategory=""} 2.0'
        in text
    )


def test_the_log_of_a_run_is_kept_and_served(queue, owner, api, api_as, outsider):
    a = agent()
    a.tick(at(0))
    job_id = submit(owner, exitCode="1", log="starting\nloading data\nboom: bad input\n")
    scheduler_cycle(now=at(1))
    a.tick(at(2))
    a.tick(at(5))
    run = run_of(job_id)
    assert RunLog.objects.get(run=run).text.endswith("boom: bad input\n")
    assert run.message == "boom: bad input"  # no termination message: the last log line
    body = api.get(f"/api/v1/runs/{run.id}/log").json()
    assert body["log"].startswith("starting") and body["jobId"] == job_id
    assert api_as(outsider).get(f"/api/v1/runs/{run.id}/log").status_code == 403
    assert api.get("/api/v1/runs/nope/log").status_code == 404
