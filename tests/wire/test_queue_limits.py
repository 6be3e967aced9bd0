"""A queue's ``resource_limits_by_priority_class_name`` on Armada's wire API: carried both
ways by CreateQueue, UpdateQueue, GetQueue and GetQueues (in the registered functions, through
``armada_client`` over a real gRPC server, and through the REST gateway in Armada's Go JSON),
and a bad value INVALID_ARGUMENT naming its path, writing nothing."""

from __future__ import annotations

import json

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from armada.models import Queue
from armada.services.errors import ValidationFailed
from armada.wire.errors import wire_error
from tests.queue_limits import EXAMPLE, LIMITS, PC, two_pools
from tests.wire.gateway_calls import JSON, body, post
from tests.wire.queue_calls import Q, call, fields_of

pytestmark = pytest.mark.django_db

Limits = submit_pb2.PriorityClassResourceLimits
PoolLimits = submit_pb2.PriorityClassPoolResourceLimits

# EXAMPLE as Armada's message.
MESSAGE_LIMITS = {
    PC: Limits(
        maximum_resource_fraction={"cpu": 0.3, "memory": 0.3},
        maximum_resource_fraction_by_pool={
            "gpu-pool": PoolLimits(maximum_resource_fraction={"cpu": 0.1})
        },
    )
}


@pytest.fixture(autouse=True)
def _pools(settings):
    two_pools(settings)


def stored(name: str = "a") -> dict:
    return Queue.objects.get(name=name).resource_limits_by_priority_class_name


def get(user, name: str = "a") -> submit_pb2.Queue:
    return call("GetQueue", user, submit_pb2.QueueGetRequest(name=name))


def test_create_stores_and_get_returns_them(admin_user):
    call(
        "CreateQueue",
        admin_user,
        Q(name="a", resource_limits_by_priority_class_name=MESSAGE_LIMITS),
    )
    assert stored() == EXAMPLE
    got = get(admin_user)
    assert dict(got.resource_limits_by_priority_class_name) == MESSAGE_LIMITS
    assert got == Q(
        name="a",
        priority_factor=1.0,
        user_owners=[admin_user.username],
        resource_limits_by_priority_class_name=MESSAGE_LIMITS,
    )


def test_update_replaces_them_as_the_whole_queue_is_replaced(admin_user):
    call(
        "CreateQueue",
        admin_user,
        Q(name="a", resource_limits_by_priority_class_name=MESSAGE_LIMITS),
    )
    only_default = {"armada-default": Limits(maximum_resource_fraction={"memory": 0.5})}
    call(
        "UpdateQueue", admin_user, Q(name="a", resource_limits_by_priority_class_name=only_default)
    )
    assert stored() == {
        "armada-default": {
            "maximumResourceFraction": {"memory": 0.5},
            "maximumResourceFractionByPool": {},
        }
    }
    call("UpdateQueue", admin_user, Q(name="a", priority_factor=2))  # a field left out is reset
    assert stored() == {} and not get(admin_user).resource_limits_by_priority_class_name


def test_an_empty_class_entry_is_kept(admin_user):
    call(
        "CreateQueue",
        admin_user,
        Q(name="a", resource_limits_by_priority_class_name={PC: Limits()}),
    )
    assert stored() == {PC: {"maximumResourceFraction": {}, "maximumResourceFractionByPool": {}}}
    assert dict(get(admin_user).resource_limits_by_priority_class_name) == {PC: Limits()}


AT = f"{LIMITS}.{PC}"
BAD = [
    (
        "over-one",
        {PC: Limits(maximum_resource_fraction={"cpu": 1.5})},
        f"{AT}.maximumResourceFraction.cpu",
    ),
    (
        "nan",
        {PC: Limits(maximum_resource_fraction={"cpu": float("nan")})},
        f"{AT}.maximumResourceFraction.cpu",
    ),
    (
        "infinite",
        {PC: Limits(maximum_resource_fraction={"gpu": float("inf")})},
        f"{AT}.maximumResourceFraction.gpu",
    ),
    (
        "empty-resource",
        {PC: Limits(maximum_resource_fraction={"": 0.5})},
        f"{AT}.maximumResourceFraction",
    ),
    ("unknown-class", {"armada-urgent": Limits()}, f"{LIMITS}.armada-urgent"),
    ("empty-class", {"": Limits()}, LIMITS),
    (
        "unknown-pool",
        {PC: Limits(maximum_resource_fraction_by_pool={"cpu-pool": PoolLimits()})},
        f"{AT}.maximumResourceFractionByPool.cpu-pool",
    ),
    (
        "pool-negative",
        {
            PC: Limits(
                maximum_resource_fraction_by_pool={
                    "gpu-pool": PoolLimits(maximum_resource_fraction={"cpu": -1})
                }
            )
        },
        f"{AT}.maximumResourceFractionByPool.gpu-pool.maximumResourceFraction.cpu",
    ),
]


@pytest.mark.parametrize("method", ["CreateQueue", "UpdateQueue"])
@pytest.mark.parametrize(("limits", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_value_is_invalid_argument_naming_it_and_writes_nothing(
    admin_user, method, limits, field
):
    if method == "UpdateQueue":
        call(
            "CreateQueue",
            admin_user,
            Q(name="a", resource_limits_by_priority_class_name=MESSAGE_LIMITS),
        )
    with pytest.raises(ValidationFailed) as raised:
        call(
            method,
            admin_user,
            Q(name="a", priority_factor=3, resource_limits_by_priority_class_name=limits),
        )
    assert fields_of(raised.value) == {field}
    error = wire_error(raised.value)
    assert error.code.name == "INVALID_ARGUMENT" and field in error.message
    if method == "CreateQueue":
        assert not Queue.objects.exists()
    else:
        assert stored() == EXAMPLE and Queue.objects.get(name="a").priority_factor == 1.0


# --- armada_client over a real gRPC server ----------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_armada_client_creates_reads_and_updates_them(serve, admin_user):
    from tests.e2e.conftest import authenticated_channel
    from tests.wire.grpc_server import basic

    server = serve()
    channel = authenticated_channel(
        server.target, dict(basic("root", "root-password"))["authorization"]
    )
    try:
        client = ArmadaClient(channel)
        client.create_queue(
            Q(name="a", priority_factor=1, resource_limits_by_priority_class_name=MESSAGE_LIMITS)
        )
        assert dict(client.get_queue("a").resource_limits_by_priority_class_name) == MESSAGE_LIMITS
        client.create_queue(Q(name="b", priority_factor=1))
        listed = {q.name: q for q in client.get_queues()}
        assert dict(listed["a"].resource_limits_by_priority_class_name) == MESSAGE_LIMITS
        assert not listed["b"].resource_limits_by_priority_class_name
        with pytest.raises(grpc.RpcError) as raised:
            client.update_queue(
                Q(name="a", resource_limits_by_priority_class_name={"armada-urgent": Limits()})
            )
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert f"{LIMITS}.armada-urgent: unknown priority class" in raised.value.details()
        assert stored() == EXAMPLE
        client.update_queue(Q(name="a", priority_factor=1))
        assert not client.get_queue("a").resource_limits_by_priority_class_name
    finally:
        channel.close()


# --- the REST gateway -------------------------------------------------------------------------


def test_the_gateway_takes_and_shows_them_in_armadas_json(client):
    sent = {
        "name": "a",
        LIMITS: {
            PC: {
                "maximumResourceFraction": {"cpu": 0.3, "memory": 1},
                "maximumResourceFractionByPool": {
                    "gpu-pool": {"maximumResourceFraction": {"cpu": 0.1}}
                },
            },
            "armada-default": {"maximumResourceFractionByPool": {"default": {}}},
        },
    }
    assert post(client, "/v1/queue", sent).status_code == 200
    shown = body(client.get("/v1/queue/a"))
    # Go's omitempty: empty maps are left out; a set message is written even when empty.
    assert shown[LIMITS] == {
        "armada-default": {"maximumResourceFractionByPool": {"default": {}}},
        PC: {
            "maximumResourceFraction": {"cpu": 0.3, "memory": 1},
            "maximumResourceFractionByPool": {
                "gpu-pool": {"maximumResourceFraction": {"cpu": 0.1}}
            },
        },
    }
    assert type(shown[LIMITS][PC]["maximumResourceFraction"]["memory"]) is int  # Go writes 1


def test_the_gateway_leaves_out_no_limits_and_refuses_bad_ones(client):
    assert post(client, "/v1/queue", {"name": "a"}).status_code == 200
    assert LIMITS not in body(client.get("/v1/queue/a"))
    response = client.put(
        "/v1/queue/a",
        json.dumps({LIMITS: {PC: {"maximumResourceFraction": {"cpu": 2}}}}),
        content_type=JSON,
    )
    assert response.status_code == 400
    assert body(response)["code"] == 3  # INVALID_ARGUMENT
    assert (
        f"{AT}.maximumResourceFraction.cpu: must be a number from 0 to 1"
        in body(response)["message"]
    )
    assert stored() == {}
