"""Armada's job calls (SubmitJobs, CancelJobs, CancelJobSet, ReprioritizeJobs, PreemptJobs),
called as the transports call them (the registered function with a ``Call`` and a message):
each call's success, its refusals (permission, not found, invalid argument naming the field
in Armada's spelling) and that a refused call writes nothing."""

from __future__ import annotations

import pytest
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as v1
from armada_client.k8s.io.apimachinery.pkg.api.resource.generated_pb2 import Quantity
from google.protobuf import empty_pb2

from armada.models import Event, Job, Run
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.services.submit import job_submit
from armada.wire.errors import wire_error
from armada.wire.registry import Call, load_operations
from tests.conftest import T0, at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"


def call(method: str, user, message):
    return load_operations()[f"api.Submit/{method}"].func(Call(actor=user, now=T0), message)


def fields_of(error: ValidationFailed) -> list[str]:
    return [e.field for e in error.errors]


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
        "ingress",
        item(ingress=[submit_pb2.IngressConfig(ports=[8080])]),
        ["jobRequestItems[0].ingress"],
    ),
    (
        "services",
        item(services=[submit_pb2.ServiceConfig(ports=[8080])]),
        ["jobRequestItems[0].services"],
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
        "jobRequestItems[2].ingress",
        "jobRequestItems[1].podSpec.containers[0].resources.requests.cpu",
        "jobRequestItems[1].podSpec.containers[0].resources.limits.cpu",
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


# --- CancelJobs, CancelJobSet ---------------------------------------------------------------


@pytest.fixture
def running_and_queued(settings, owner, queue):
    """Job set ``set-1``: one running job (the node has room for one), one queued; and one
    queued job in ``set-2``."""
    from armada.services.scheduler import scheduler_cycle

    agent = fake_agent(settings, cpu="1")
    running, queued = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={FAKE + "duration": "1h"}), job()]),
        now=at(0),
    )
    [other] = job_submit(actor=owner, data=job_file(job_set="set-2"), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    assert Job.objects.get(id=running).state == "running"
    return running, queued, other


def states() -> dict[str, str]:
    return dict(Job.objects.values_list("id", "state"))


def stop_requested(job_id: str) -> bool:
    return Run.objects.filter(job_id=job_id, stop_requested_at__isnull=False).exists()


def test_cancel_jobs_cancels_the_listed_jobs(owner, running_and_queued):
    running, queued, other = running_and_queued
    result = call(
        "CancelJobs",
        owner,
        submit_pb2.JobCancelRequest(
            queue="demo", job_set_id="set-1", job_ids=[queued], job_id=running, reason="done"
        ),
    )
    assert list(result.cancelled_ids) == [queued, running]
    assert states()[queued] == "cancelled"
    assert stop_requested(running)
    assert states()[other] == "queued"


def test_cancel_jobs_without_ids_cancels_the_job_set(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobCancelRequest(queue="demo", job_set_id="set-1")
    assert sorted(call("CancelJobs", owner, request).cancelled_ids) == sorted([running, queued])
    assert states()[other] == "queued"


def test_cancel_jobs_lists_only_the_jobs_really_cancelled(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobCancelRequest(
        queue="demo", job_set_id="set-1", job_ids=["ghost", queued, other]
    )
    assert list(call("CancelJobs", owner, request).cancelled_ids) == [queued]
    assert states()[queued] == "cancelled"
    assert states()[other] == "queued"  # of another job set
    # Cancelling it again: it is finished, so nothing is cancelled and nothing fails.
    request = submit_pb2.JobCancelRequest(queue="demo", job_set_id="set-1", job_ids=[queued])
    assert list(call("CancelJobs", owner, request).cancelled_ids) == []


def test_cancel_jobs_refusals_change_nothing(member, owner, running_and_queued):
    running, queued, _ = running_and_queued
    before = (states(), Event.objects.count())
    ok = {"queue": "demo", "job_set_id": "set-1", "job_ids": [queued]}
    with pytest.raises(PermissionDenied, match="cancel"):
        call("CancelJobs", member, submit_pb2.JobCancelRequest(**ok))
    with pytest.raises(NotFound, match="ghost"):
        call("CancelJobs", owner, submit_pb2.JobCancelRequest(**{**ok, "queue": "ghost"}))
    for bad, field in [
        ({"queue": ""}, "queue"),
        ({"job_set_id": ""}, "jobSetId"),
        ({"reason": "x" * 256}, "reason"),
    ]:
        with pytest.raises(ValidationFailed) as raised:
            call("CancelJobs", owner, submit_pb2.JobCancelRequest(**{**ok, **bad}))
        assert fields_of(raised.value) == [field]
    assert (states(), Event.objects.count()) == before


def test_cancel_job_set_with_a_state_filter(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobSetCancelRequest(
        queue="demo",
        job_set_id="set-1",
        filter=submit_pb2.JobSetFilter(states=[submit_pb2.QUEUED]),
    )
    assert call("CancelJobSet", owner, request) == empty_pb2.Empty()
    assert states()[queued] == "cancelled"
    assert not stop_requested(running)
    assert states()[other] == "queued"  # another job set
    request.filter.states[:] = [submit_pb2.PENDING, submit_pb2.RUNNING]
    call("CancelJobSet", owner, request)
    assert stop_requested(running)


def test_cancel_job_set_without_a_filter_cancels_every_unfinished_job_of_the_set(
    owner, running_and_queued
):
    running, queued, other = running_and_queued
    call("CancelJobSet", owner, submit_pb2.JobSetCancelRequest(queue="demo", job_set_id="set-1"))
    assert states()[queued] == "cancelled" and stop_requested(running)
    assert states()[other] == "queued"


@pytest.mark.parametrize(
    ("filter_states", "field"),
    [
        ([submit_pb2.PENDING], "filter.states"),
        ([submit_pb2.QUEUED, submit_pb2.SUCCEEDED], "filter.states[1]"),
        ([submit_pb2.CANCELLED], "filter.states[0]"),
    ],
)
def test_cancel_job_set_refuses_a_filter_it_cannot_honour(
    owner, running_and_queued, filter_states, field
):
    before = (states(), Event.objects.count())
    request = submit_pb2.JobSetCancelRequest(
        queue="demo", job_set_id="set-1", filter=submit_pb2.JobSetFilter(states=filter_states)
    )
    with pytest.raises(ValidationFailed) as raised:
        call("CancelJobSet", owner, request)
    assert fields_of(raised.value) == [field]
    assert (states(), Event.objects.count()) == before


def test_cancel_job_set_refusals(member, owner, running_and_queued):
    before = (states(), Event.objects.count())
    with pytest.raises(PermissionDenied):
        call("CancelJobSet", member, submit_pb2.JobSetCancelRequest(queue="demo", job_set_id="s"))
    with pytest.raises(NotFound):
        call("CancelJobSet", owner, submit_pb2.JobSetCancelRequest(queue="ghost", job_set_id="s"))
    with pytest.raises(ValidationFailed) as raised:
        call("CancelJobSet", owner, submit_pb2.JobSetCancelRequest(queue="demo"))
    assert fields_of(raised.value) == ["jobSetId"]
    assert (states(), Event.objects.count()) == before


# --- ReprioritizeJobs -----------------------------------------------------------------------


def priorities() -> dict[str, int]:
    return dict(Job.objects.values_list("id", "priority"))


def test_reprioritize_jobs_maps_each_job_to_its_outcome(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobReprioritizeRequest(
        queue="demo", job_set_id="set-1", job_ids=[queued, running], new_priority=7
    )
    result = call("ReprioritizeJobs", owner, request)
    assert dict(result.reprioritization_results) == {queued: "", running: ""}
    assert priorities()[queued] == priorities()[running] == 7
    # Some cannot be changed: the others still are.
    Job.objects.filter(id=running).update(state="succeeded")
    request = submit_pb2.JobReprioritizeRequest(
        queue="demo", job_set_id="set-1", job_ids=[queued, running, other], new_priority=3
    )
    result = dict(call("ReprioritizeJobs", owner, request).reprioritization_results)
    assert result[queued] == ""
    assert running in result[running] and "no unfinished job" in result[running]
    assert other in result[other]
    assert (priorities()[queued], priorities()[running], priorities()[other]) == (3, 7, 0)


def test_reprioritize_jobs_without_ids_changes_the_whole_job_set(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobReprioritizeRequest(queue="demo", job_set_id="set-1", new_priority=4)
    result = call("ReprioritizeJobs", owner, request)
    assert dict(result.reprioritization_results) == {running: "", queued: ""}
    assert priorities()[other] == 0


def test_reprioritize_jobs_refusals_change_nothing(member, owner, running_and_queued):
    _, queued, _ = running_and_queued
    before = (priorities(), Event.objects.count())
    ok = {"queue": "demo", "job_set_id": "set-1", "job_ids": [queued], "new_priority": 2}
    with pytest.raises(PermissionDenied, match="reprioritize"):
        call("ReprioritizeJobs", member, submit_pb2.JobReprioritizeRequest(**ok))
    with pytest.raises(NotFound):
        call("ReprioritizeJobs", owner, submit_pb2.JobReprioritizeRequest(**{**ok, "queue": "x"}))
    for bad, field in [
        ({"new_priority": 1.5}, "newPriority"),
        ({"new_priority": -2}, "newPriority"),
        ({"new_priority": float("inf")}, "newPriority"),
        ({"job_set_id": ""}, "jobSetId"),
    ]:
        with pytest.raises(ValidationFailed) as raised:
            call("ReprioritizeJobs", owner, submit_pb2.JobReprioritizeRequest(**{**ok, **bad}))
        assert fields_of(raised.value) == [field]
    assert (priorities(), Event.objects.count()) == before


# --- PreemptJobs ----------------------------------------------------------------------------


def test_preempt_jobs_maps_each_job_to_its_outcome(owner, running_and_queued):
    running, queued, other = running_and_queued
    request = submit_pb2.JobPreemptRequest(
        queue="demo", job_set_id="set-1", job_ids=[running, queued, other], reason="make room"
    )
    result = dict(call("PreemptJobs", owner, request).preemption_results)
    assert result[running] == ""
    assert "not running" in result[queued]
    assert result[other] == f"job {other!r} is not in queue 'demo', job set 'set-1'"
    run = Run.objects.get(job_id=running)
    assert (run.stop_kind, run.stop_reason) == ("preempt", "make room")
    assert not stop_requested(queued) and states()[queued] == "queued"


def test_preempt_jobs_refusals_change_nothing(member, owner, running_and_queued):
    running, _, _ = running_and_queued
    before = Event.objects.count()
    ok = {"queue": "demo", "job_set_id": "set-1", "job_ids": [running]}
    with pytest.raises(PermissionDenied, match="preempt"):
        call("PreemptJobs", member, submit_pb2.JobPreemptRequest(**ok))
    with pytest.raises(NotFound):
        call("PreemptJobs", owner, submit_pb2.JobPreemptRequest(**{**ok, "queue": "ghost"}))
    with pytest.raises(ValidationFailed) as raised:
        call("PreemptJobs", owner, submit_pb2.JobPreemptRequest(**{**ok, "job_set_id": ""}))
    assert fields_of(raised.value) == ["jobSetId"]
    assert not stop_requested(running)
    assert Event.objects.count() == before
