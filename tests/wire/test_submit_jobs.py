"""Armada's SubmitJobs, called as the transports call it (the registered function with a
``Call`` and a message): its success, its refusals (permission, invalid argument naming the
field in Armada's spelling) and that a refused call writes nothing."""

from __future__ import annotations

import pytest
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as v1
from armada_client.k8s.io.apimachinery.pkg.api.resource.generated_pb2 import Quantity

from armada.models import Event, Job
from armada.services.errors import PermissionDenied, ValidationFailed
from armada.services.submit import job_submit
from armada.wire.errors import wire_error
from tests.conftest import at, job, job_file
from tests.wire.job_calls import call, fields_of

pytestmark = pytest.mark.django_db


def counts() -> tuple[int, int]:
    return Job.objects.count(), Event.objects.count()


def pod(cpu: str = "1", memory: str = "1Gi", **extra) -> v1.PodSpec:
    """A pod spec as an Armada client builds it."""
    amounts = {"cpu": Quantity(string=cpu), "memory": Quantity(string=memory)}
    return v1.PodSpec(
        containers=[
            v1.Container(
                name="main",
                image="busybox:latest",
                args=["sleep", "1"],
                resources=v1.ResourceRequirements(requests=amounts, limits=amounts),
            )
        ],
        **extra,
    )


def item(**fields) -> submit_pb2.JobSubmitRequestItem:
    fields.setdefault("priority", 1.0)
    if "pod_specs" not in fields:
        fields.setdefault("pod_spec", pod())
    return submit_pb2.JobSubmitRequestItem(**fields)


def submit_request(*items, queue="demo", job_set="set-1") -> submit_pb2.JobSubmitRequest:
    return submit_pb2.JobSubmitRequest(
        queue=queue, job_set_id=job_set, job_request_items=list(items) or [item()]
    )


def submitted_ids(response: submit_pb2.JobSubmitResponse) -> list[str]:
    assert all(i.error == "" for i in response.job_response_items)
    return [i.job_id for i in response.job_response_items]


# --- SubmitJobs -----------------------------------------------------------------------------


def test_submit_jobs_stores_each_item_as_a_job(owner, queue):
    request = submit_request(
        item(
            priority=2.0,
            namespace="team-a",
            client_id="c-1",
            labels={"app": "train"},
            annotations={"note": "x"},
            required_node_labels={"zone": "a"},
            pod_spec=pod(cpu="500m", nodeSelector={"arch": "amd64"}),
            external_job_uri="s3://bucket/run-1",
        ),
        item(pod_specs=[pod(memory="2Gi")]),
    )
    ids = submitted_ids(call("SubmitJobs", owner, request))
    assert len(ids) == 2
    first, second = (Job.objects.get(id=i) for i in ids)
    assert (first.queue_id, first.job_set, first.owner) == ("demo", "set-1", "olive")
    assert (first.priority, first.namespace, first.client_id) == (2, "team-a", "c-1")
    assert first.annotations == {
        "note": "x",
        "armadaproject.io/externalJobUri": "s3://bucket/run-1",
    }
    assert first.pod_spec["nodeSelector"] == {"arch": "amd64", "zone": "a"}
    assert first.pod_spec["containers"][0]["resources"]["requests"] == {
        "cpu": "500m",
        "memory": "1Gi",
    }
    assert first.requests["cpu"] == 500
    assert (second.priority, second.namespace, second.client_id) == (1, "default", "")
    assert second.pod_spec["containers"][0]["resources"]["limits"]["memory"] == "2Gi"
    assert Event.objects.filter(job_id__in=ids).count() == 4


def test_submit_jobs_keeps_services_and_ingress(owner, queue):
    """Armada's ServiceConfig / IngressConfig become the job's items, every key present; a
    port need not be one a container declares (Armada does not ask it either)."""
    request = submit_request(
        item(
            services=[
                submit_pb2.ServiceConfig(ports=[8080, 9090], name="web"),
                submit_pb2.ServiceConfig(type=submit_pb2.Headless, ports=[7000]),
            ],
            ingress=[
                submit_pb2.IngressConfig(
                    ports=[8080],
                    annotations={"nginx.ingress.kubernetes.io/ssl-redirect": "false"},
                    tls_enabled=True,
                    cert_name="web-cert",
                    use_clusterIP=True,
                ),
                submit_pb2.IngressConfig(ports=[9090]),
            ],
        ),
        item(),
    )
    first, second = (
        Job.objects.get(id=i) for i in submitted_ids(call("SubmitJobs", owner, request))
    )
    assert first.services == [
        {"type": "NodePort", "ports": [8080, 9090], "name": "web"},
        {"type": "Headless", "ports": [7000], "name": ""},
    ]
    assert first.ingress == [
        {
            "ports": [8080],
            "annotations": {"nginx.ingress.kubernetes.io/ssl-redirect": "false"},
            "tlsEnabled": True,
            "certName": "web-cert",
            "useClusterIP": True,
        },
        {
            "ports": [9090],
            "annotations": {},
            "tlsEnabled": False,
            "certName": "",
            "useClusterIP": False,
        },
    ]
    assert (second.services, second.ingress) == ([], [])


def test_submit_jobs_with_a_known_client_id_answers_with_the_original_job(owner, queue):
    request = submit_request(item(client_id="once"), item(client_id="twice"))
    first = submitted_ids(call("SubmitJobs", owner, request))
    before = counts()
    again = submitted_ids(
        call("SubmitJobs", owner, submit_request(item(client_id="twice"), item(client_id="new")))
    )
    assert again[0] == first[1] and again[1] not in first
    assert counts() == (before[0] + 1, before[1] + 2)
    # Our REST API and the wire share the key.
    assert job_submit(actor=owner, data=job_file(jobs=[job(clientId="once")]), now=at(1)) == [
        first[0]
    ]


def test_submit_jobs_needs_the_submit_verb(outsider, queue):
    with pytest.raises(PermissionDenied, match="submit") as raised:
        call("SubmitJobs", outsider, submit_request())
    assert wire_error(raised.value).code.name == "PERMISSION_DENIED"
    assert counts() == (0, 0)


def test_submit_jobs_to_a_queue_that_does_not_exist_names_the_queue(owner, queue):
    with pytest.raises(ValidationFailed) as raised:
        call("SubmitJobs", owner, submit_request(queue="ghost"))
    assert fields_of(raised.value) == ["queue"]
    assert wire_error(raised.value).code.name == "INVALID_ARGUMENT"
    assert counts() == (0, 0)


BAD_ITEMS = [
    # (id, item, the fields named)
    ("fractional-priority", item(priority=1.5), ["jobRequestItems[0].priority"]),
    ("negative-priority", item(priority=-1), ["jobRequestItems[0].priority"]),
    ("nan-priority", item(priority=float("nan")), ["jobRequestItems[0].priority"]),
    ("huge-priority", item(priority=2.0**33), ["jobRequestItems[0].priority"]),
    ("no-pod-spec", submit_pb2.JobSubmitRequestItem(), ["jobRequestItems[0].podSpec"]),
    ("two-pod-specs", item(pod_specs=[pod(), pod()]), ["jobRequestItems[0].podSpecs"]),
    (
        "pod-spec-and-pod-specs",
        item(pod_spec=pod(), pod_specs=[pod()]),
        ["jobRequestItems[0].podSpecs"],
    ),
    (
        "bad-quantity",
        item(pod_spec=pod(cpu="lots")),
        [
            "jobRequestItems[0].podSpec.containers[0].resources.requests.cpu",
            "jobRequestItems[0].podSpec.containers[0].resources.limits.cpu",
        ],
    ),
    (
        "bad-quantity-in-pod-specs",
        item(pod_specs=[pod(memory="-1Gi")]),
        [
            "jobRequestItems[0].podSpecs[0].containers[0].resources.requests.memory",
            "jobRequestItems[0].podSpecs[0].containers[0].resources.limits.memory",
        ],
    ),
    (
        "no-resources",
        item(pod_spec=v1.PodSpec(containers=[v1.Container(name="c", image="i")])),
        ["jobRequestItems[0].podSpec.containers[0].resources"],
    ),
    ("bad-namespace", item(namespace="Team_A"), ["jobRequestItems[0].namespace"]),
    ("bad-label", item(labels={"bad key!": "x"}), ["jobRequestItems[0].labels[bad key!]"]),
    ("long-client-id", item(client_id="x" * 101), ["jobRequestItems[0].clientId"]),
    (
        "ingress-without-ports",
        item(ingress=[submit_pb2.IngressConfig()]),
        ["jobRequestItems[0].ingress[0].ports"],
    ),
    (
        "ingress-port-in-two-items",
        item(
            ingress=[
                submit_pb2.IngressConfig(ports=[8080]),
                submit_pb2.IngressConfig(ports=[9090, 8080]),
            ]
        ),
        ["jobRequestItems[0].ingress[1].ports[1]"],
    ),
    (
        "ingress-bad-annotation-key",
        item(ingress=[submit_pb2.IngressConfig(ports=[80], annotations={"bad key!": "x"})]),
        ["jobRequestItems[0].ingress[0].annotations[bad key!]"],
    ),
    (
        "ingress-bad-cert-name",
        item(ingress=[submit_pb2.IngressConfig(ports=[80], tls_enabled=True, cert_name="No!")]),
        ["jobRequestItems[0].ingress[0].certName"],
    ),
    (
        "service-port-out-of-range",
        item(services=[submit_pb2.ServiceConfig(ports=[8080, 70000])]),
        ["jobRequestItems[0].services[0].ports[1]"],
    ),
    (
        "service-port-twice",
        item(services=[submit_pb2.ServiceConfig(ports=[8080, 8080])]),
        ["jobRequestItems[0].services[0].ports[1]"],
    ),
    (
        "service-unknown-type",
        item(services=[submit_pb2.ServiceConfig(type=7, ports=[8080])]),
        ["jobRequestItems[0].services[0].type"],
    ),
    (
        "service-bad-name",
        item(services=[submit_pb2.ServiceConfig(ports=[8080], name="Web_UI")]),
        ["jobRequestItems[0].services[0].name"],
    ),
    ("scheduler", item(scheduler="legacy"), ["jobRequestItems[0].scheduler"]),
    (
        "node-labels-contradict-node-selector",
        item(pod_spec=pod(nodeSelector={"zone": "a"}), required_node_labels={"zone": "b"}),
        ["jobRequestItems[0].requiredNodeLabels[zone]"],
    ),
    (
        "unknown-priority-class",
        item(pod_spec=pod(priorityClassName="gold")),
        ["jobRequestItems[0].podSpec.priorityClassName"],
    ),
]


@pytest.mark.parametrize(
    ("bad", "fields"), [b[1:] for b in BAD_ITEMS], ids=[b[0] for b in BAD_ITEMS]
)
def test_a_bad_item_is_invalid_argument_naming_its_field_and_writes_nothing(
    owner, queue, bad, fields
):
    with pytest.raises(ValidationFailed) as raised:
        call("SubmitJobs", owner, submit_request(item(), bad))
    # The bad item is the second of the request.
    assert fields_of(raised.value) == [f.replace("[0]", "[1]", 1) for f in fields]
    error = wire_error(raised.value)
    assert error.code.name == "INVALID_ARGUMENT"
    assert fields[0].replace("[0]", "[1]", 1) in error.message
    assert counts() == (0, 0)


def test_every_problem_of_a_request_is_named_at_once(owner, queue):
    request = submit_request(
        item(priority=0.5),
        item(pod_spec=pod(cpu="lots")),
        item(ingress=[submit_pb2.IngressConfig()]),
    )
    with pytest.raises(ValidationFailed) as raised:
        call("SubmitJobs", owner, request)
    assert fields_of(raised.value) == [
        "jobRequestItems[0].priority",
        "jobRequestItems[1].podSpec.containers[0].resources.requests.cpu",
        "jobRequestItems[1].podSpec.containers[0].resources.limits.cpu",
        "jobRequestItems[2].ingress[0].ports",
    ]
    assert counts() == (0, 0)


def test_items_sharing_a_pod_spec_each_get_their_own(owner, queue):
    """A batch's identical pod specs are converted once, yet each job keeps its own: one
    item's requiredNodeLabels reach only that job's nodeSelector."""
    response = call(
        "SubmitJobs",
        owner,
        submit_request(
            item(), item(required_node_labels={"zone": "a"}), item(), item(priority=3.0)
        ),
    )
    ids = submitted_ids(response)
    selectors = [Job.objects.get(id=i).pod_spec.get("nodeSelector") for i in ids]
    assert selectors == [None, {"zone": "a"}, None, None]
    assert Job.objects.get(id=ids[3]).pod_spec == Job.objects.get(id=ids[0]).pod_spec


def test_a_bad_pod_spec_repeated_is_named_in_every_item(owner, queue):
    before = counts()
    with pytest.raises(ValidationFailed) as raised:
        call(
            "SubmitJobs",
            owner,
            submit_request(item(pod_spec=pod(cpu="lots")), item(pod_spec=pod(cpu="lots"))),
        )
    named = fields_of(raised.value)
    for index in (0, 1):
        assert f"jobRequestItems[{index}].podSpec.containers[0].resources.requests.cpu" in named
    assert counts() == before


def test_what_a_pod_spec_holds_must_be_storable(owner, queue):
    from armada_client.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta

    managed = meta.ManagedFieldsEntry(fieldsV1=meta.FieldsV1(Raw=b'{"f:x": NaN}'))
    template = v1.PersistentVolumeClaimTemplate(metadata=meta.ObjectMeta(managedFields=[managed]))
    volume = v1.Volume(
        name="v",
        volumeSource=v1.VolumeSource(
            ephemeral=v1.EphemeralVolumeSource(volumeClaimTemplate=template)
        ),
    )
    with pytest.raises(ValidationFailed) as raised:
        call("SubmitJobs", owner, submit_request(item(pod_specs=[pod(volumes=[volume])])))
    assert fields_of(raised.value) == [
        "jobRequestItems[0].podSpecs[0].volumes[0].ephemeral.volumeClaimTemplate.metadata"
        ".managedFields[0].fieldsV1[f:x]"
    ]
    assert counts() == (0, 0)


def test_too_many_items_are_refused_before_any_work(owner, queue):
    request = submit_request(*[submit_pb2.JobSubmitRequestItem()] * 5001)
    with pytest.raises(ValidationFailed) as raised:
        call("SubmitJobs", owner, request)
    assert fields_of(raised.value) == ["jobRequestItems"]
    assert "at most 5000" in str(raised.value)


def test_an_empty_request_names_queue_job_set_and_items(owner, queue):
    with pytest.raises(ValidationFailed) as raised:
        call("SubmitJobs", owner, submit_pb2.JobSubmitRequest())
    assert sorted(fields_of(raised.value)) == ["jobRequestItems", "jobSetId", "queue"]
