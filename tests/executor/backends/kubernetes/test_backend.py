"""The kubernetes backend against the emulated API server: pods from creation to their end,
the cluster's nodes, refusals, services and ingresses, restarts, and the cost of a tick."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.utils import timezone

from armada.executor.backends.base import PodExists, PodRejected, PodRequest
from tests.executor.backends.kubernetes.conftest import wait_for

FAKE = "fake.armadaproject.io/"
SPEC = {
    "containers": [
        {
            "name": "main",
            "image": "busybox:1.36",
            "ports": [{"containerPort": 8080}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
        }
    ],
    "terminationGracePeriodSeconds": 2,
}


def now() -> datetime:
    return timezone.now()


def request(job: str = "01job", run: str = "01run", **overrides) -> PodRequest:
    values = {
        "name": f"armada-{job}-0",
        "run_id": run,
        "job_id": job,
        "node": "node-1",
        "pod_spec": SPEC,
        "annotations": {f"{FAKE}duration": "1s", f"{FAKE}log": "hello from the job\n"},
        "namespace": "jobs",
        "queue": "queue-a",
        "job_set": "set-1",
        "owner": "alice",
    }
    values.update(overrides)
    return PodRequest(**values)


def status_of(backend, name):
    return next((s for s in backend.poll(now()) if s.name == name), None)


def test_a_pod_runs_to_success_and_its_log_is_read(backend, emulator):
    backend.create_pod(request(), now())
    pod = emulator.pod("jobs", "armada-01job-0")
    assert pod["spec"]["nodeName"] == "node-1"
    assert pod["metadata"]["labels"]["armada_job_run_id"] == "01run"
    # The creation is in the cache at once, before its watch event.
    assert status_of(backend, "armada-01job-0").run_id == "01run"
    done = wait_for(
        lambda: (s := status_of(backend, "armada-01job-0")) and s.finished_at and s, "success"
    )
    assert done.succeeded and done.pending_at and done.running_at
    assert done.pending_at <= done.running_at <= done.finished_at
    assert done.exit_codes == {"main": 0}
    assert "hello from the job" in backend.read_log("armada-01job-0")
    backend.delete_pod("armada-01job-0", now())
    wait_for(lambda: status_of(backend, "armada-01job-0") is None, "the pod to go")
    assert emulator.pod("jobs", "armada-01job-0") is None


def test_an_oom_killed_container_is_reported_as_kubernetes_wrote_it(backend):
    backend.create_pod(request(annotations={f"{FAKE}condition": "OOMKilled"}), now())
    failed = wait_for(
        lambda: (s := status_of(backend, "armada-01job-0")) and s.finished_at and s, "the OOM"
    )
    assert not failed.succeeded
    assert "OOMKilled" in failed.conditions
    assert failed.exit_code == 137


def test_a_name_taken_by_another_runs_pod_is_pod_exists(backend):
    backend.create_pod(request(), now())
    with pytest.raises(PodExists):
        backend.create_pod(request(run="01other"), now())


def test_a_creation_whose_answer_was_lost_is_taken_as_created(backend, emulator):
    backend.create_pod(request(), now())
    backend.create_pod(request(), now())  # the same run again: AlreadyExists, but ours
    assert len([p for p in emulator.pods() if p["metadata"]["name"] == "armada-01job-0"]) == 1


def test_a_namespace_the_cluster_lacks_is_a_rejection_with_its_message(backend):
    with pytest.raises(PodRejected) as refused:
        backend.create_pod(request(namespace="nowhere"), now())
    assert refused.value.reason == "NotFound"
    assert 'namespaces "nowhere" not found' in refused.value.message


def test_an_invalid_pod_is_a_rejection_naming_the_field(backend):
    spec = {"containers": [{"name": "main", "image": ""}]}
    with pytest.raises(PodRejected) as refused:
        backend.create_pod(request(pod_spec=spec), now())
    assert refused.value.reason == "Invalid"
    assert "spec.containers[0].image" in refused.value.message


def test_nodes_carry_what_other_pods_use(backend, emulator):
    emulator.add_pod(
        {
            "metadata": {"name": "daemon", "namespace": "kube-system"},
            "spec": {
                "nodeName": "node-1",
                "containers": [
                    {
                        "name": "d",
                        "image": "agent:1",
                        "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
                    }
                ],
            },
        }
    )

    def node_one():
        nodes = {n.name: n for n in backend.nodes() or []}
        one = nodes.get("node-1")
        return one if one and one.non_armada_allocated else None

    one = wait_for(node_one, "node-1 with the daemon's usage")
    assert one.non_armada_allocated == {"cpu": "500m", "memory": "256Mi"}
    assert one.allocatable["cpu"] == "8"
    # Our own pods do not count as others' usage.
    backend.create_pod(request(), now())
    assert {n.name: n for n in backend.nodes()}["node-1"].non_armada_allocated == {
        "cpu": "500m",
        "memory": "256Mi",
    }


def test_a_cordoned_or_tainted_node_is_reported_as_such(make_backend, emulator):
    emulator.add_node("cordoned", unschedulable=True)
    emulator.add_node("gpu", taints=[{"key": "gpu", "value": "a100", "effect": "NoSchedule"}])
    backend = make_backend(toleratedTaints=["gpu"])
    nodes = wait_for(
        lambda: (
            {n.name: n for n in backend.nodes() or []} if len(backend.nodes() or []) == 4 else None
        ),
        "four nodes",
    )
    assert nodes["cordoned"].unschedulable
    assert nodes["gpu"].taints == (("gpu", "a100", "NoSchedule"),)
    intolerant = make_backend()
    assert {n.name for n in intolerant.nodes()} == {"node-1", "node-2", "cordoned"}


def test_services_and_ingress_live_and_die_with_the_pod(make_backend, emulator):
    backend = make_backend(ingress={"hostnameSuffix": "jobs.example.com"})
    pod = request(
        annotations={f"{FAKE}duration": "30s"},
        services=({"type": "NodePort", "ports": [9090]},),
        ingress=({"ports": [8080]},),
    )
    backend.create_pod(pod, now())
    running = wait_for(
        lambda: (s := status_of(backend, pod.name)) and len(s.ingress_addresses) == 2 and s,
        "addresses",
    )
    live = emulator.pod("jobs", pod.name)
    (node_port,) = [
        svc["spec"]["ports"][0]["nodePort"]
        for svc in backend.services.items()
        if svc["spec"].get("type") == "NodePort"
    ]
    assert running.ingress_addresses == {
        8080: "armada-01job-0-8080.jobs.jobs.example.com",
        9090: f"{live['status']['hostIP']}:{node_port}",
    }
    counts = emulator.request_counts()
    assert counts.get(("POST", "services", False)) == 2
    assert counts.get(("POST", "ingresses", False)) == 1
    backend.delete_pod(pod.name, now(), 1.0)
    wait_for(lambda: status_of(backend, pod.name) is None, "the pod to go")
    wait_for(
        lambda: not backend.services.items() and not backend.ingresses.items(),
        "the owned services and ingress to be collected",
    )


def test_a_restarted_backend_finds_its_pods_by_their_labels(make_backend, emulator):
    first = make_backend()
    first.create_pod(request(annotations={f"{FAKE}duration": "30s"}), now())
    first.close()
    second = make_backend()
    (found,) = second.poll(now())
    assert (found.name, found.run_id) == ("armada-01job-0", "01run")
    # Another executor's pods on the same cluster are not its to adopt: they count as
    # other pods' usage of the node instead.
    other = make_backend("cluster-b")
    assert other.poll(now()) == []
    node = {n.name: n for n in other.nodes()}["node-1"]
    assert node.non_armada_allocated == {"cpu": "1", "memory": "1Gi"}


def test_a_tick_costs_no_request_per_pod(backend, emulator):
    for i in range(20):
        backend.create_pod(
            request(job=f"01job{i}", run=f"01run{i}", annotations={f"{FAKE}duration": "30s"}),
            now(),
        )
    wait_for(lambda: len(backend.poll(now())) == 20, "twenty pods")
    before = sum(n for (method, _, watch), n in emulator.request_counts().items() if not watch)
    for _ in range(50):
        backend.poll(now())
        backend.nodes()
    after = sum(n for (method, _, watch), n in emulator.request_counts().items() if not watch)
    assert after == before


def test_a_pod_waits_while_its_node_has_pods_stopping_then_starts(backend, emulator):
    """A preempted pod still stopping holds its node's room, which the kubelet counts: the
    pod preempting it is not created until the stopping pod is gone."""
    from armada.executor.backends.base import BackendUnavailable

    old = request(job="01old", run="01oldrun", annotations={f"{FAKE}duration": "1h"})
    old = PodRequest(**{**old.__dict__, "pod_spec": {**SPEC, "terminationGracePeriodSeconds": 3}})
    backend.create_pod(old, now())
    wait_for(lambda: (s := status_of(backend, old.name)) and s.running_at, "the old pod to run")
    backend.delete_pod(old.name, now(), 3.0)
    new = request(job="01new", run="01newrun")
    with pytest.raises(BackendUnavailable, match="still stopping"):
        backend.create_pod(new, now())
    assert emulator.pod("jobs", new.name) is None

    def created():
        backend.poll(now())
        try:
            backend.create_pod(new, now())
        except BackendUnavailable:
            return False
        return True

    wait_for(created, "the new pod to be created once the old one is gone")
    assert emulator.pod("jobs", old.name) is None
    assert wait_for(lambda: finished(backend, new.name), "the new pod to end").succeeded


def test_a_pod_the_kubelet_refuses_for_room_returns_its_lease(backend, emulator):
    big = {
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "resources": {"limits": {"cpu": "9", "memory": "1Gi"}},  # the node has 8
            }
        ]
    }
    pod = request(pod_spec=big)
    backend.create_pod(pod, now())
    refused = wait_for(
        lambda: (s := status_of(backend, pod.name)) and s.return_lease and s, "the refusal"
    )
    assert refused.reason == "OutOfcpu" and refused.finished_at is None
    assert "enough resource: cpu" in refused.return_lease


def finished(backend, name):
    return (s := status_of(backend, name)) is not None and s.finished_at is not None and s


def test_a_force_delete_removes_a_pod_that_outlives_its_grace(backend, emulator):
    """The agent's escalation (``force_delete_pod``): a pod whose kubelet does not stop it is
    still terminating after a graceful delete; a delete with no grace removes it at once, and
    one for a pod already gone is no error."""
    pod = request(job="01stuck", run="01stuckrun", annotations={f"{FAKE}duration": "1h"})
    backend.create_pod(pod, now())
    wait_for(lambda: (s := status_of(backend, pod.name)) and s.running_at, "the pod to run")
    emulator.pause_kubelet()  # the node's kubelet stops answering
    try:
        backend.delete_pod(pod.name, now(), 1.0)
        stuck = emulator.pod("jobs", pod.name)
        assert stuck is not None and stuck["metadata"].get("deletionTimestamp")
        backend.force_delete_pod(pod.name, now())
        assert emulator.pod("jobs", pod.name) is None
        backend.force_delete_pod(pod.name, now())  # gone already: nothing to do, no error
    finally:
        emulator.resume_kubelet()
