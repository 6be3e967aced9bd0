"""A job with ingress, end to end without Kubernetes: submitted with ``ingress``, leased
through the executor API to an agent on the fake backend, run there; the job set's stream
gets exactly one ``ingress_info`` event, with the fake cluster's addresses, whatever the
number of ticks, and the run keeps them.

Contract with the agent (``executor.pod_steps``): once the backend first shows the pod's
``ingress_addresses``, and while the pod has not ended, the agent sends one RUNNING report
with them, after the run's own RUNNING report."""

from __future__ import annotations

from armada.cli.watch import format_event
from armada.models import Event, Job, Run
from armada.services.events import event_as_dict
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, container, fake_agent, job_file

FAKE = "fake.armadaproject.io/"


def test_a_job_with_ingress_on_the_fake_backend_yields_one_ingress_info_event(
    settings, queue, owner, db
):
    agent = fake_agent(settings)
    web = container("1", "1Gi") | {"ports": [{"containerPort": 8080}]}
    spec = {
        "annotations": {FAKE + "pendingDuration": "1s", FAKE + "duration": "5s"},
        "podSpec": {"containers": [web]},
        "ingress": [{"ports": [8080]}],
        "services": [{"type": "Headless", "ports": [8080]}],
    }
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(0))
    for t in range(1, 12):
        scheduler_cycle(now=at(t))
        agent.tick(at(t + 0.5))
    job = Job.objects.get(id=job_id)
    assert job.state == "succeeded"
    run = Run.objects.get(job_id=job_id)
    pod = f"armada-{job_id}-0"
    expected = {"8080": f"{pod}.default.ingress.fake.invalid:8080"}
    types = list(Event.objects.filter(job_id=job_id).values_list("type", flat=True))
    assert types == [
        "submitted",
        "queued",
        "leased",
        "pending",
        "running",
        "ingress_info",
        "succeeded",
    ]
    event = Event.objects.get(job_id=job_id, type="ingress_info")
    assert event.payload == {
        "clusterId": "test",
        "nodeName": run.node,
        "podName": pod,
        "podNamespace": "default",
        "ingressAddresses": expected,
        "kubernetesId": run.kubernetes_id,
        "podNumber": 0,
    }
    assert len(run.kubernetes_id) == 36  # the fake pod's UID
    assert run.ingress_addresses == expected
    line = format_event(event_as_dict(event))
    assert (
        "ingress_info" in line and f"addresses=8080={pod}.default.ingress.fake.invalid:8080" in line
    )
