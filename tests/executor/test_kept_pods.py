"""Kept pods (a Retain category's failed pods) are deleted once the executor's
``keptPodRetention`` has passed since they ended, not before; the deletions are counted in
``armada_executor_kept_pods_deleted_total{cluster}``; each run says until when its pod is
kept (``Run.pod_kept_until``), and a kept pod deleted sooner to free its name for a retry
says so too. Time is passed in (a fake clock): every tick commits through the services."""

from __future__ import annotations

from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from armada.core.config import parse_config
from armada.executor.backends.base import PodStatus
from armada.executor.kept_pods import expired_kept_pods
from armada.models import MetricCounter, Run
from armada.services.policies import policy_create
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from armada.services.scheduler import scheduler_cycle
from tests.conftest import at
from tests.executor.test_agent import agent, pod_names, run_of, submit
from tests.executor_api import ApiAgent, api_agent
from tests.services.decision_world import POLICY, configure, drive
from tests.services.decision_world import submit as submit_with

pytestmark = pytest.mark.django_db

COUNTER = "armada_executor_kept_pods_deleted_total"
HOUR = 3600


def deleted_count(cluster: str = "test") -> int:
    row = MetricCounter.objects.filter(name=COUNTER, labels={"cluster": cluster}).first()
    return row.value if row else 0


def failed_and_kept(a: ApiAgent, owner, **annotations: str) -> str:
    """A job whose pod ends at 3 s and fails with exit code 1 (user-error: Retain), reported
    at 5 s; returns its job id."""
    job_id = submit(owner, duration="1s", exitCode="1", **annotations)
    scheduler_cycle(now=at(1))
    a.tick(at(2))  # the pod starts at 2 and ends at 3
    a.tick(at(5))
    return job_id


def test_a_kept_pod_is_deleted_once_its_retention_has_passed_and_not_before(queue, owner, client):
    a = agent(keptPodRetention="1h")
    a.tick(at(0))
    job_id = failed_and_kept(a, owner)
    pod = f"armada-{job_id}-0"
    run = run_of(job_id)
    assert (run.state, run.failure_category) == ("failed", "user-error")
    assert run.pod_kept_until == at(3 + HOUR)  # the pod's end plus the retention
    assert pod in pod_names(a, 5)

    for t in (6, 60, HOUR, 3 + HOUR - 1):  # not before
        a.tick(at(t))
        assert pod in pod_names(a, t), t
    assert deleted_count() == 0

    a.tick(at(3 + HOUR))  # the retention has passed: deleted, and counted
    assert pod not in pod_names(a, 3 + HOUR)
    assert deleted_count() == 1
    assert run_of(job_id).pod_kept_until == at(3 + HOUR)  # no longer kept from then on

    a.tick(at(4 + HOUR))  # gone: nothing more to count
    assert deleted_count() == 1
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(client.get("/metrics").content.decode())
        for s in family.samples
    }
    assert samples[(COUNTER, (("cluster", "test"),))] == 1.0


def test_each_kept_pod_is_timed_from_its_own_end(queue, owner):
    a = agent(keptPodRetention="10m")
    a.tick(at(0))
    first = failed_and_kept(a, owner)
    second = submit(owner, duration="100s", exitCode="1")
    scheduler_cycle(now=at(6))
    a.tick(at(7))  # starts at 7, ends at 107
    a.tick(at(110))
    assert run_of(second).pod_kept_until == at(107 + 600)
    a.tick(at(603))  # the first one's time
    assert f"armada-{first}-0" not in pod_names(a, 603)
    assert f"armada-{second}-0" in pod_names(a, 603)
    assert deleted_count() == 1
    a.tick(at(707))
    assert f"armada-{second}-0" not in pod_names(a, 707)
    assert deleted_count() == 2


def test_a_pod_slow_to_go_is_counted_once(queue, owner):
    a = agent(keptPodRetention="1m")
    a.tick(at(0))
    job_id = failed_and_kept(a, owner, deletionDuration="30s")
    a.tick(at(63))  # deletion asked; the pod takes 30 s to go
    assert f"armada-{job_id}-0" in pod_names(a, 63)
    a.tick(at(80))
    a.tick(at(94))
    assert f"armada-{job_id}-0" not in pod_names(a, 94)
    assert deleted_count() == 1


@pytest.mark.parametrize(
    "annotations",
    [{"condition": "OOMKilled"}, {"exitCode": "0"}],
    ids=["delete-category", "succeeded"],
)
def test_a_pod_that_is_not_kept_has_no_kept_time(queue, owner, annotations):
    a = agent()
    a.tick(at(0))
    job_id = submit(owner, duration="1s", **annotations)
    scheduler_cycle(now=at(1))
    a.tick(at(2))
    a.tick(at(5))
    assert run_of(job_id).state in ("failed", "succeeded")
    assert run_of(job_id).pod_kept_until is None


def test_the_default_retention_is_a_day(queue, owner):
    a = agent()
    a.tick(at(0))
    job_id = failed_and_kept(a, owner)
    assert run_of(job_id).pod_kept_until == at(3) + timedelta(days=1)
    a.tick(at(3 + 86399))
    assert f"armada-{job_id}-0" in pod_names(a, 3 + 86399)
    a.tick(at(3 + 86400))
    assert f"armada-{job_id}-0" not in pod_names(a, 3 + 86400)


@pytest.fixture
def retried_retain(settings, queue, admin_user):
    """The retry-decision world: category ``flaky`` (exit code 3) is Retain and retried."""
    policy_cache.__init__()
    policy_create(actor=admin_user, data=POLICY, now=at(0))
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["training"]}, now=at(0))
    yield configure(settings)
    policy_cache.__init__()


def test_a_kept_pod_deleted_to_free_its_name_is_no_longer_kept_and_not_counted(
    retried_retain, owner
):
    a = retried_retain
    a.tick(at(0))
    job_id = submit_with(owner, {"exitCode": "3"})
    drive(a, range(1, 3))  # the pod ends at 2.5 s, and is reported then
    first = Run.objects.filter(job_id=job_id).order_by("leased_at", "id").first()
    assert first.failure_category == "flaky"
    assert first.pod_kept_until == at(2.5) + timedelta(days=1)
    drive(a, range(3, 6))  # the retry's pod collides: the kept pod is deleted
    lease_returns = Run.objects.filter(job_id=job_id, state="lease_returned")
    assert lease_returns.exists()
    first.refresh_from_db()
    collided_at = lease_returns.order_by("finished_at").first().finished_at
    assert first.pod_kept_until == collided_at
    assert deleted_count() == 0  # only deletions at the end of the retention are counted


def test_expired_kept_pods_picks_only_ended_failed_pods_of_inactive_runs() -> None:
    ended = at(0)
    pods = [
        PodStatus("kept", "r1", finished_at=ended),
        PodStatus("young", "r2", finished_at=at(50)),
        PodStatus("active", "r3", finished_at=ended),
        PodStatus("going", "r4", finished_at=ended, deleting=True),
        PodStatus("ok", "r5", finished_at=ended, succeeded=True),
        PodStatus("running", "r6", running_at=ended),
    ]
    assert expired_kept_pods(pods, {"r3"}, 60.0, at(60)) == ["kept"]


def test_the_executor_config_reads_the_retention() -> None:
    config = parse_config({"executors": [{"id": "x", "keptPodRetention": "90m"}]})
    a = api_agent(config.executors[0])
    assert a.config.kept_pod_retention == 5400.0
