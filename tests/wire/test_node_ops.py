"""Armada's ``api.Node`` (CancelOnNode, PreemptOnNode) over gRPC and its gateway paths
(``POST /v1/node/cancel|preempt/{name}``): the jobs on exactly that node are stopped, by the
node service's rules (permission per queue, all or nothing); an empty ``executor`` is the one
executor with a node of that name; bad input names the field; unknown things are NOT_FOUND."""

from __future__ import annotations

import grpc
import pytest
from django.test import Client

from armada.models import Event, Run
from armada.wire.node_executor_proto import NODE_SERVICE
from tests.wire.cluster_world import ACTIVE, call, on, stopping, two_executors
from tests.wire.gateway_calls import body, post
from tests.wire.grpc_server import basic, failure

pytestmark = pytest.mark.django_db

ROOT = basic("root", "root-password")
OLIVE = basic("olive", "olive-password")
OTTO = basic("otto", "otto-password")


@pytest.fixture
def world(settings, queue, owner, admin_user, outsider):
    return two_executors(settings, owner)


def as_user(username: str) -> Client:
    client = Client(HTTP_HOST="localhost")
    client.login(username=username, password=f"{username}-password")
    return client


# --- gRPC -------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the server's threads read what the test wrote
def test_cancel_on_node_stops_exactly_the_jobs_on_that_node(world, serve):
    server = serve()
    target, elsewhere = on("east", "east-only"), on("east", "shared") + on("west")
    assert target and elsewhere
    call(server, NODE_SERVICE, "CancelOnNode", ROOT, name="east-only", executor="east")
    assert stopping("cancel") == target
    for job_id in target:
        assert Event.objects.filter(job_id=job_id, type="cancelling").exists()
    # Asking again is answered the same and writes nothing more.
    events = Event.objects.count()
    call(server, NODE_SERVICE, "CancelOnNode", ROOT, name="east-only", executor="east")
    assert Event.objects.count() == events


@pytest.mark.django_db(transaction=True)
def test_preempt_on_node_finds_the_executor_by_the_nodes_name(world, serve):
    server = serve()
    target = on("east", "east-only")
    call(server, NODE_SERVICE, "PreemptOnNode", ROOT, name="east-only")
    assert stopping("preempt") == target


@pytest.mark.django_db(transaction=True)
def test_queues_and_priority_classes_narrow_the_selection(world, serve):
    server = serve()
    run = Run.objects.get(job__priority_class="armada-preemptible", state__in=ACTIVE)
    assert len(on(run.executor, run.node)) == 2  # the preemptible job and another
    call(
        server,
        NODE_SERVICE,
        "PreemptOnNode",
        ROOT,
        name=run.node,
        executor=run.executor,
        queues=["demo"],
        priorityClasses=["armada-preemptible"],
    )
    assert stopping() == [run.job_id]


@pytest.mark.django_db(transaction=True)
def test_permission_is_the_queue_verb_of_every_selected_job(world, serve):
    server = serve()
    denied = failure(
        lambda: call(server, NODE_SERVICE, "CancelOnNode", OTTO, name="shared", executor="east")
    )
    assert denied.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "cancel" in denied.details() and "demo" in denied.details()
    assert stopping() == []
    # The queue's owner may stop their own jobs on the node.
    call(server, NODE_SERVICE, "CancelOnNode", OLIVE, name="shared", executor="east")
    assert stopping("cancel") == on("east", "shared")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("fields", "code", "named"),
    [
        ({"executor": "east"}, grpc.StatusCode.INVALID_ARGUMENT, "name: is required"),
        ({"name": "shared"}, grpc.StatusCode.INVALID_ARGUMENT, "executor"),  # east and west
        ({"name": "nowhere"}, grpc.StatusCode.INVALID_ARGUMENT, "executor"),
        ({"name": "shared", "executor": "north"}, grpc.StatusCode.NOT_FOUND, "north"),
        ({"name": "east-only", "executor": "west"}, grpc.StatusCode.NOT_FOUND, "east-only"),
        ({"name": "shared", "executor": "east", "queues": [""]}, None, "queues[0]"),
        ({"name": "shared", "executor": "east", "queues": ["a\x00"]}, None, "queues[0]"),
        ({"name": "shared", "executor": "east", "queues": ["nope"]}, None, "nope"),
        ({"name": "shared", "executor": "east", "priorityClasses": ["gold"]}, None, "gold"),
    ],
)
def test_bad_requests_name_what_is_wrong_and_change_nothing(world, serve, fields, code, named):
    server = serve()
    refused = failure(lambda: call(server, NODE_SERVICE, "CancelOnNode", ROOT, **fields))
    if code is None:  # a queue that does not exist is NOT_FOUND; a malformed entry INVALID
        code = grpc.StatusCode.NOT_FOUND if named == "nope" else grpc.StatusCode.INVALID_ARGUMENT
    assert refused.code() == code, refused.details()
    assert named in refused.details()
    if named == "executor" and fields["name"] == "shared":
        assert "east, west" in refused.details()
    if named == "gold":
        assert "priorityClasses[0]" in refused.details()
    assert stopping() == []


# --- the gateway ------------------------------------------------------------------------------


def test_the_gateway_paths_answer_empty_and_stop_the_jobs(world):
    root = as_user("root")
    target = on("east", "east-only")
    response = post(root, "/v1/node/cancel/east-only", {"executor": "east", "queues": ["demo"]})
    assert response.status_code == 200, response.content
    assert body(response) == {}
    assert stopping("cancel") == target
    # Armada's clients send the name in the body too; the path's wins.
    response = post(root, "/v1/node/preempt/shared", {"name": "other", "executor": "west"})
    assert response.status_code == 200, response.content
    assert stopping("preempt") == on("west", "shared")


@pytest.mark.parametrize(
    ("path", "data", "status", "named"),
    [
        ("/v1/node/cancel/shared", {}, 400, "executor"),
        ("/v1/node/cancel/shared", {"executor": "east", "queues": "demo"}, 400, "queues"),
        ("/v1/node/preempt/shared", {"executor": "east", "priorityClasses": [1]}, 400, "priority"),
        ("/v1/node/cancel/shared", {"executor": "north"}, 404, "north"),
        ("/v1/node/preempt/gone", {"executor": "east"}, 404, "gone"),
    ],
)
def test_the_gateway_refuses_bad_requests_naming_the_field(world, path, data, status, named):
    response = post(as_user("root"), path, data)
    assert response.status_code == status, response.content
    assert named in body(response)["message"]
    assert stopping() == []


def test_the_gateway_refuses_callers_without_the_verb(world):
    response = post(as_user("otto"), "/v1/node/preempt/shared", {"executor": "east"})
    assert response.status_code == 403
    assert body(response)["code"] == 7 and "preempt" in body(response)["message"]
    assert Client().post("/v1/node/cancel/shared").status_code == 401
    assert stopping() == []
