"""Armada's queue calls, called as the transports call them (the registered function with a
``Call`` and a message): each call's success, refusals (permission, not found, already
exists, failed precondition, invalid argument naming the field in Armada's spelling and
writing nothing), the batch calls' per-queue failures, the streamed listing, and cancel and
preempt on a queue."""

from __future__ import annotations

import asyncio

import pytest
from armada_client.armada import submit_pb2
from asgiref.sync import sync_to_async
from django.db import connections
from google.protobuf import empty_pb2

from armada.models import Job, Queue, Run
from armada.services.errors import (
    AlreadyExists,
    FailedPrecondition,
    NotFound,
    PermissionDenied,
    ValidationFailed,
)
from armada.services.policies import policy_create
from armada.services.submit import job_submit
from armada.wire.errors import wire_error
from armada.wire.registry import Call, load_operations
from tests.conftest import T0, at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db
Q = submit_pb2.Queue


def call(name: str, user, message):
    """The operation ``name`` (``api.QueueService/...`` unless a service is named)."""
    full = name if "/" in name else f"api.QueueService/{name}"
    return load_operations()[full].func(Call(actor=user, now=T0), message)


def fields_of(error: ValidationFailed) -> set[str]:
    return {e.field for e in error.errors}


# --- both services ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    [
        "CreateQueue",
        "CreateQueues",
        "UpdateQueue",
        "UpdateQueues",
        "DeleteQueue",
        "GetQueue",
        "GetQueues",
    ],
)
def test_the_queue_calls_are_served_on_submit_and_queue_service_alike(method):
    operations = load_operations()
    assert operations[f"api.Submit/{method}"].func is operations[f"api.QueueService/{method}"].func


# --- create -----------------------------------------------------------------------------------


def test_create_queue_stores_every_field(admin_user):
    policy_create(
        actor=admin_user,
        data={"name": "p", "retryLimit": 1, "defaultAction": "Fail"},
        now=T0,
    )
    message = Q(
        name="team-a",
        priority_factor=2.5,
        user_owners=["olive"],
        group_owners=["ml"],
        permissions=[
            Q.Permissions(
                subjects=[Q.Permissions.Subject(kind="Group", name="submitters")],
                verbs=["submit", "watch"],
            )
        ],
        cordoned=True,
        labels={"team": "a"},
        labels_deprecated=["tier=gold", "team=ignored"],
        retry_policies=["p"],
    )
    assert call("CreateQueue", admin_user, message) == empty_pb2.Empty()
    queue = Queue.objects.get(name="team-a")
    assert queue.priority_factor == 2.5
    assert (queue.owners, queue.group_owners) == (["olive"], ["ml"])
    assert queue.permissions == [
        {"subjects": [{"kind": "Group", "name": "submitters"}], "verbs": ["submit", "watch"]}
    ]
    assert queue.cordoned is True
    assert queue.labels == {"team": "a", "tier": "gold"}  # the map wins over the deprecated list
    assert queue.retry_policies == ["p"]
    assert queue.created_at == T0


def test_a_queue_created_with_no_owner_and_no_factor_is_the_creators_with_factor_one(owner):
    owner.user_permissions.add(*_perms("create_queue"))
    call("CreateQueue", owner, Q(name="mine"))
    queue = Queue.objects.get(name="mine")
    assert queue.owners == ["olive"] and queue.priority_factor == 1.0


def test_create_queue_of_a_taken_name_is_already_exists(admin_user, queue):
    with pytest.raises(AlreadyExists) as raised:
        call("api.Submit/CreateQueue", admin_user, Q(name="demo", priority_factor=3))
    assert wire_error(raised.value).code.name == "ALREADY_EXISTS"
    assert Queue.objects.get(name="demo").priority_factor == 1.0


def test_create_queue_needs_the_create_queue_permission(outsider):
    with pytest.raises(PermissionDenied, match="create_queue"):
        call("CreateQueue", outsider, Q(name="nope", priority_factor=1))
    assert not Queue.objects.exists()


BAD_QUEUES = [
    # (id, message, the field named)
    ("no-name", Q(priority_factor=1), "name"),
    ("bad-name", Q(name="Team_A"), "name"),
    ("factor-below-one", Q(name="a", priority_factor=0.5), "priorityFactor"),
    ("factor-nan", Q(name="a", priority_factor=float("nan")), "priorityFactor"),
    ("empty-owner", Q(name="a", user_owners=[""]), "userOwners"),
    ("empty-group-owner", Q(name="a", group_owners=[""]), "groupOwners"),
    (
        "bad-subject-kind",
        Q(
            name="a",
            permissions=[
                Q.Permissions(
                    subjects=[Q.Permissions.Subject(kind="Robot", name="r")], verbs=["submit"]
                )
            ],
        ),
        "permissions[0].subjects[0]",
    ),
    (
        "bad-verb",
        Q(
            name="a",
            permissions=[
                Q.Permissions(
                    subjects=[Q.Permissions.Subject(kind="User", name="u")], verbs=["fly"]
                )
            ],
        ),
        "permissions[0].verbs",
    ),
    ("bad-label-key", Q(name="a", labels={"bad key": "x"}), "labels[bad key]"),
    ("bad-label-value", Q(name="a", labels={"team": "a b"}), "labels[team]"),
    (
        "deprecated-label-not-key-value",
        Q(name="a", labels_deprecated=["team"]),
        "labelsDeprecated[0]",
    ),
    (
        "bad-deprecated-label-value",
        Q(name="a", labels_deprecated=["ok=1", "team=a b"]),
        "labelsDeprecated[1]",
    ),
    ("unknown-policy", Q(name="a", retry_policies=["missing"]), "retryPolicies"),
    ("resource-limits", Q(name="a", resource_limits={"cpu": 0.5}), "resourceLimits"),
    (
        "resource-limits-by-priority-class",
        Q(
            name="a",
            resource_limits_by_priority_class_name={
                "armada-default": submit_pb2.PriorityClassResourceLimits(
                    maximum_resource_fraction={"cpu": 0.5}
                )
            },
        ),
        "resourceLimitsByPriorityClassName",
    ),
]


@pytest.mark.parametrize(
    ("message", "field"), [b[1:] for b in BAD_QUEUES], ids=[b[0] for b in BAD_QUEUES]
)
def test_a_bad_queue_is_invalid_argument_naming_the_field_and_writes_nothing(
    admin_user, message, field
):
    with pytest.raises(ValidationFailed) as raised:
        call("CreateQueue", admin_user, message)
    assert field in fields_of(raised.value)
    error = wire_error(raised.value)
    assert error.code.name == "INVALID_ARGUMENT" and field in error.message
    assert not Queue.objects.exists()


def test_every_problem_is_named_at_once_with_the_unsupported_ones(admin_user):
    with pytest.raises(ValidationFailed) as raised:
        call(
            "CreateQueue", admin_user, Q(name="a", priority_factor=0.1, resource_limits={"cpu": 1})
        )
    assert fields_of(raised.value) == {"resourceLimits", "priorityFactor"}


# --- batch create and update ------------------------------------------------------------------


def test_create_queues_creates_the_good_ones_and_lists_the_failed_with_their_error(
    admin_user, queue
):
    response = call(
        "CreateQueues",
        admin_user,
        submit_pb2.QueueList(
            queues=[Q(name="one"), Q(name="demo"), Q(name="Bad"), Q(name="two", priority_factor=2)]
        ),
    )
    failed = {f.queue.name: f.error for f in response.failed_queues}
    assert set(failed) == {"demo", "Bad"}
    assert failed["demo"].startswith("rpc error: code = AlreadyExists desc = ")
    assert failed["Bad"].startswith(
        "rpc error: code = InvalidArgument desc = invalid request: name"
    )
    assert sorted(Queue.objects.values_list("name", flat=True)) == ["demo", "one", "two"]


def test_create_queues_without_permission_lists_each_as_denied(outsider):
    response = call(
        "api.Submit/CreateQueues", outsider, submit_pb2.QueueList(queues=[Q(name="a"), Q(name="b")])
    )
    assert [f.queue.name for f in response.failed_queues] == ["a", "b"]
    assert all("code = PermissionDenied" in f.error for f in response.failed_queues)
    assert not Queue.objects.exists()


def test_update_queues_updates_the_good_ones(admin_user, queue):
    response = call(
        "UpdateQueues",
        admin_user,
        submit_pb2.QueueList(queues=[Q(name="demo", priority_factor=4), Q(name="ghost")]),
    )
    assert [(f.queue.name, f.error.split(" desc")[0]) for f in response.failed_queues] == [
        ("ghost", "rpc error: code = NotFound")
    ]
    assert Queue.objects.get(name="demo").priority_factor == 4.0


# --- update -----------------------------------------------------------------------------------


def test_update_queue_replaces_the_whole_queue(admin_user, queue):
    Queue.objects.filter(name="demo").update(labels={"old": "1"}, cordoned=True)
    call("UpdateQueue", admin_user, Q(name="demo", priority_factor=3, user_owners=["olive"]))
    stored = Queue.objects.get(name="demo")
    assert stored.priority_factor == 3.0 and stored.owners == ["olive"]
    # What the message leaves out is reset, as Armada's update replaces the queue.
    assert (stored.labels, stored.cordoned, stored.permissions) == ({}, False, [])


def test_update_queue_of_a_missing_queue_is_not_found(admin_user):
    with pytest.raises(NotFound):
        call("UpdateQueue", admin_user, Q(name="ghost", priority_factor=2))
    assert not Queue.objects.exists()


def test_update_queue_needs_the_create_queue_permission(owner, queue):
    with pytest.raises(PermissionDenied):
        call("api.Submit/UpdateQueue", owner, Q(name="demo", priority_factor=9))
    assert Queue.objects.get(name="demo").priority_factor == 1.0


def test_a_bad_update_names_the_field_and_changes_nothing(admin_user, queue):
    with pytest.raises(ValidationFailed) as raised:
        call(
            "UpdateQueue",
            admin_user,
            Q(name="demo", user_owners=["x", ""], labels_deprecated=["a"]),
        )
    assert fields_of(raised.value) == {"userOwners", "labelsDeprecated[0]"}
    assert Queue.objects.get(name="demo").owners == ["olive"]


# --- delete -----------------------------------------------------------------------------------


def test_delete_queue(admin_user, queue):
    assert (
        call("DeleteQueue", admin_user, submit_pb2.QueueDeleteRequest(name="demo"))
        == empty_pb2.Empty()
    )
    assert not Queue.objects.exists()


def test_deleting_a_queue_that_does_not_exist_succeeds_as_in_armada(admin_user):
    call("api.Submit/DeleteQueue", admin_user, submit_pb2.QueueDeleteRequest(name="ghost"))


def test_deleting_a_queue_with_unfinished_jobs_is_failed_precondition(admin_user, queue, owner):
    job_submit(actor=owner, data=job_file(), now=T0)
    with pytest.raises(FailedPrecondition, match="1 unfinished job"):
        call("DeleteQueue", admin_user, submit_pb2.QueueDeleteRequest(name="demo"))
    assert Queue.objects.filter(name="demo").exists()


def test_delete_queue_needs_its_permission_even_for_a_missing_queue(owner, queue):
    for name in ("demo", "ghost"):
        with pytest.raises(PermissionDenied, match="delete_queue"):
            call("DeleteQueue", owner, submit_pb2.QueueDeleteRequest(name=name))
    assert Queue.objects.filter(name="demo").exists()


def test_delete_queue_needs_a_name(admin_user):
    with pytest.raises(ValidationFailed) as raised:
        call("DeleteQueue", admin_user, submit_pb2.QueueDeleteRequest())
    assert fields_of(raised.value) == {"name"}


# --- get --------------------------------------------------------------------------------------


def test_get_queue_answers_with_every_field(admin_user, outsider):
    message = Q(
        name="team-a",
        priority_factor=2,
        user_owners=["olive"],
        group_owners=["ml"],
        permissions=[
            Q.Permissions(subjects=[Q.Permissions.Subject(kind="User", name="mo")], verbs=["watch"])
        ],
        cordoned=True,
        labels={"team": "a"},
    )
    call("CreateQueue", admin_user, message)
    assert call("GetQueue", outsider, submit_pb2.QueueGetRequest(name="team-a")) == message


def test_get_queue_of_a_missing_queue_is_not_found(admin_user):
    with pytest.raises(NotFound, match="ghost"):
        call("api.Submit/GetQueue", admin_user, submit_pb2.QueueGetRequest(name="ghost"))


def test_get_queue_needs_a_name(admin_user):
    with pytest.raises(ValidationFailed) as raised:
        call("GetQueue", admin_user, submit_pb2.QueueGetRequest())
    assert fields_of(raised.value) == {"name"}


# --- the streamed listing ---------------------------------------------------------------------


async def _collect(stream) -> list[submit_pb2.StreamingQueueMessage]:
    return [message async for message in stream]


def listing(user, num: int = 0) -> list[submit_pb2.StreamingQueueMessage]:
    operation = load_operations()["api.Submit/GetQueues"]
    stream = operation.func(Call(actor=user, now=T0), submit_pb2.StreamingQueueGetRequest(num=num))
    return asyncio.run(_collect(stream))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("count", "num", "expected"), [(0, 0, 0), (5, 0, 5), (5, 3, 3), (7, 3, 3), (3, 5, 3), (7, 0, 7)]
)
def test_get_queues_streams_the_queues_in_name_order_then_the_end(
    monkeypatch, admin_user, count, num, expected
):
    from armada.wire import queue_ops

    monkeypatch.setattr(queue_ops, "PAGE", 2)  # several pages
    for i in reversed(range(count)):
        call("CreateQueue", admin_user, Q(name=f"q{i}", labels={"i": str(i)}))
    try:
        messages = listing(admin_user, num)
    finally:
        asyncio.run(sync_to_async(connections.close_all)())
    assert [m.WhichOneof("event") for m in messages] == ["queue"] * expected + ["end"]
    assert [m.queue.name for m in messages[:-1]] == [f"q{i}" for i in range(expected)]
    assert messages[0 if expected else -1].queue.labels == ({"i": "0"} if expected else {})


@pytest.mark.django_db(transaction=True)
def test_get_queues_holds_no_connection_between_pages(monkeypatch, admin_user):
    """Each page is read on a pooled connection that is handed back before the page is
    sent: between messages the stream has no connection out of the pool."""
    from django.db import connection

    from armada.wire import queue_ops

    if getattr(connection, "pool", None) is None:
        pytest.skip("counts the connections taken from the pool")
    monkeypatch.setattr(queue_ops, "PAGE", 1)
    for name in ("a", "b", "c"):
        call("CreateQueue", admin_user, Q(name=name))
    connection.close()  # this thread's own, back to the pool too

    def taken() -> int:
        stats = connection.pool.get_stats()
        return stats["pool_size"] - stats["pool_available"]

    seen = []

    async def run() -> None:
        stream = queue_ops.get_queues(
            Call(actor=admin_user, now=T0), submit_pb2.StreamingQueueGetRequest()
        )
        async for message in stream:
            seen.append((message.WhichOneof("event"), taken()))

    assert taken() == 0
    asyncio.run(run())
    assert seen == [("queue", 0), ("queue", 0), ("queue", 0), ("end", 0)]


# --- cordon, uncordon -------------------------------------------------------------------------


def test_cordon_and_uncordon_queue(admin_user, queue):
    call("CordonQueue", admin_user, submit_pb2.QueueCordonRequest(name="demo"))
    assert Queue.objects.get(name="demo").cordoned
    call("UncordonQueue", admin_user, submit_pb2.QueueUncordonRequest(name="demo"))
    assert not Queue.objects.get(name="demo").cordoned


def test_cordon_refusals(admin_user, owner, queue):
    with pytest.raises(NotFound, match="ghost"):
        call("CordonQueue", admin_user, submit_pb2.QueueCordonRequest(name="ghost"))
    with pytest.raises(PermissionDenied, match="cordon_queue"):
        call("CordonQueue", owner, submit_pb2.QueueCordonRequest(name="demo"))
    with pytest.raises(ValidationFailed) as raised:
        call("UncordonQueue", admin_user, submit_pb2.QueueUncordonRequest())
    assert fields_of(raised.value) == {"name"}
    assert not Queue.objects.get(name="demo").cordoned


# --- cancel and preempt on a queue ------------------------------------------------------------


@pytest.fixture
def running_and_queued(settings, queue, owner):
    """Job 0 running on the fake executor's node, job 1 queued (it does not fit beside it)."""
    from armada.services.scheduler import scheduler_cycle

    agent = fake_agent(settings, cpu="1")
    ids = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={"fake.armadaproject.io/duration": "1h"}), job()]),
        now=at(1),
    )
    scheduler_cycle(now=at(2))
    agent.tick(at(3))
    assert Job.objects.get(id=ids[0]).state == "running"
    assert Job.objects.get(id=ids[1]).state == "queued"
    return ids


def _states(ids):
    return [Job.objects.get(id=i).state for i in ids]


def test_cancel_on_queue_cancels_the_jobs_in_the_states_given(admin_user, running_and_queued):
    running, queued = running_and_queued
    call(
        "CancelOnQueue",
        admin_user,
        submit_pb2.QueueCancelRequest(name="demo", jobStates=[submit_pb2.QUEUED]),
    )
    assert _states([running, queued]) == ["running", "cancelled"]
    call(
        "CancelOnQueue",
        admin_user,
        submit_pb2.QueueCancelRequest(
            name="demo", jobStates=[submit_pb2.RUNNING, submit_pb2.PENDING]
        ),
    )
    assert Run.objects.get(job_id=running).stop_kind == "cancel"


def test_cancel_on_queue_filters_by_priority_class_and_pool(admin_user, running_and_queued):
    every = [submit_pb2.QUEUED, submit_pb2.RUNNING]
    call(
        "CancelOnQueue",
        admin_user,
        submit_pb2.QueueCancelRequest(
            name="demo", jobStates=every, priorityClasses=["armada-preemptible"]
        ),
    )
    assert _states(running_and_queued) == ["running", "queued"]  # both are armada-default


BAD_CANCELS = [
    ("no-states", submit_pb2.QueueCancelRequest(name="demo"), "jobStates"),
    (
        "terminal-state",
        submit_pb2.QueueCancelRequest(
            name="demo", jobStates=[submit_pb2.QUEUED, submit_pb2.SUCCEEDED]
        ),
        "jobStates[1]",
    ),
    (
        "unknown-enum-number",
        submit_pb2.QueueCancelRequest(name="demo", jobStates=[42]),
        "jobStates[0]",
    ),
    (
        "unknown-priority-class",
        submit_pb2.QueueCancelRequest(
            name="demo", jobStates=[submit_pb2.QUEUED], priorityClasses=["gold"]
        ),
        "priorityClasses[0]",
    ),
    (
        "unknown-pool",
        submit_pb2.QueueCancelRequest(name="demo", jobStates=[submit_pb2.QUEUED], pools=["", "x"]),
        "pools",
    ),
    ("no-name", submit_pb2.QueueCancelRequest(jobStates=[submit_pb2.QUEUED]), "name"),
]


@pytest.mark.parametrize(
    ("message", "field"), [b[1:] for b in BAD_CANCELS], ids=[b[0] for b in BAD_CANCELS]
)
def test_a_bad_cancel_on_queue_names_the_field_and_cancels_nothing(
    admin_user, running_and_queued, message, field
):
    with pytest.raises(ValidationFailed) as raised:
        call("CancelOnQueue", admin_user, message)
    assert field in fields_of(raised.value)
    assert _states(running_and_queued) == ["running", "queued"]
    assert not Run.objects.filter(stop_requested_at__isnull=False).exists()


def test_cancel_on_queue_refusals(member, running_and_queued):
    with pytest.raises(PermissionDenied, match="'demo'"):
        call(
            "CancelOnQueue",
            member,
            submit_pb2.QueueCancelRequest(name="demo", jobStates=[submit_pb2.QUEUED]),
        )
    with pytest.raises(NotFound, match="ghost"):
        call(
            "CancelOnQueue",
            member,
            submit_pb2.QueueCancelRequest(name="ghost", jobStates=[submit_pb2.QUEUED]),
        )
    assert _states(running_and_queued) == ["running", "queued"]


def test_preempt_on_queue_stops_the_running_jobs_only(owner, running_and_queued):
    running, queued = running_and_queued
    call("PreemptOnQueue", owner, submit_pb2.QueuePreemptRequest(name="demo", pools=["default"]))
    run = Run.objects.get(job_id=running)
    assert (run.stop_kind, run.stop_reason) == ("preempt", "preempted by an operator")
    assert _states([queued]) == ["queued"]


def test_preempt_on_queue_refusals(admin_user, member, running_and_queued):
    with pytest.raises(PermissionDenied):
        call("PreemptOnQueue", member, submit_pb2.QueuePreemptRequest(name="demo"))
    with pytest.raises(NotFound):
        call("PreemptOnQueue", admin_user, submit_pb2.QueuePreemptRequest(name="ghost"))
    with pytest.raises(ValidationFailed) as raised:
        call(
            "PreemptOnQueue",
            admin_user,
            submit_pb2.QueuePreemptRequest(name="demo", priorityClasses=["x"]),
        )
    assert fields_of(raised.value) == {"priorityClasses[0]"}
    assert not Run.objects.filter(stop_requested_at__isnull=False).exists()


def _perms(*codenames):
    from django.contrib.auth.models import Permission

    return list(Permission.objects.filter(codename__in=codenames))


# --- through the REST gateway -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_queue_and_policy_paths_of_the_gateway(admin_user, owner):
    """Armada's HTTP paths reach these operations with grpc-gateway's JSON, and the errors
    come back with their HTTP status."""
    import base64
    import json

    from django.test import AsyncClient

    auth = {"Authorization": "Basic " + base64.b64encode(b"root:root-password").decode()}

    async def go() -> list[tuple[int, object]]:
        client = AsyncClient()
        out = []

        async def send(method: str, path: str, data: object = None) -> None:
            kwargs = (
                {}
                if data is None
                else {"data": json.dumps(data), "content_type": "application/json"}
            )
            response = await getattr(client, method)(path, headers=auth, **kwargs)
            raw = (
                b"".join([c async for c in response.streaming_content])
                if response.streaming
                else response.content
            )
            lines = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
            out.append((response.status_code, lines[0] if len(lines) == 1 else lines))

        await send("post", "/v1/queue", {"name": "gw", "priorityFactor": 2, "labels": {"a": "b"}})
        await send("post", "/v1/queue", {"name": "gw"})
        await send("put", "/v1/queue/gw", {"priorityFactor": 3, "userOwners": ["olive"]})
        await send("get", "/v1/queue/gw")
        await send("get", "/v1/batched/queues")
        await send("post", "/v1/queue", {"name": "bad", "resourceLimits": {"cpu": 0.5}})
        await send(
            "post",
            "/v1/retry-policy",
            {
                "name": "p",
                "retryLimit": 2,
                "defaultAction": "RETRY_ACTION_FAIL",
                "rules": [
                    {
                        "action": "RETRY_ACTION_RETRY",
                        "onCategory": "oom",
                        "mutate": {"resources": {"memory": {"static": "1Gi"}}},
                    }
                ],
            },
        )
        await send("get", "/v1/retry-policy/p")
        await send("get", "/v1/retry-policies")
        await send("delete", "/v1/queue/gw")
        await send("delete", "/v1/queue/gw")
        await send("get", "/v1/queue/gw")
        return out

    try:
        answers = asyncio.run(go())
    finally:
        asyncio.run(sync_to_async(connections.close_all)())
    statuses = [status for status, _ in answers]
    assert statuses == [200, 409, 200, 200, 200, 400, 200, 200, 200, 200, 200, 404], answers
    # The update replaced the queue: its labels are gone (grpc-gateway leaves out empty fields).
    assert answers[3][1] == {"name": "gw", "priorityFactor": 3.0, "userOwners": ["olive"]}
    assert answers[1][1]["code"] == 6  # ALREADY_EXISTS
    listed = answers[4][1]
    assert [m["result"]["queue"]["name"] for m in listed[:-1]] == ["gw"]
    assert "end" in listed[-1]["result"]
    assert answers[5][1]["message"].startswith("invalid request: resourceLimits: is not supported")
    assert answers[7][1]["rules"][0]["mutate"]["resources"]["memory"]["static"] == "1Gi"
    assert [p["name"] for p in answers[8][1]["retryPolicies"]] == ["p"]
