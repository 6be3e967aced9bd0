"""The executor agent with the kubernetes backend, against the emulated API server, through
the executor API: the main flows of a job's life on a cluster (``kubernetes_world``)."""

from __future__ import annotations

import pytest

from armada.models import Event, Job, Run
from armada.services.stopping import CANCEL, runs_request_stop
from tests.executor.kubernetes_world import (
    MEMORY_NEEDED,
    TOKEN,
    attach_policy,
    configure,
    drive,
    event_types,
    job_in,
    kube_agent,
    now,
    runs,
    start_emulator,
    submit,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def emulator():
    emu = start_emulator()
    yield emu
    emu.stop()


@pytest.fixture
def kubeconfig(emulator, tmp_path) -> str:
    return str(emulator.write_kubeconfig(tmp_path / "kubeconfig", token=TOKEN))


@pytest.fixture
def make_agent(settings, kubeconfig, queue):
    made = []

    def make(**extra):
        agent = kube_agent(configure(settings, kubeconfig, **extra))
        made.append(agent)
        return agent

    yield make
    for agent in made:
        agent.backend.close()


@pytest.fixture
def agent(make_agent):
    return make_agent()


def test_a_job_runs_as_a_pod_and_succeeds_with_its_log(agent, emulator, owner):
    job_id = submit(owner, {"duration": "1s", "log": "step 1\nstep 2\n"})
    drive(agent, job_in(job_id, "succeeded"), "the job to succeed")
    (run,) = runs(job_id)
    assert event_types(job_id)[-4:] == ["leased", "pending", "running", "succeeded"]
    assert run.node in ("node-1", "node-2")
    assert "step 2" in run.log.text
    # The succeeded pod is deleted once the server has its report.
    drive(agent, lambda: emulator.pod("default", f"armada-{job_id}-0") is None, "the pod to go")


def test_the_scheduler_sees_the_clusters_nodes_and_what_others_use(agent, emulator):
    from armada.models import Node

    emulator.add_pod(
        {
            "metadata": {"name": "daemon", "namespace": "kube-system"},
            "spec": {
                "nodeName": "node-1",
                "containers": [
                    {"name": "d", "image": "d:1", "resources": {"requests": {"cpu": "2"}}}
                ],
            },
        }
    )

    def reported():
        agent.tick(now())
        nodes = {n.name: n for n in Node.objects.filter(executor_id="kube")}
        return nodes if nodes.get("node-1") and nodes["node-1"].non_armada_allocated else None

    nodes = drive(agent, reported, "the daemon's usage on node-1")
    assert set(nodes) == {"node-1", "node-2"}
    assert nodes["node-1"].non_armada_allocated.get("cpu") == 2000


def test_an_oom_killed_job_is_retried_with_more_memory_until_it_fits(
    agent, emulator, owner, admin_user
):
    attach_policy(admin_user)
    job_id = submit(owner, {"duration": "1s", MEMORY_NEEDED: "100Mi"}, memory="64Mi")
    drive(agent, job_in(job_id, "succeeded", "failed"), "the job to end", timeout=120)
    job = Job.objects.get(id=job_id)
    attempts = runs(job_id)
    assert job.state == "succeeded"
    assert [r.state for r in attempts] == ["failed", "failed", "succeeded"]
    assert {(r.failure_category, r.failure_subcategory) for r in attempts[:2]} == {("oom", "")}
    mebibytes = [r.requests["memory"] // (1000 * 2**20) for r in attempts]
    assert mebibytes == [64, 96, 144]


def test_a_pod_that_vanished_is_pod_missing_and_retried_on_another_node(
    agent, emulator, owner, admin_user
):
    attach_policy(admin_user)
    job_id = submit(owner, {"duration": "60s"})
    first = drive(
        agent,
        lambda: (r := runs(job_id)) and r[0].state == "running" and r[0],
        "the first run to run",
    )
    emulator.vanish("default", f"armada-{job_id}-0")
    second = drive(
        agent,
        lambda: len(r := runs(job_id)) == 2 and r[1].state == "running" and r[1],
        "the retry to run",
    )
    first.refresh_from_db()
    assert (first.failure_category, first.failure_subcategory) == ("internal", "pod-missing")
    assert second.node != first.node


def test_a_cancelled_job_has_its_pod_stopped_with_its_grace_period(agent, emulator, owner):
    job_id = submit(owner, {"duration": "1h"})
    drive(agent, lambda: (r := runs(job_id)) and r[0].state == "running", "running")
    runs_request_stop(job_ids=[job_id], kind=CANCEL, reason="by test", now=now())
    drive(agent, job_in(job_id, "cancelled"), "the job to be cancelled")
    assert emulator.pod("default", f"armada-{job_id}-0") is None


def test_delete_and_retain_decide_whether_the_failed_pod_stays(agent, emulator, owner):
    kept_job = submit(owner, {"duration": "1s", "exitCode": "1"})  # user-error: Retain
    gone_job = submit(owner, {"duration": "1s", "condition": "OOMKilled"})  # oom: Delete
    drive(agent, job_in(kept_job, "failed"), "the user error")
    drive(agent, job_in(gone_job, "failed"), "the OOM")
    (kept,) = runs(kept_job)
    assert kept.pod_kept_until is not None
    assert emulator.pod("default", f"armada-{kept_job}-0")["status"]["phase"] == "Failed"
    assert emulator.pod("default", f"armada-{gone_job}-0") is None


def test_a_kept_pod_is_deleted_when_its_retention_has_passed(make_agent, emulator, owner):
    agent = make_agent(keptPodRetention="2s")
    job_id = submit(owner, {"duration": "1s", "exitCode": "1"})
    drive(agent, job_in(job_id, "failed"), "the failure")
    drive(
        agent,
        lambda: emulator.pod("default", f"armada-{job_id}-0") is None,
        "the kept pod to be deleted after its retention",
    )


def test_a_pod_stuck_pulling_its_image_fails_by_the_pod_checks(make_agent, emulator, owner):
    checks = {
        "containerStatuses": [
            {
                "state": "Waiting",
                "reasonRegexp": "ImagePullBackOff|ErrImagePull",
                "gracePeriod": "1s",
                "action": "Fail",
            }
        ],
        "events": [],
    }
    agent = make_agent(podChecks=checks)
    job_id = submit(owner, {"podError": "manifest for busybox:nope not found"})
    drive(agent, job_in(job_id, "failed"), "the stuck pod to fail")
    (run,) = runs(job_id)
    assert run.failure_category == "image"
    assert "ErrImagePull" in run.message or "ImagePullBackOff" in run.message


def test_a_pod_on_a_silent_node_returns_its_lease_by_the_pod_checks(make_agent, emulator, owner):
    checks = {"deadlineForUpdates": "2s", "events": [], "containerStatuses": []}
    # A silent kubelet does not stop the pod either: its lease is returned once it is gone
    # or, as here, podDeletionTimeout after the deletion was asked for.
    agent = make_agent(podChecks=checks, podDeletionTimeout="3s")
    emulator.pause_kubelet("node-1")
    emulator.pause_kubelet("node-2")
    job_id = submit(owner, {"duration": "1s"})
    returned = drive(
        agent,
        lambda: (r := runs(job_id)) and r[0].state == "lease_returned" and r[0],
        "the lease to be returned",
    )
    assert returned.reason == "PodStuck"
    assert "no updates" in returned.message.lower() or "node" in returned.message.lower()
    emulator.resume_kubelet("node-1")
    emulator.resume_kubelet("node-2")
    drive(agent, job_in(job_id, "succeeded"), "the job to run again and succeed")
    assert Job.objects.get(id=job_id).lease_return_count == 1


def test_services_and_ingress_are_created_and_reported_once(make_agent, emulator, owner):
    agent = make_agent(kubernetes={"ingress": {"hostnameSuffix": "jobs.example.com"}})
    job_id = submit(
        owner,
        {"duration": "3s"},
        services=[{"type": "NodePort", "ports": [9090]}],
        ingress=[{"ports": [8080]}],
    )
    drive(agent, job_in(job_id, "succeeded"), "the job to succeed")
    infos = Event.objects.filter(job_id=job_id, type="ingress_info")
    assert infos.count() == 1
    addresses = infos.get().payload["ingressAddresses"]
    assert addresses["8080"] == f"armada-{job_id}-0-8080.default.jobs.example.com"
    drive(
        agent,
        lambda: not agent.backend.services.items() and not agent.backend.ingresses.items(),
        "the services and ingress to go with the pod",
    )


def test_a_restarted_executor_carries_on_with_its_pods(make_agent, emulator, owner):
    first = make_agent()
    job_id = submit(owner, {"duration": "4s"})
    drive(first, lambda: (r := runs(job_id)) and r[0].state == "running", "running")
    first.backend.close()
    second = make_agent()
    drive(second, job_in(job_id, "succeeded"), "the adopted pod's success")
    assert len(runs(job_id)) == 1


def test_a_pod_whose_run_the_control_plane_does_not_know_is_deleted(agent, emulator, owner):
    agent.tick(now())
    emulator.add_pod(
        {
            "metadata": {
                "name": "armada-01stray-0",
                "namespace": "default",
                "labels": {
                    "armada_job_id": "01stray",
                    "armada_job_run_id": "01strayrun",
                    "armadaproject.io/executor": "kube",
                },
                "annotations": {"fake.armadaproject.io/duration": "1h"},
            },
            "spec": {
                "nodeName": "node-1",
                "containers": [{"name": "main", "image": "busybox:1.36"}],
                "terminationGracePeriodSeconds": 1,
            },
        }
    )
    restarted = type(agent)(agent.config, agent.backend, agent.api, channel=agent.channel)
    drive(
        restarted,
        lambda: emulator.pod("default", "armada-01stray-0") is None,
        "the stray pod to be deleted",
    )
    assert not Run.objects.filter(id="01strayrun").exists()
