"""``auth.anonymousGroups``: callers with no credentials, admitted by ``auth.anonymousAuth``,
act as members of the configured groups (Armada's development set-up, where everyone may do
everything), through the real ``armada_client`` against an in-process gRPC server with
every operation. Off by default; a loud warning while on; never a ``User`` subject's grants.
"""

from __future__ import annotations

import logging

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as quantity
from django.contrib.auth.models import Group, Permission

from armada.core.config import parse_config
from armada.core.errors import ValidationFailed
from armada.models import Job, Queue
from armada.services import anonymous
from armada.services.authz import can_on_queue, has_global
from tests.wire.grpc_server import failure

pytestmark = pytest.mark.django_db(transaction=True)

EVERYONE = "everyone"


def _group_with(name: str, *codenames: str) -> Group:
    group = Group.objects.create(name=name)
    group.permissions.set(
        Permission.objects.filter(content_type__app_label="armada", codename__in=codenames)
    )
    return group


@pytest.fixture
def open_server(serve, settings):
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True, "anonymousGroups": [EVERYONE]}})
    return serve()


def _item() -> submit_pb2.JobSubmitRequestItem:
    one = quantity.Quantity(string="100m")
    mem = quantity.Quantity(string="64Mi")
    container = core_v1.Container(
        name="main",
        image="busybox",
        args=["true"],
        resources=core_v1.ResourceRequirements(
            requests={"cpu": one, "memory": mem}, limits={"cpu": one, "memory": mem}
        ),
    )
    return submit_pb2.JobSubmitRequestItem(
        priority=1, namespace="default", pod_spec=core_v1.PodSpec(containers=[container])
    )


def test_anonymous_callers_do_what_their_groups_may(open_server):
    _group_with(EVERYONE, "create_queue", "submit_any_jobs", "watch_all_events")
    client = ArmadaClient(channel=grpc.insecure_channel(open_server.target))
    client.create_queue(client.create_queue_request(name="open", priority_factor=1))
    queue = Queue.objects.get(name="open")
    assert queue.group_owners == [EVERYONE] and queue.owners == []  # the creator's groups
    answer = client.submit_jobs(queue="open", job_set_id="s", job_request_items=[_item()])
    job = Job.objects.get(id=answer.job_response_items[0].job_id)
    assert job.owner == "anonymous"  # Armada's name for them
    assert client.get_queue(name="open").name == "open"


def test_what_the_groups_do_not_hold_is_still_refused(open_server):
    _group_with(EVERYONE, "watch_all_events")
    client = ArmadaClient(channel=grpc.insecure_channel(open_server.target))
    error = failure(
        lambda: client.create_queue(client.create_queue_request(name="x", priority_factor=1))
    )
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "create_queue" in error.details()
    assert not Queue.objects.exists()


def test_queue_grants_to_the_groups_apply_but_never_a_user_subjects(settings):
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True, "anonymousGroups": ["devs"]}})
    caller = anonymous.anonymous_caller()
    by_group = Queue(
        name="g",
        permissions=[{"subjects": [{"kind": "Group", "name": "devs"}], "verbs": ["submit"]}],
    )
    by_user = Queue(
        name="u",
        owners=["anonymous"],
        permissions=[{"subjects": [{"kind": "User", "name": "anonymous"}], "verbs": ["submit"]}],
    )
    assert can_on_queue(caller, by_group, "submit")
    assert not can_on_queue(caller, by_group, "cancel")
    assert not can_on_queue(caller, by_user, "submit")


def test_without_groups_anonymous_callers_hold_nothing(settings):
    _group_with(EVERYONE, "create_queue")
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True}})
    caller = anonymous.anonymous_caller()
    assert caller.anonymous_groups == frozenset()
    assert not has_global(caller, "create_queue")
    open_queue = Queue(
        name="q",
        permissions=[{"subjects": [{"kind": "Group", "name": EVERYONE}], "verbs": ["submit"]}],
    )
    assert not can_on_queue(caller, open_queue, "submit")


def test_groups_without_anonymous_auth_are_refused_naming_the_key():
    with pytest.raises(ValidationFailed) as raised:
        parse_config({"auth": {"anonymousGroups": [EVERYONE]}})
    [error] = raised.value.errors
    assert error.field == "auth.anonymousGroups" and "needs anonymousAuth" in error.message
    with pytest.raises(ValidationFailed) as raised:
        parse_config({"auth": {"anonymousAuth": True, "anonymousGroups": [" "]}})
    assert raised.value.errors[0].field.startswith("auth.anonymousGroups")


def test_a_loud_warning_while_groups_are_given(settings, caplog):
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True, "anonymousGroups": [EVERYONE]}})
    anonymous.warn_if_anonymous_groups.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="armada"):
            anonymous.warn_if_anonymous_groups()
    finally:
        anonymous.warn_if_anonymous_groups.cache_clear()
    assert any(
        r.levelno == logging.WARNING and "SECURITY" in r.getMessage() and EVERYONE in r.getMessage()
        for r in caplog.records
    )
