"""Namespaces: an executor's cluster has the namespaces its configuration lists, and a pod in
any other is refused at creation as Kubernetes refuses it (``namespaces "x" not found``).
The run fails with that pod error, categorised like any failure, so that retry policies see
it. Both backends (fake and local)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from armada.conf import load_config_file
from armada.core.config import parse_config
from armada.executor.backends import make_backend
from armada.executor.backends.base import PodRejected, PodRequest
from armada.executor.backends.fake import FakeBackend
from armada.executor.backends.local import LocalBackend
from armada.models import Event, Job, Run
from armada.services.policies import policy_create
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, container, job_file
from tests.executor_api import ApiAgent, api_agent
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
FAKE = "fake.armadaproject.io/"
REFUSED = 'namespaces "team-x" not found'


def shipped_categories() -> dict:
    config = yaml.safe_load((ROOT / "config" / "armada.yaml").read_text())
    return config["executors"][0]["errorCategories"]


def request(name: str = "armada-j1-0", namespace: str = "default", command=("true",)) -> PodRequest:
    spec = {"restartPolicy": "Never", "containers": [{"name": "main", "command": list(command)}]}
    return PodRequest(name, f"run-{name}", "j1", "localhost", spec, {}, namespace=namespace)


@pytest.fixture(params=["fake", "local"])
def backend_of(request, tmp_path):
    """Makes a backend of the parametrised kind with the given namespaces."""
    made = []

    def make(namespaces):
        if request.param == "fake":
            backend = FakeBackend(namespaces=namespaces)
        else:
            backend = LocalBackend(
                tmp_path / "state", executor_id="ns-test", cgroups="none", namespaces=namespaces
            )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        for status in backend.poll(timezone.now()):
            backend.delete_pod(status.name, timezone.now(), 0.0)


# --- the backends ------------------------------------------------------------------------------


def test_a_pod_in_a_namespace_the_cluster_lacks_is_refused_and_nothing_is_created(backend_of):
    backend = backend_of(["default", "team-a"])
    with pytest.raises(PodRejected) as info:
        backend.create_pod(request(namespace="team-x"), timezone.now())
    assert info.value.reason == "NotFound"
    assert info.value.message == REFUSED
    assert backend.poll(timezone.now()) == []
    # The name was not taken by the refused pod: the same pod in a namespace that exists goes.
    backend.create_pod(request(namespace="team-a"), timezone.now())
    assert [s.name for s in backend.poll(timezone.now())] == ["armada-j1-0"]


def test_by_default_a_cluster_has_only_the_default_namespace():
    assert FakeBackend().namespaces == {"default"}
    with pytest.raises(PodRejected):
        FakeBackend().create_pod(request(namespace="kube-system"), at(0))
    FakeBackend().create_pod(request(), at(0))


@pytest.mark.parametrize("kind", ["fake", "local"])
def test_the_backend_gets_the_namespaces_of_the_executor_configuration(kind, tmp_path):
    config = parse_config(
        {"executors": [{"id": "e", "backend": kind, "namespaces": ["default", "ml"]}]}
    ).executors[0]
    backend = make_backend(config, tmp_path)
    assert backend.namespaces == {"default", "ml"}


# --- through the agent and the services --------------------------------------------------------


def fake_agent(settings, executors: list[dict], **scheduling) -> list[ApiAgent]:
    settings.ARMADA = parse_config({"scheduling": scheduling, "executors": executors})
    agents = [api_agent(e, FakeBackend(namespaces=e.namespaces)) for e in settings.ARMADA.executors]
    for a in agents:
        a.tick(at(0))
    return agents


def executor(id_: str, node: str, **extra) -> dict:
    return {
        "id": id_,
        "trackedNodeLabels": ["kubernetes.io/hostname"],
        "nodes": [{"name": node, "allocatable": {"cpu": "8", "memory": "32Gi"}}],
        "errorCategories": shipped_categories(),
        **extra,
    }


def submit(owner, namespace: str, **annotations) -> str:
    ann = {FAKE + k: v for k, v in annotations.items()}
    spec = {"namespace": namespace, "annotations": ann, "podSpec": {"containers": [container()]}}
    return job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(0))[0]


def step(agents: list[ApiAgent], t: float) -> None:
    scheduler_cycle(now=at(t))
    for a in agents:
        a.tick(at(t))
    scheduler_cycle(now=at(t))


@pytest.mark.django_db
def test_a_job_in_a_missing_namespace_fails_at_pod_creation_with_the_cluster_error(
    settings, queue, owner
):
    [agent] = fake_agent(settings, [executor("test", "n")])
    job_id = submit(owner, "team-x")
    step([agent], 1)
    job = Job.objects.get(id=job_id)
    run = Run.objects.get(job_id=job_id)
    assert job.state == "failed"
    assert (run.state, run.reason, run.message) == ("failed", "NotFound", REFUSED)
    # The shipped categories label it like any pod error (onPodError).
    assert (run.failure_category, run.failure_subcategory) == ("user-error", "namespace")
    assert (job.failure_category, job.failure_subcategory) == ("user-error", "namespace")
    assert "does not exist" in run.hint
    failed = Event.objects.get(job_id=job_id, type="failed")
    assert REFUSED in str(failed.payload)
    assert "running" not in set(Event.objects.filter(job_id=job_id).values_list("type", flat=True))
    assert agent.backend.poll(at(1)) == []


@pytest.mark.django_db
def test_a_job_in_a_namespace_the_executor_serves_runs(settings, queue, owner):
    [agent] = fake_agent(settings, [executor("test", "n", namespaces=["default", "team-x"])])
    job_id = submit(owner, "team-x", duration="1s")
    step([agent], 1)
    step([agent], 3)
    assert Job.objects.get(id=job_id).state == "succeeded"


@pytest.mark.django_db
def test_without_categories_the_refusal_still_fails_the_run(settings, queue, owner):
    [agent] = fake_agent(settings, [executor("test", "n", errorCategories={"enabled": False})])
    job_id = submit(owner, "team-x")
    step([agent], 1)
    run = Run.objects.get(job_id=job_id)
    assert (run.state, run.reason, run.failure_category) == ("failed", "NotFound", "")


@pytest.mark.django_db
def test_a_retry_policy_sees_the_refusal_and_the_retry_goes_where_the_namespace_is(
    settings, queue, owner, admin_user
):
    """Two executors, only ``b`` has team-x. The round puts the job on ``a`` (first node in
    order); its refusal is categorised user-error / namespace, the queue's policy retries
    that category away from the node, and the retry runs on ``b``."""
    policy_cache.__init__()
    agents = fake_agent(
        settings,
        [executor("a", "a-node"), executor("b", "b-node", namespaces=["default", "team-x"])],
        retryPolicy={"enabled": True, "globalMaxRetries": 3},
    )
    policy_create(
        actor=admin_user,
        data={
            "apiVersion": "armadaproject.io/v1beta1",
            "kind": "RetryPolicy",
            "name": "namespaces",
            "retryLimit": 2,
            "defaultAction": "Fail",
            "rules": [
                {
                    "action": "Retry",
                    "onCategory": "user-error",
                    "onSubcategory": "namespace",
                    "mutate": {"affinity": {"avoidSameNode": True}},
                }
            ],
        },
        now=at(0),
    )
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["namespaces"]}, now=at(0))
    job_id = submit(owner, "team-x", duration="1s")
    for t in range(1, 8):
        step(agents, t)
        if Job.objects.get(id=job_id).state == "succeeded":
            break
    runs = list(Run.objects.filter(job_id=job_id).order_by("leased_at", "id"))
    assert [(r.executor, r.state) for r in runs] == [("a", "failed"), ("b", "succeeded")]
    assert runs[0].retryable is True
    assert (runs[0].failure_category, runs[0].failure_subcategory) == ("user-error", "namespace")
    assert Job.objects.get(id=job_id).state == "succeeded"
    policy_cache.__init__()


@pytest.mark.django_db
def test_the_local_backend_refuses_and_runs_by_namespace(tmp_path, settings, queue, owner):
    """The shipped local example has no rule for the refusal: it gets the default category."""
    config = load_config_file(ROOT / "config" / "examples" / "local-executor.yaml").executors[0]
    config = config.model_copy(update={"namespaces": ["default", "ml"]})
    settings.ARMADA = settings.ARMADA.model_copy(update={"executors": [config]})
    backend = LocalBackend(
        tmp_path / "executor", executor_id=config.id, namespaces=["default", "ml"]
    )
    agent = api_agent(config, backend)
    agent.tick(timezone.now())

    def submit_local(namespace: str) -> str:
        spec = {
            "namespace": namespace,
            "podSpec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "none",
                        "command": [sys.executable, "-c", "pass"],
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "64Mi"},
                            "limits": {"cpu": "100m", "memory": "64Mi"},
                        },
                    }
                ],
            },
        }
        return job_submit(actor=owner, data=job_file(jobs=[spec]), now=timezone.now())[0]

    refused, served = submit_local("team-x"), submit_local("ml")

    def settled() -> bool:
        scheduler_cycle(now=timezone.now())
        agent.tick(timezone.now())
        scheduler_cycle(now=timezone.now())
        states = dict(Job.objects.filter(id__in=[refused, served]).values_list("id", "state"))
        return states == {refused: "failed", served: "succeeded"}

    try:
        wait_until("both jobs to end", settled, timeout=60)
        run = Run.objects.get(job_id=refused)
        assert (run.reason, run.message) == ("NotFound", REFUSED)
        assert run.failure_category == "unknown"  # the example's defaultCategory
        assert not (tmp_path / "executor" / "pods" / run.pod_name).exists()
    finally:
        for status in backend.poll(timezone.now()):
            backend.delete_pod(status.name, timezone.now(), 1.0)
