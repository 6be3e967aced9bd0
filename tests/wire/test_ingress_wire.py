"""Services and ingress on the wires: the executor API's lease carries them and its reports
bring the ingress addresses back (well formed or refused one by one); the messages each way
(``executor.api.messages``); Armada's ``EventMessage.ingress_info`` and ``api.Job``'s
services and ingress (a submitted event, GetJobDetails)."""

from __future__ import annotations

import json

import pytest
from armada_client.armada import event_pb2, job_pb2, submit_pb2

from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.messages import lease_of, run_event, run_report
from armada.models import Event, Job, Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from armada.wire.event_messages import event_messages, job_message
from armada.wire.registry import Call, load_operations
from tests.conftest import T0, at, job, job_file
from tests.executor_api import credential_for
from tests.wire.test_executor_ops import (
    auth,
    call,
    event,
    lease_request,
    open_session,
    report_request,
    written,
)

pytestmark = pytest.mark.django_db

SERVICES = [{"type": "Headless", "ports": [8080], "name": "web"}]
INGRESS = [
    {
        "ports": [8080, 9090],
        "annotations": {"example.com/team": "ml"},
        "tlsEnabled": True,
        "certName": "web-cert",
        "useClusterIP": False,
    }
]


def network_job() -> dict:
    return job(services=SERVICES, ingress=INGRESS)


@pytest.fixture
def key() -> str:
    return credential_for("test", T0)


@pytest.fixture
def session(key) -> str:
    """Executor ``test``'s session, opened at 0 s, and its node from a round at 1 s."""
    opened = open_session(key)
    call("LeaseJobRuns", lease_request(opened), auth(key), at(1))
    return opened


@pytest.fixture
def two_jobs(session, queue, owner) -> list[str]:
    """A job with services and ingress, and one without, leased at 2 s to executor test."""
    ids = job_submit(actor=owner, data=job_file(jobs=[network_job(), job()]), now=at(0))
    assert scheduler_cycle(now=at(2)).leased == 2
    return ids


# --- leases ---------------------------------------------------------------------------------


def test_a_lease_carries_the_jobs_services_and_ingress(key, session, two_jobs):
    messages = call("LeaseJobRuns", lease_request(session), auth(key), at(3))
    leases = {lease.job_id: lease for m in messages[:-1] for lease in m.leases.leases}
    with_items, without = leases[two_jobs[0]], leases[two_jobs[1]]
    assert json.loads(with_items.services_json) == SERVICES
    assert json.loads(with_items.ingress_json) == INGRESS
    assert (json.loads(without.services_json), json.loads(without.ingress_json)) == ([], [])
    lease = lease_of(with_items)
    assert (lease.services, lease.ingress) == (SERVICES, INGRESS)
    assert (lease_of(without).services, lease_of(without).ingress) == ([], [])


def test_a_lease_from_a_server_that_sends_no_items_has_none():
    lease = lease_of(pb.JobRunLease(run_id="r", pod_spec_json="{}"))
    assert (lease.services, lease.ingress) == ([], [])


# --- reports --------------------------------------------------------------------------------


def test_the_report_messages_carry_the_addresses_both_ways():
    report = RunReport("r", RunState.RUNNING, at(3), ingress_addresses={9090: "b:1", 8080: "a:1"})
    message = run_event(report)
    assert dict(message.ingress_addresses) == {8080: "a:1", 9090: "b:1"}
    back = run_report(pb.RunEvent.FromString(message.SerializeToString()))
    assert back == RunReport(
        "r", RunState.RUNNING, at(3), ingress_addresses={8080: "a:1", 9090: "b:1"}
    )
    assert list(back.ingress_addresses) == [8080, 9090]
    assert back.is_ingress_info
    plain = run_report(run_event(RunReport("r", RunState.RUNNING, at(3))))
    assert (plain.ingress_addresses, plain.is_ingress_info) == (None, False)


def test_an_ingress_report_is_applied_once_and_bad_ones_refused_one_by_one(key, session, two_jobs):
    run = Run.objects.get(job_id=two_jobs[0]).id
    good = {8080: "web.example.com:443"}
    events = [
        event(run, pb.RUNNING, 4),
        event(run, pb.PENDING, 4, ingress_addresses=good),
        event(run, pb.RUNNING, 5, ingress_addresses={0: "x:1"}),
        event(run, pb.RUNNING, 5, ingress_addresses={70000: "x:1"}),
        event(run, pb.RUNNING, 5, ingress_addresses={8080: " "}),
        event(run, pb.RUNNING, 5, ingress_addresses={8080: "x" * 2049}),
        event(run, pb.RUNNING, 5, ingress_addresses=good),
        event(run, pb.RUNNING, 6, ingress_addresses=good),
    ]
    [answer] = call("ReportEvents", report_request(session, events), auth(key), at(7))
    assert [(r.outcome, r.reason) for r in answer.results] == [
        (pb.APPLIED, ""),
        (pb.REFUSED, "events[1].ingressAddresses: only a RUNNING event carries ingress addresses"),
        (pb.REFUSED, "events[2].ingressAddresses[0]: not a port (1 to 65535)"),
        (pb.REFUSED, "events[3].ingressAddresses[70000]: not a port (1 to 65535)"),
        (pb.REFUSED, "events[4].ingressAddresses[8080]: must be 1 to 2048 characters"),
        (pb.REFUSED, "events[5].ingressAddresses[8080]: must be 1 to 2048 characters"),
        (pb.APPLIED, ""),
        (pb.DUPLICATE, "these ingress addresses are recorded already"),
    ]
    assert Run.objects.get(id=run).ingress_addresses == {"8080": "web.example.com:443"}
    assert Event.objects.filter(run_id=run, type="ingress_info").count() == 1
    before = written()
    [again] = call("ReportEvents", report_request(session, events), auth(key), at(8))
    assert [r.outcome for r in again.results] == [pb.DUPLICATE] + [pb.REFUSED] * 5 + [
        pb.DUPLICATE
    ] * 2
    assert written() == before


# --- Armada's messages ----------------------------------------------------------------------


def test_an_ingress_info_event_is_armadas_ingress_info_message():
    stored = Event.objects.create(
        created=T0,
        queue="demo",
        job_set="set-1",
        job_id="01job",
        run_id="01run",
        type="ingress_info",
        payload={
            "clusterId": "c1",
            "nodeName": "n1",
            "podName": "armada-01job-0",
            "podNamespace": "team",
            "kubernetesId": "5b1f0c9e-uid",
            "podNumber": 0,
            "ingressAddresses": {"8080": "a.example.com:443", "9090": "b.example.com:443"},
        },
    )
    [message] = event_messages([stored])
    assert message.id == str(stored.id)
    assert message.message.WhichOneof("events") == "ingress_info"
    info = message.message.ingress_info
    assert info == event_pb2.JobIngressInfoEvent(
        job_id="01job",
        job_set_id="set-1",
        queue="demo",
        created=info.created,
        cluster_id="c1",
        kubernetes_id="5b1f0c9e-uid",  # the pod's UID, as the executor reported it
        node_name="n1",
        pod_number=0,
        pod_name="armada-01job-0",
        pod_namespace="team",
        ingress_addresses={8080: "a.example.com:443", 9090: "b.example.com:443"},
    )
    assert info.created.ToDatetime().replace(tzinfo=T0.tzinfo) == T0


def test_armadas_job_message_carries_services_and_ingress(queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[network_job()]), now=T0)
    [message] = event_messages([Event.objects.get(job_id=job_id, type="submitted")])
    sent = message.message.submitted.job
    assert list(sent.services) == [
        submit_pb2.ServiceConfig(type=submit_pb2.Headless, ports=[8080], name="web")
    ]
    assert list(sent.ingress) == [
        submit_pb2.IngressConfig(
            type=submit_pb2.Ingress,
            ports=[8080, 9090],
            annotations={"example.com/team": "ml"},
            tls_enabled=True,
            cert_name="web-cert",
        )
    ]
    assert job_message(Job.objects.get(id=job_id)) == sent
    details = load_operations()["api.Jobs/GetJobDetails"].func(
        Call(actor=owner, now=T0),
        job_pb2.JobDetailsRequest(job_ids=[job_id], expand_job_spec=True),
    )
    assert details.job_details[job_id].job_spec.services == sent.services
    assert details.job_details[job_id].job_spec.ingress == sent.ingress
