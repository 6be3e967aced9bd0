"""Armada's ``api.Executor`` over gRPC and its gateway paths: cordon and uncordon
(UpsertExecutorSettings, DeleteExecutorSettings), cancel and preempt every job on an executor,
delete (retire) an executor. Armada's global permissions; bad input names the field and
changes nothing; an unknown executor is NOT_FOUND."""

from __future__ import annotations

import json

import grpc
import pytest
from django.test import Client

from armada.models import Executor, ExecutorCredential, Job, Node
from armada.wire.node_executor_proto import EXECUTOR_SERVICE
from tests.wire.cluster_world import call, grant, on, stopping, two_executors
from tests.wire.gateway_calls import JSON, body, post
from tests.wire.grpc_server import basic, failure

pytestmark = pytest.mark.django_db

ROOT = basic("root", "root-password")
OLIVE = basic("olive", "olive-password")
OTTO = basic("otto", "otto-password")
INVALID, NOT_FOUND = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND


@pytest.fixture
def world(settings, queue, owner, admin_user, outsider):
    return two_executors(settings, owner)


def as_user(username: str) -> Client:
    client = Client(HTTP_HOST="localhost")
    client.login(username=username, password=f"{username}-password")
    return client


def cordon_of(executor: str) -> tuple[bool, str]:
    found = Executor.objects.get(id=executor)
    return found.cordoned, found.cordon_reason


def ex(server, method: str, metadata, **fields):
    return call(server, EXECUTOR_SERVICE, method, metadata, **fields)


# --- gRPC: settings ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the server's threads read what the test wrote
def test_cordon_and_uncordon_as_armadactl_sends_them(world, serve, outsider):
    server = serve()
    ex(server, "UpsertExecutorSettings", ROOT, name="east", cordoned=True, cordonReason="disk")
    assert cordon_of("east") == (True, "disk")
    assert cordon_of("west") == (False, "")
    # armadactl's uncordon: the same call, not cordoned, no reason.
    ex(server, "UpsertExecutorSettings", ROOT, name="east", cordoned=False)
    assert cordon_of("east") == (False, "")
    # Deleting the settings: no settings means not cordoned.
    ex(server, "UpsertExecutorSettings", ROOT, name="west", cordoned=True, cordonReason="x")
    ex(server, "DeleteExecutorSettings", ROOT, name="west")
    assert cordon_of("west") == (False, "")
    ex(server, "DeleteExecutorSettings", ROOT, name="west")  # again: nothing to undo
    # update_executor_settings is enough.
    grant(outsider, "update_executor_settings")
    ex(server, "UpsertExecutorSettings", OTTO, name="east", cordoned=True, cordonReason="y")
    assert cordon_of("east") == (True, "y")


UPSERT, DELETE_SETTINGS = "UpsertExecutorSettings", "DeleteExecutorSettings"


@pytest.mark.parametrize(
    ("method", "fields", "code", "named"),
    [
        (UPSERT, {"cordoned": True, "cordonReason": "r"}, INVALID, "name: is required"),
        (UPSERT, {"name": "east", "cordoned": True}, INVALID, "cordonReason"),
        (UPSERT, {"name": "east", "cordoned": True, "cordonReason": " "}, INVALID, "cordonReason"),
        (
            UPSERT,
            {"name": "east", "cordoned": True, "cordonReason": "r" * 256},
            INVALID,
            "at most 255",
        ),
        (UPSERT, {"name": "east", "cordonReason": "why"}, INVALID, "cordonReason"),
        (UPSERT, {"name": "east", "cordoned": True, "cordonReason": "a\x00"}, INVALID, "cordonR"),
        (UPSERT, {"name": "north", "cordoned": True, "cordonReason": "r"}, NOT_FOUND, "north"),
        (DELETE_SETTINGS, {}, INVALID, "name: is required"),
        (DELETE_SETTINGS, {"name": "north"}, NOT_FOUND, "north"),
        ("DeleteExecutor", {}, INVALID, "name: is required"),
        ("DeleteExecutor", {"name": "north"}, NOT_FOUND, "north"),
        ("CancelOnExecutor", {}, INVALID, "name: is required"),
        ("CancelOnExecutor", {"name": "north"}, NOT_FOUND, "north"),
        ("CancelOnExecutor", {"name": "east", "queues": ["nope"]}, NOT_FOUND, "nope"),
        ("PreemptOnExecutor", {"name": "east", "pools": ["gpu"]}, INVALID, "pools[0]"),
        ("PreemptOnExecutor", {"name": "east", "priorityClasses": ["x"]}, INVALID, "Classes[0]"),
    ],
)
@pytest.mark.django_db(transaction=True)
def test_bad_requests_name_what_is_wrong_and_change_nothing(
    world, serve, method, fields, code, named
):
    server = serve()
    ex(server, UPSERT, ROOT, name="east", cordoned=True, cordonReason="before")
    refused = failure(lambda: ex(server, method, ROOT, **fields))
    assert refused.code() == code, refused.details()
    assert named in refused.details()
    assert cordon_of("east") == (True, "before")
    assert stopping() == []
    assert Executor.objects.count() == 2


# --- gRPC: stopping jobs and deleting ---------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_cancel_and_preempt_on_executor_stop_exactly_its_jobs(world, serve):
    server = serve()
    east, west = on("east"), on("west")
    assert east and west
    ex(server, "CancelOnExecutor", ROOT, name="east")
    assert stopping("cancel") == east
    ex(server, "PreemptOnExecutor", ROOT, name="west", queues=["demo"], pools=["default"])
    assert stopping("preempt") == west


@pytest.mark.django_db(transaction=True)
def test_stops_need_armadas_global_permission(world, serve, owner):
    server = serve()
    # The queue's owner is not enough: Armada asks for cancel_any_jobs / preempt_any_jobs.
    for method, permission in (
        ("CancelOnExecutor", "cancel_any_jobs"),
        ("PreemptOnExecutor", "preempt_any_jobs"),
    ):
        denied = failure(lambda m=method: ex(server, m, OLIVE, name="east"))
        assert denied.code() == grpc.StatusCode.PERMISSION_DENIED
        assert permission in denied.details()
    assert stopping() == []
    grant(owner, "preempt_any_jobs")
    ex(server, "PreemptOnExecutor", OLIVE, name="east")
    assert stopping("preempt") == on("east")


@pytest.mark.django_db(transaction=True)
def test_settings_and_delete_need_update_executor_settings(world, serve):
    server = serve()
    for method, fields in (
        ("UpsertExecutorSettings", {"name": "east", "cordoned": True}),  # no reason: 403 first
        ("DeleteExecutorSettings", {"name": "east"}),
        ("DeleteExecutor", {"name": "east"}),
    ):
        denied = failure(lambda m=method, f=fields: ex(server, m, OLIVE, **f))
        assert denied.code() == grpc.StatusCode.PERMISSION_DENIED, method
        assert "update_executor_settings" in denied.details()
    assert Executor.objects.filter(id="east").exists()


@pytest.mark.django_db(transaction=True)
def test_delete_executor_retires_it(world, serve):
    server = serve()
    running = on("east")
    ex(server, "DeleteExecutor", ROOT, name="east")
    assert not Executor.objects.filter(id="east").exists()
    assert not Node.objects.filter(executor_id="east").exists()
    assert not ExecutorCredential.objects.filter(cluster_id="east", revoked_at__isnull=True)
    assert on("east") == running  # left to lease expiry
    again = failure(lambda: ex(server, "DeleteExecutor", ROOT, name="east"))
    assert again.code() == grpc.StatusCode.NOT_FOUND and "east" in again.details()


# --- the gateway ------------------------------------------------------------------------------


def _send(client: Client, verb: str, path: str, data=None):
    raw = "" if data is None else json.dumps(data)
    return client.generic(verb, path, raw, content_type=JSON)


def test_the_gateway_paths(world):
    root = as_user("root")
    cordon = {"cordoned": True, "cordonReason": "disk"}
    answer = _send(root, "PUT", "/v1/executor_settings/east", cordon)
    assert (answer.status_code, body(answer)) == (200, {})
    assert cordon_of("east") == (True, "disk")
    answer = _send(root, "DELETE", "/v1/executor_settings/east")  # no body at all
    assert (answer.status_code, body(answer)) == (200, {})
    assert cordon_of("east") == (False, "")
    plain = set(Job.objects.filter(priority_class="armada-default").values_list("id", flat=True))
    answer = post(root, "/v1/executor/preempt/west", {"priorityClasses": ["armada-default"]})
    assert (answer.status_code, body(answer)) == (200, {})
    assert stopping("preempt") == sorted(plain & set(on("west")))
    answer = post(root, "/v1/executor/cancel/east", {})
    assert (answer.status_code, body(answer)) == (200, {})
    assert stopping("cancel") == on("east")
    answer = _send(root, "DELETE", "/v1/executors/west", {"name": "west"})
    assert (answer.status_code, body(answer)) == (200, {})
    assert list(Executor.objects.values_list("id", flat=True)) == ["east"]


@pytest.mark.parametrize(
    ("verb", "path", "data", "status", "named"),
    [
        ("PUT", "/v1/executor_settings/east", {"cordoned": "yes"}, 400, "cordoned"),
        ("PUT", "/v1/executor_settings/east", {"cordoned": True}, 400, "cordonReason"),
        ("PUT", "/v1/executor_settings/north", {"cordoned": True, "cordonReason": "r"}, 404, "no"),
        ("POST", "/v1/executor/cancel/east", {"pools": "default"}, 400, "pools"),
        ("POST", "/v1/executor/preempt/north", {}, 404, "north"),
        ("DELETE", "/v1/executors/north", None, 404, "north"),
    ],
)
def test_the_gateway_refuses_bad_requests_naming_the_field(world, verb, path, data, status, named):
    response = _send(as_user("root"), verb, path, data)
    assert response.status_code == status, response.content
    assert named in body(response)["message"]
    assert cordon_of("east") == (False, "") and stopping() == []


def test_the_gateway_refuses_callers_without_the_permission(world):
    otto = as_user("otto")
    cordon = {"cordoned": True, "cordonReason": "r"}
    for verb, path, data, permission in (
        ("PUT", "/v1/executor_settings/east", cordon, "update_executor_settings"),
        ("DELETE", "/v1/executors/east", None, "update_executor_settings"),
        ("POST", "/v1/executor/cancel/east", {}, "cancel_any_jobs"),
    ):
        response = _send(otto, verb, path, data)
        assert response.status_code == 403, path
        assert body(response)["code"] == 7 and permission in body(response)["message"]
    assert Client().generic("DELETE", "/v1/executors/east").status_code == 401
    assert Executor.objects.count() == 2 and stopping() == []
