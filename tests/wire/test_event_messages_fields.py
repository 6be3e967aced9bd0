"""Every field of Armada's event messages that we have is filled: one row per event type,
with the payload as our services write it today, compared with the whole message Armada's
executor and server would have sent. A field we leave at its zero value is named in
``ZERO_ON_PURPOSE`` with the reason; any other field missing from a row fails."""

from __future__ import annotations

import pytest
from armada_client.armada import event_pb2

from armada.models import Event
from armada.wire.event_messages import event_messages
from tests.conftest import T0

pytestmark = pytest.mark.django_db

UID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
POD = {
    "clusterId": "c1",
    "nodeName": "n1",
    "podName": "armada-01job-0",
    "podNamespace": "team",
    "kubernetesId": UID,
    "podNumber": 0,
}
POD_FIELDS = {
    "cluster_id": "c1",
    "kubernetes_id": UID,
    "pod_name": "armada-01job-0",
    "pod_namespace": "team",
}

# Fields left at their zero value, and why.
ZERO_ON_PURPOSE = {
    "pod_number": "every job is one pod: its number is 0",
    "run_attempted": "a returned lease never started its pod",
    "retryable": "the row is a final failure (the retried one is tested elsewhere)",
}

ROWS = [
    ("submitted", {}, {}),  # the job: tests/wire/test_event_messages.py
    ("queued", {}, {}),
    (
        "leased",
        {"clusterId": "c1", "nodeName": "n1", "pool": "gpu"},
        {"cluster_id": "c1", "pool": "gpu"},
    ),
    (
        "lease_returned",
        {
            "clusterId": "c1",
            "nodeName": "n1",
            "reason": "PodStuck",
            "message": "unschedulable for 5m",
            "kubernetesId": UID,
            "podNumber": 0,
            "runAttempted": False,
        },
        {"cluster_id": "c1", "reason": "unschedulable for 5m", "kubernetes_id": UID},
    ),
    ("lease_expired", {"clusterId": "c1", "nodeName": "n1"}, {}),
    ("pending", {**POD, "pool": "gpu"}, {**POD_FIELDS, "pool": "gpu"}),
    ("running", {**POD, "pool": "gpu"}, {**POD_FIELDS, "node_name": "n1", "pool": "gpu"}),
    (
        "ingress_info",
        {**POD, "ingressAddresses": {"8080": "web.example.com:443"}},
        {**POD_FIELDS, "node_name": "n1", "ingress_addresses": {8080: "web.example.com:443"}},
    ),
    (
        "utilisation",
        {
            **POD,
            "maxResourcesForPeriod": {"cpu": "750m", "memory": "96Mi"},
            "avgResourcesForPeriod": {"cpu": "500m", "memory": "64Mi"},
            "totalCumulativeUsage": {"cpu": "42"},
        },
        {**POD_FIELDS, "node_name": "n1"},  # the quantities: see the test below
    ),
    (
        "succeeded",
        {**POD, "exitCodes": {"main": 0}, "containers": []},
        {**POD_FIELDS, "node_name": "n1"},
    ),
    (
        "failed",
        {
            **POD,
            "retryable": False,
            "failureCategory": "internal",
            "failureSubcategory": "eviction",
            "reason": "EvictionByEvictionAPI",
            "message": "evicted for a drain",
            "exitCode": 143,
            "exitCodes": {"main": 143},
            "cause": "Evicted",
            "containers": [
                {"name": "main", "exitCode": 143, "reason": "Error", "message": "terminated"}
            ],
        },
        {
            **POD_FIELDS,
            "node_name": "n1",
            "reason": "EvictionByEvictionAPI",
            "exit_codes": {"main": 143},
            "cause": event_pb2.Evicted,
            "failure_category": "internal",
            "failure_subcategory": "eviction",
            "container_statuses": [
                event_pb2.ContainerStatus(
                    name="main", exitCode=143, reason="Error", message="terminated"
                )
            ],
        },
    ),
    (
        "reprioritizing",
        {"newPriority": 7, "requestor": "olive"},
        {"new_priority": 7.0, "requestor": "olive"},
    ),
    (
        "reprioritized",
        {"newPriority": 7, "requestor": "olive"},
        {"new_priority": 7.0, "requestor": "olive"},
    ),
    (
        "cancelling",
        {"reason": "done", "requestor": "olive"},
        {"reason": "done", "requestor": "olive"},
    ),
    (
        "cancelled",
        {"reason": "done", "requestor": "olive"},
        {"reason": "done", "requestor": "olive"},
    ),
    (
        "preempting",
        {"reason": "room", "requestor": "root"},
        {"reason": "room", "requestor": "root"},
    ),
    (
        "preempted",
        {
            "clusterId": "c1",
            "nodeName": "n1",
            "reason": "room for job 01urgent",
            "requestor": "",
            "preemptingJobId": "01urgent",
            "preemptiveRunId": "01urgentrun",
        },
        {
            "cluster_id": "c1",
            "run_id": "01run",
            "reason": "room for job 01urgent",
            "preempting_job_id": "01urgent",
            "preemptive_run_id": "01urgentrun",
        },
    ),
]
# Armada leaves these empty for a preemption the scheduler made (no one asked for it).
ZERO_BY_TYPE = {"preempted": {"requestor"}, "submitted": {"job"}}


def converted(type_: str, payload: dict):
    event = Event.objects.create(
        created=T0,
        queue="demo",
        job_set="set-1",
        job_id="01job",
        run_id="01run",
        type=type_,
        payload=payload,
    )
    [message] = event_messages([event])
    kind = message.message.WhichOneof("events")
    return kind, getattr(message.message, kind)


@pytest.mark.parametrize(("type_", "payload", "fields"), ROWS, ids=[r[0] for r in ROWS])
def test_each_message_carries_every_field_we_have(type_, payload, fields):
    kind, message = converted(type_, payload)
    assert kind == type_
    expected = type(message)(
        job_id="01job", job_set_id="set-1", queue="demo", created=message.created, **fields
    )
    if type_ == "utilisation":
        expected.MergeFrom(message)  # its quantity maps are checked on their own
    assert message == expected
    filled = {f.name for f, _ in message.ListFields()}
    missing = (
        {f.name for f in message.DESCRIPTOR.fields if f.name not in filled}
        - set(ZERO_ON_PURPOSE)
        - ZERO_BY_TYPE.get(type_, set())
    )
    assert missing == set(), f"{type_}: fields left empty: {sorted(missing)}"


def test_a_utilisation_event_is_armadas_utilisation_message_with_its_quantities():
    _, message = converted(
        "utilisation",
        {
            **POD,
            "maxResourcesForPeriod": {"cpu": "750m", "memory": "96Mi"},
            "avgResourcesForPeriod": {"cpu": "500m", "memory": "64Mi"},
            "totalCumulativeUsage": {"cpu": "42"},
        },
    )
    assert {k: v.string for k, v in message.MaxResourcesForPeriod.items()} == {
        "cpu": "750m",
        "memory": "96Mi",
    }
    assert {k: v.string for k, v in message.AvgResourcesForPeriod.items()} == {
        "cpu": "500m",
        "memory": "64Mi",
    }
    assert {k: v.string for k, v in message.total_cumulative_usage.items()} == {"cpu": "42"}
    assert (message.kubernetes_id, message.node_name, message.pod_number) == (UID, "n1", 0)


@pytest.mark.parametrize(
    ("cause", "containers", "expected_cause", "container_causes"),
    [
        ("OOM", [("main", 137, "OOMKilled"), ("side", 0, "Completed")], event_pb2.OOM, [2, 0]),
        ("DeadlineExceeded", [("main", 143, "Error")], event_pb2.DeadlineExceeded, [0]),
        ("Error", [("init", 1, "Error"), ("main", 0, "Completed")], event_pb2.Error, [0, 0]),
    ],
)
def test_a_failed_message_has_the_reported_cause_and_one_status_per_container(
    cause, containers, expected_cause, container_causes
):
    _, failed = converted(
        "failed",
        {
            **POD,
            "reason": "Error",
            "exitCodes": {n: c for n, c, _ in containers},
            "cause": cause,
            "containers": [
                {"name": n, "exitCode": c, "reason": r, "message": f"{n} said {c}"}
                for n, c, r in containers
            ],
        },
    )
    assert failed.cause == expected_cause
    assert [(s.name, s.exitCode, s.reason, s.message) for s in failed.container_statuses] == [
        (n, c, r, f"{n} said {c}") for n, c, r in containers
    ]
    assert [s.cause for s in failed.container_statuses] == container_causes
