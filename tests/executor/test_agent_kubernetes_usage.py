"""Utilisation on Kubernetes, end to end: a running pod's usage, served by the emulated
metrics API (``metrics.k8s.io``, as metrics-server serves it), is read by the kubernetes
backend, reported by the agent through the executor API, and becomes a ``utilisation``
event: Armada's ``JobUtilisationEvent`` on the wire, and a line of ``armadactl watch``."""

from __future__ import annotations

import pytest

from armada.cli.watch import format_event
from armada.models import Event, Run
from armada.services.events import event_as_dict
from armada.wire.event_messages import event_messages
from tests.executor.kubernetes_world import (
    TOKEN,
    configure,
    drive,
    kube_agent,
    start_emulator,
    submit,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def emulator():
    emu = start_emulator()
    emu.set_metrics_api("served")
    yield emu
    emu.stop()


@pytest.fixture
def agent(settings, emulator, tmp_path, queue):
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig", token=TOKEN))
    made = kube_agent(configure(settings, kubeconfig, utilisationPeriod="1s"))
    yield made
    made.backend.close()


def usage_events(job_id: str) -> list[Event]:
    return list(Event.objects.filter(job_id=job_id, type="utilisation").order_by("id"))


def test_a_running_pods_usage_becomes_a_utilisation_event(agent, emulator, owner):
    job_id = submit(owner, {"duration": "10m"})
    pod = f"armada-{job_id}-0"
    # Known before the pod exists; served once it runs (metrics-server's first scrape).
    emulator.set_usage("default", pod, "main", cpu="250m", memory="100Mi")
    [first, *_] = drive(agent, lambda: usage_events(job_id), "a utilisation event")
    run = Run.objects.get(job_id=job_id)
    assert run.state == "running" and len(run.kubernetes_id) == 36
    assert first.payload == {
        "clusterId": "kube",
        "kubernetesId": emulator.pod("default", pod)["metadata"]["uid"],
        "nodeName": run.node,
        "podName": pod,
        "podNamespace": "default",
        "podNumber": 0,
        "maxResourcesForPeriod": {"cpu": "250m", "memory": "100Mi"},
        "avgResourcesForPeriod": {"cpu": "250m", "memory": "100Mi"},
        "totalCumulativeUsage": {},  # the metrics API gives what is used now, no totals
    }
    assert first.run_id == run.id
    # On Armada's wire: a JobUtilisationEvent with the quantities as they were written.
    [message] = event_messages([first])
    assert message.message.WhichOneof("events") == "utilisation"
    wire = message.message.utilisation
    assert (wire.job_id, wire.cluster_id, wire.pod_name, wire.kubernetes_id) == (
        job_id,
        "kube",
        pod,
        run.kubernetes_id,
    )
    assert {k: v.string for k, v in wire.MaxResourcesForPeriod.items()} == {
        "cpu": "250m",
        "memory": "100Mi",
    }
    # And a line of armadactl watch with the period's largest reading.
    line = format_event(event_as_dict(first))
    assert line.split()[1:3] == ["utilisation", job_id]
    assert line.endswith("max cpu 250m, memory 100Mi")
    # The pod uses more: a later period shows it.
    emulator.set_usage("default", pod, "main", cpu="1500m", memory="1Gi")

    def grown():
        return [
            e
            for e in usage_events(job_id)
            if e.payload["maxResourcesForPeriod"] == {"cpu": "1500m", "memory": "1Gi"}
        ]

    drive(agent, grown, "a utilisation event with the new usage")


def test_a_pod_without_metrics_yet_gives_no_utilisation(agent, emulator, owner):
    job_id = submit(owner, {"duration": "10m"})
    drive(agent, lambda: Run.objects.filter(job_id=job_id, state="running").exists(), "running")
    metrics = ("GET", "pods.metrics.k8s.io", False)
    # The backend asks (the API is there) but metrics-server has nothing for the pod yet.
    drive(agent, lambda: emulator.request_counts().get(metrics, 0) >= 3, "a few readings")
    assert usage_events(job_id) == []
    assert agent.backend.metrics._missing_since is None  # asked, answered, not backed off
