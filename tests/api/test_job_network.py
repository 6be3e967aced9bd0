"""A job's services and ingress over REST: submitted in a YAML job file as Armada writes
them, refused with the field named, shown (complete) in the job's detail, with each run's
ingress addresses once reported, and the ingress_info event as the job set's stream sends it."""

from __future__ import annotations

import pytest

from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.models import Job, Run
from armada.services.events import event_as_dict, events_for_job_set
from armada.services.run_reports import runs_apply_report_batch
from armada.services.scheduler import scheduler_cycle
from tests.conftest import at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db

JOB_FILE_YAML = """
queue: demo
jobSetId: web
jobs:
  - podSpec:
      containers:
        - name: web
          image: nginx:1.27
          ports: [{containerPort: 8080}]
          resources:
            requests: {cpu: 100m, memory: 64Mi}
            limits: {cpu: 100m, memory: 64Mi}
    services:
      - type: NodePort
        ports: [8080]
    ingress:
      - type: Ingress
        ports: [8080]
        tlsEnabled: true
        certName: web-cert
        annotations:
          nginx.ingress.kubernetes.io/proxy-body-size: "0"
"""


def test_a_yaml_job_file_with_services_and_ingress_is_stored_and_shown(api, queue):
    response = api.post("/api/v1/jobs", data=JOB_FILE_YAML, content_type="application/yaml")
    assert response.status_code == 201, response.json()
    [job_id] = response.json()["jobIds"]
    detail = api.get(f"/api/v1/jobs/{job_id}").json()
    assert detail["services"] == [{"type": "NodePort", "ports": [8080], "name": ""}]
    assert detail["ingress"] == [
        {
            "ports": [8080],
            "annotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "0"},
            "tlsEnabled": True,
            "certName": "web-cert",
            "useClusterIP": False,
        }
    ]
    assert Job.objects.get(id=job_id).ingress == detail["ingress"]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"ingress": [{"ports": []}]}, "jobs[0].ingress[0].ports"),
        ({"services": [{"type": "ClusterIP", "ports": [80]}]}, "jobs[0].services[0].type"),
        ({"services": "web"}, "jobs[0].services"),
        ({"ingress": [{"ports": [80], "tlsEnabled": "yes"}]}, "jobs[0].ingress[0].tlsEnabled"),
    ],
)
def test_bad_items_are_400_naming_the_field_and_store_nothing(api, queue, fields, named):
    response = api.post("/api/v1/jobs", job_file(jobs=[job(**fields)]), format="json")
    assert response.status_code == 400, response.json()
    assert named in str(response.json())
    assert not Job.objects.exists()


def test_a_runs_ingress_addresses_show_in_the_job_and_the_event_stream(
    api, settings, queue, admin_user
):
    fake_agent(settings)
    response = api.post(
        "/api/v1/jobs", job_file(jobs=[job(ingress=[{"ports": [8080]}])]), format="json"
    )
    [job_id] = response.json()["jobIds"]
    assert scheduler_cycle(now=at(1)).leased == 1
    run = Run.objects.get(job_id=job_id)
    reports = [
        RunReport(run.id, RunState.RUNNING, at(2)),
        RunReport(run.id, RunState.RUNNING, at(2), ingress_addresses={8080: "web.example:443"}),
    ]
    runs_apply_report_batch(executor_id="test", reports=reports, now=at(2))
    [shown] = api.get(f"/api/v1/jobs/{job_id}").json()["runs"]
    assert shown["ingressAddresses"] == {"8080": "web.example:443"}
    # The stream (REST, SSE and armadactl watch) sends each event as ``event_as_dict``.
    [info] = [
        event_as_dict(e)
        for e in events_for_job_set(queue="demo", job_set="set-1")
        if e.type == "ingress_info"
    ]
    assert (info["jobId"], info["runId"], info["ingressAddresses"]) == (
        job_id,
        run.id,
        {"8080": "web.example:443"},
    )
