"""Our event rows as Armada's ``EventStreamMessage``: every type maps to its message, a failed
event carries what Armada's clients read (retryable, category, subcategory, reason, exit
codes, container statuses), and a batch costs at most two reads."""

from __future__ import annotations

import pytest
from armada_client.armada import event_pb2

from armada.core.states import EventType
from armada.models import Event, Job, Run
from armada.services.policies import policy_create
from armada.services.queues import queue_update
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from armada.wire.event_messages import CONVERTERS, event_messages, job_message
from tests.conftest import T0, at, container, fake_agent, job, job_file

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"


def stored(type_: str, payload: dict | None = None, job_id: str = "01job", run_id: str = ""):
    return Event.objects.create(
        created=T0,
        queue="demo",
        job_set="set-1",
        job_id=job_id,
        run_id=run_id,
        type=type_,
        payload=payload or {},
    )


def one(event: Event) -> tuple[str, object]:
    [message] = event_messages([event])
    assert message.id == str(event.id)
    kind = message.message.WhichOneof("events")
    return kind, getattr(message.message, kind)


def test_every_event_type_we_write_has_a_converter():
    assert set(CONVERTERS) == {t.value for t in EventType}


@pytest.mark.parametrize(
    ("type_", "payload", "expected"),
    [
        ("queued", {}, {}),
        (
            "leased",
            {"clusterId": "c1", "nodeName": "n1", "pool": "gpu"},
            {"cluster_id": "c1", "pool": "gpu"},
        ),
        (
            "lease_returned",
            {"clusterId": "c1", "nodeName": "n1", "reason": "PodExists", "message": "taken"},
            {"cluster_id": "c1", "reason": "taken", "run_attempted": False},
        ),
        ("lease_expired", {"clusterId": "c1", "nodeName": "n1"}, {}),
        (
            "pending",
            {"clusterId": "c1", "nodeName": "n1", "podName": "armada-01job-0", "pool": "p"},
            {"cluster_id": "c1", "pod_name": "armada-01job-0", "pool": "p"},
        ),
        (
            "running",
            {
                "clusterId": "c1",
                "nodeName": "n1",
                "podName": "armada-01job-0",
                "podNamespace": "team",
            },
            {"cluster_id": "c1", "node_name": "n1", "pod_namespace": "team"},
        ),
        (
            "succeeded",
            {"clusterId": "c1", "nodeName": "n1", "exitCodes": {"main": 0}},
            {"cluster_id": "c1", "node_name": "n1"},
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
        ("reprioritized", {"priority": 3}, {"new_priority": 3.0}),  # stored before the rename
        (
            "cancelling",
            {"reason": "no longer needed", "requestor": "olive"},
            {"reason": "no longer needed", "requestor": "olive"},
        ),
        ("cancelled", {"reason": "r", "requestor": "olive"}, {"reason": "r", "requestor": "olive"}),
        ("preempting", {"reason": "room", "requestor": "root"}, {"requestor": "root"}),
        (
            "preempted",
            {"clusterId": "c1", "nodeName": "n1", "reason": "room", "requestor": "root"},
            {"cluster_id": "c1", "run_id": "01run", "reason": "room", "requestor": "root"},
        ),
        ("leased", {"cluster": "old", "node": "n", "pool": "p"}, {"cluster_id": "old"}),
    ],
)
def test_each_event_type_maps_to_its_message(type_, payload, expected):
    kind, message = one(stored(type_, payload, run_id="01run"))
    assert kind == type_
    assert (message.job_id, message.job_set_id, message.queue) == ("01job", "set-1", "demo")
    assert message.created.ToDatetime().replace(tzinfo=T0.tzinfo) == T0
    assert {name: getattr(message, name) for name in expected} == expected


def test_a_type_armada_has_no_message_for_is_left_out():
    known = stored("queued")
    unknown = stored("something_new")
    assert [m.id for m in event_messages([known, unknown])] == [str(known.id)]


def test_a_failed_event_carries_what_armadas_clients_read():
    kind, failed = one(
        stored(
            "failed",
            {
                "clusterId": "c1",
                "nodeName": "n1",
                "podName": "armada-01job-0",
                "podNamespace": "default",
                "retryable": True,
                "failureCategory": "oom",
                "failureSubcategory": "memory",
                "reason": "OOMKilled",
                "message": "container main used too much memory",
                "exitCode": 137,
                "exitCodes": {"main": 137, "sidecar": 0},
                "decision": "retry",
            },
            run_id="01run",
        )
    )
    assert kind == "failed"
    assert failed.retryable is True
    assert (failed.failure_category, failed.failure_subcategory) == ("oom", "memory")
    assert failed.reason == "OOMKilled" and failed.cause == event_pb2.OOM
    assert dict(failed.exit_codes) == {"main": 137, "sidecar": 0}
    assert (failed.cluster_id, failed.node_name, failed.pod_name, failed.pod_namespace) == (
        "c1",
        "n1",
        "armada-01job-0",
        "default",
    )
    statuses = {s.name: s for s in failed.container_statuses}
    assert statuses["main"].exitCode == 137
    assert statuses["main"].reason == "OOMKilled"
    assert statuses["main"].message == "container main used too much memory"
    assert statuses["main"].cause == event_pb2.OOM
    assert (statuses["sidecar"].exitCode, statuses["sidecar"].reason) == (0, "")


def test_a_failed_event_that_is_final_says_not_retryable_and_a_plain_error_is_error():
    _, failed = one(
        stored(
            "failed",
            {"retryable": False, "reason": "Error", "exitCode": 1, "exitCodes": {"main": 1}},
        )
    )
    assert failed.retryable is False and failed.cause == event_pb2.Error
    [status] = failed.container_statuses
    assert (status.name, status.exitCode, status.reason) == ("main", 1, "Error")


def test_an_old_failed_event_is_completed_from_its_run(queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    Run.objects.create(
        id="01run",
        job_id=job_id,
        executor="c1",
        node="n7",
        pool="default",
        state="failed",
        pod_name=f"armada-{job_id}-0",
        leased_at=T0,
        exit_code=3,
        exit_codes={"main": 3},
        reason="Error",
        message="exit 3",
        failure_category="flaky",
        failure_subcategory="",
    )
    # Written before failed events named their exit codes, with the old key names.
    event = stored(
        "failed",
        {"cluster": "c1", "node": "n7", "retryable": True, "failure_category": "flaky"},
        job_id=job_id,
        run_id="01run",
    )
    _, failed = one(event)
    assert dict(failed.exit_codes) == {"main": 3}
    assert (failed.node_name, failed.failure_category, failed.retryable) == ("n7", "flaky", True)
    [status] = failed.container_statuses
    assert (status.exitCode, status.message) == (3, "exit 3")


def test_a_submitted_event_carries_the_job(queue, owner):
    spec = job(annotations={"team": "ml"}, priority=4)
    spec["podSpec"]["nodeSelector"] = {"zone": "a"}
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec]), now=T0)
    event = Event.objects.get(job_id=job_id, type="submitted")
    kind, submitted = one(event)
    assert kind == "submitted"
    sent = submitted.job
    assert (sent.id, sent.queue, sent.job_set_id, sent.owner) == (job_id, "demo", "set-1", "olive")
    assert (sent.priority, sent.namespace) == (4.0, "default")
    assert dict(sent.annotations) == {"team": "ml"}
    assert dict(sent.required_node_labels) == {"zone": "a"}
    assert sent.pod_spec.containers[0].name == "main"
    assert sent.pod_spec.containers[0].resources.requests["memory"].string == "1Gi"
    assert sent.created.ToDatetime().replace(tzinfo=T0.tzinfo) == T0
    assert job_message(Job.objects.get(id=job_id)) == sent


def test_a_batch_costs_at_most_two_reads(queue, owner, django_assert_max_num_queries):
    ids = job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(30)]), now=T0)
    for i, job_id in enumerate(ids[:10]):
        Run.objects.create(
            id=f"01run{i:02d}", job_id=job_id, executor="c", node="n", pool="p", leased_at=T0
        )
        stored("failed", {"retryable": False}, job_id=job_id, run_id=f"01run{i:02d}")
    events = list(Event.objects.order_by("id"))
    assert len(events) == 70
    with django_assert_max_num_queries(2):
        messages = event_messages(events)
    assert len(messages) == 70
    # A batch without submitted or old failed events reads nothing at all.
    queued = [e for e in events if e.type == "queued"]
    with django_assert_max_num_queries(0):
        event_messages(queued)


@pytest.fixture
def fresh_policy_cache():
    """The scheduler's policy cache lives as long as the process: start from an empty one."""
    from armada.services.policy_cache import policy_cache

    policy_cache.__init__()
    yield
    policy_cache.__init__()


def test_a_job_failed_and_retried_by_a_policy_streams_retryable_then_final(
    settings, queue, owner, admin_user, fresh_policy_cache
):
    agent = fake_agent(
        settings,
        scheduling={"retryPolicy": {"enabled": True, "globalMaxRetries": 5}},
    )
    policy_create(
        actor=admin_user,
        data={"name": "twice", "retryLimit": 1, "defaultAction": "Retry"},
        now=at(0),
    )
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["twice"]}, now=at(0))
    spec = {
        "annotations": {FAKE + "exitCode": "3", FAKE + "duration": "1s"},
        "podSpec": {"containers": [container()]},
    }
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(0))
    for t in range(1, 12):
        scheduler_cycle(now=at(t))
        agent.tick(at(t + 0.5))
    messages = event_messages(Event.objects.filter(job_id=job_id).order_by("id"))
    failed = [m.message.failed for m in messages if m.message.WhichOneof("events") == "failed"]
    assert [f.retryable for f in failed] == [True, False]
    for f in failed:
        assert dict(f.exit_codes) == {"main": 3}
        assert f.reason == "Error" and f.cluster_id == "test" and f.node_name == "n"
        assert [(s.name, s.exitCode) for s in f.container_statuses] == [("main", 3)]
