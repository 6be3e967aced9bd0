"""Armada's queue calls that create, update, delete and get queues, called as the transports
call them (the registered function with a ``Call`` and a message): each call's success,
refusals (permission, not found, already exists, failed precondition, invalid argument naming
the field in Armada's spelling and writing nothing) and the batch calls' per-queue failures."""

from __future__ import annotations

import pytest
from armada_client.armada import submit_pb2
from google.protobuf import empty_pb2

from armada.models import Queue
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
from armada.wire.registry import load_operations
from tests.conftest import T0, job_file
from tests.wire.queue_calls import Q, call, fields_of

pytestmark = pytest.mark.django_db


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
    ("resource-limit-over-one", Q(name="a", resource_limits={"cpu": 1.5}), "resourceLimits.cpu"),
    ("resource-limit-negative", Q(name="a", resource_limits={"gpu": -0.1}), "resourceLimits.gpu"),
    (
        "resource-limits-by-unknown-priority-class",
        Q(
            name="a",
            resource_limits_by_priority_class_name={
                "armada-urgent": submit_pb2.PriorityClassResourceLimits(
                    maximum_resource_fraction={"cpu": 0.5}
                )
            },
        ),
        "resourceLimitsByPriorityClassName.armada-urgent",
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


def test_every_problem_is_named_at_once_with_the_messages_own(admin_user):
    limits = {
        "armada-default": submit_pb2.PriorityClassResourceLimits(
            maximum_resource_fraction={"cpu": 1.5}
        )
    }
    with pytest.raises(ValidationFailed) as raised:
        call(
            "CreateQueue",
            admin_user,
            Q(
                name="a",
                priority_factor=0.1,
                labels_deprecated=["team"],
                resource_limits_by_priority_class_name=limits,
            ),
        )
    assert fields_of(raised.value) == {
        "labelsDeprecated[0]",
        "resourceLimitsByPriorityClassName.armada-default.maximumResourceFraction.cpu",
        "priorityFactor",
    }


@pytest.mark.parametrize("method", ["CreateQueue", "UpdateQueue"])
def test_deprecated_resource_limits_are_accepted_ignored_and_logged(admin_user, method, caplog):
    """Armada's example queues carry ``resourceLimits``, which Armada ignores: so do we, and
    say so in the log."""
    if method == "UpdateQueue":
        call("CreateQueue", admin_user, Q(name="a"))
    with caplog.at_level("WARNING", logger="armada.services.queues"):
        call(method, admin_user, Q(name="a", priority_factor=2, resource_limits={"cpu": 0.2}))
    queue = Queue.objects.get(name="a")
    assert queue.priority_factor == 2
    got = call("GetQueue", admin_user, submit_pb2.QueueGetRequest(name="a"))
    assert not got.resource_limits
    assert any(
        "resourceLimits: is deprecated and ignored" in r.getMessage() and "'a'" in r.getMessage()
        for r in caplog.records
    )


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


def test_get_queue_answers_with_every_field(admin_user, member, outsider):
    """Every caller reads the queue; who may act on it only one who may watch it (``mo``,
    granted ``watch``) or change queues: to others its owners and permissions are empty."""
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
    get = submit_pb2.QueueGetRequest(name="team-a")
    assert call("GetQueue", member, get) == message
    assert call("api.QueueService/GetQueue", admin_user, get) == message
    shown_to_outsider = Q()
    shown_to_outsider.CopyFrom(message)
    for field in ("user_owners", "group_owners", "permissions"):
        shown_to_outsider.ClearField(field)
    assert call("GetQueue", outsider, get) == shown_to_outsider
    outsider.user_permissions.add(*_perms("create_queue"))
    outsider = type(outsider).objects.get(pk=outsider.pk)  # no cached permissions
    assert call("GetQueue", outsider, get) == message


def test_get_queue_of_a_missing_queue_is_not_found(admin_user):
    with pytest.raises(NotFound, match="ghost"):
        call("api.Submit/GetQueue", admin_user, submit_pb2.QueueGetRequest(name="ghost"))


def test_get_queue_needs_a_name(admin_user):
    with pytest.raises(ValidationFailed) as raised:
        call("GetQueue", admin_user, submit_pb2.QueueGetRequest())
    assert fields_of(raised.value) == {"name"}


def _perms(*codenames):
    from django.contrib.auth.models import Permission

    return list(Permission.objects.filter(codename__in=codenames))
