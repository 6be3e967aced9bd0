"""Pod UIDs and usage readings of the local and kubernetes backends: the local backend makes a
UID when it creates a pod and keeps it across executor restarts, and reads a running pod's
memory and cpu from its cgroups; the kubernetes backend reports the pod's ``metadata.uid``,
reads usage from the metrics API when the cluster serves one, and carries on without."""

from __future__ import annotations

import contextlib
import uuid

import pytest

from armada.executor.backends.kubernetes.usage import MetricsReader, sample_of
from armada.executor.backends.local import LocalBackend
from armada.models import Event, Run
from tests.executor.test_local_backend import NOW, request, sh, wait_for
from tests.waiting import wait_until


@pytest.fixture
def local(tmp_path):
    backend = LocalBackend(tmp_path / "state", executor_id=f"test-{uuid.uuid4().hex[:10]}")
    yield backend
    for status in backend.poll(NOW):
        backend.delete_pod(status.name, NOW, grace_seconds=0.1)
    wait_until("the pods to go", lambda: not backend.poll(NOW))
    for d in backend.executor_cgroups:
        with contextlib.suppress(OSError):
            d.rmdir()


def test_a_local_pod_keeps_its_uid_across_polls_and_executor_restarts(local, tmp_path):
    local.create_pod(request("uid", sh("sleep 30")), NOW)
    first = wait_for(local, "uid", lambda s: s.running_at is not None)
    assert len(first.uid) == 36
    restarted = LocalBackend(local.state_dir, executor_id=local.executor_id)
    [again] = [s for s in restarted.poll(NOW) if s.name == "uid"]
    assert again.uid == first.uid
    local.delete_pod("uid", NOW, grace_seconds=0.1)
    wait_until("the pod to go", lambda: not [s for s in local.poll(NOW) if s.name == "uid"])
    local.create_pod(request("uid", sh("sleep 30")), NOW)
    renewed = wait_for(local, "uid", lambda s: s.running_at is not None)
    assert renewed.uid not in ("", first.uid)


def test_a_running_local_pod_reports_its_memory_and_cpu_from_its_cgroups(local):
    if local.cgroup_mode == "none":
        pytest.skip("no writable memory cgroup on this machine")
    busy = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 30"
    local.create_pod(request("busy", sh(busy)), NOW)
    status = wait_for(local, "busy", lambda s: s.running_at is not None)

    def burnt() -> float:
        sample = local.usage([status], NOW).get("busy")
        return sample.cumulative.get("cpu", 0) if sample is not None else 0

    wait_until("some cpu time", lambda: burnt() >= 100)  # a tenth of a cpu-second, in milli-units
    sample = local.usage([status], NOW)["busy"]
    assert sample.current["memory"] > 0
    # A pod that has ended, or one not running yet, has no reading.
    assert local.usage([], NOW) == {}


# --- kubernetes ----------------------------------------------------------------------------


def test_a_pod_metrics_object_is_read_as_its_containers_usage_summed():
    sample = sample_of(
        {
            "metadata": {"name": "armada-j-0"},
            "containers": [
                {"name": "main", "usage": {"cpu": "250m", "memory": "100Mi"}},
                {"name": "side", "usage": {"cpu": "13000000n", "memory": "28Mi"}},
            ],
        },
        NOW,
    )
    assert sample.current == {"cpu": 263, "memory": 128 * 1024 * 1024 * 1000}
    assert sample.cumulative == {}
    assert sample_of({"containers": [{"usage": {"cpu": "lots"}}]}, NOW) is None


class Metrics:
    """The metrics API's answers by namespace, as the Kubernetes client returns them."""

    def __init__(self, answers) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str]] = []

    def list_namespaced_custom_object(self, group, version, namespace, plural, **kwargs):
        from kubernetes.client.exceptions import ApiException

        self.calls.append((namespace, kwargs["label_selector"]))
        answer = self.answers.get(namespace)
        if isinstance(answer, int):
            raise ApiException(status=answer, reason="NotFound")
        return answer


def test_the_metrics_reader_asks_once_per_namespace_and_waits_after_a_404():
    reader = MetricsReader(api=None, executor_id="kube", timeout=5.0)
    pod = {"metadata": {"name": "armada-a-0"}, "containers": [{"usage": {"memory": "1Mi"}}]}
    other = {"metadata": {"name": "not-asked-for"}, "containers": [{"usage": {"cpu": "1"}}]}
    reader.custom = Metrics({"team": {"items": [pod, other]}})
    got = reader.read([("team", "armada-a-0"), ("team", "armada-b-0")], NOW)
    assert set(got) == {"armada-a-0"}
    assert reader.custom.calls == [("team", "armada_job_run_id,armadaproject.io/executor=kube")]
    reader.custom = Metrics({"team": 404})
    assert reader.read([("team", "armada-a-0")], NOW) == {}
    assert reader.read([("team", "armada-a-0")], NOW) == {}
    assert len(reader.custom.calls) == 1  # not asked again soon after the 404


@pytest.mark.django_db
def test_a_kubernetes_pods_uid_is_on_its_events_and_no_metrics_api_means_no_utilisation(
    settings, queue, owner, tmp_path
):
    from tests.executor.kubernetes_world import (
        TOKEN,
        configure,
        drive,
        job_in,
        kube_agent,
        start_emulator,
        submit,
    )

    emulator = start_emulator()
    agent = None
    try:
        kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig", token=TOKEN))
        agent = kube_agent(configure(settings, kubeconfig, utilisationPeriod="1s"))
        job_id = submit(owner, {"duration": "3s"})
        pod_name = f"armada-{job_id}-0"
        uids: set[str] = set()

        def seen_running():
            pod = emulator.pod("default", pod_name)
            if pod is not None:
                uids.add(pod["metadata"]["uid"])
            return Run.objects.filter(job_id=job_id, state="running").exists()

        drive(agent, seen_running, "the pod to run")
        drive(agent, job_in(job_id, "succeeded"), "the job to succeed")
        [uid] = uids
        run = Run.objects.get(job_id=job_id)
        assert run.kubernetes_id == uid
        for type_ in ("pending", "running", "succeeded"):
            assert Event.objects.get(job_id=job_id, type=type_).payload["kubernetesId"] == uid
        # The emulated API server serves no metrics.k8s.io: no readings, no events.
        assert not Event.objects.filter(job_id=job_id, type="utilisation").exists()
        assert agent.backend.metrics._missing_since is not None
    finally:
        if agent is not None:
            agent.backend.close()
        emulator.stop()
