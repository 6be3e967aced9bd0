"""Who reads what of a queue: every caller let in reads a queue and its settings (as
Armada's GetQueue has it), but its owners, group owners and permissions only a caller who
may watch the queue or change queues (``authz.may_read_queue_access``); to the others they
are null, in the list, the detail, the label-picked list and Armada's gateway alike."""

from __future__ import annotations

import base64
import json

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from armada.services.queues import queue_create
from tests.conftest import T0

pytestmark = pytest.mark.django_db
ACCESS = ("owners", "groupOwners", "permissions")


@pytest.fixture
def queues(admin_user, queue, owner):
    """``demo`` (owned by ``olive``, group ``submitters`` may submit) and ``secret``, which
    ``olive`` may not watch."""
    queue_create(
        actor=admin_user,
        data={
            "name": "secret",
            "owners": ["zed"],
            "groupOwners": ["spies"],
            "labels": {"team": "x"},
            "permissions": [{"subjects": [{"kind": "User", "name": "mo"}], "verbs": ["watch"]}],
        },
        now=T0,
    )


def access_of(data: dict) -> tuple:
    return tuple(data[field] for field in ACCESS)


def test_the_detail_shows_who_may_act_only_to_those_who_may_watch(api_as, queues, owner, member):
    secret = api_as(owner).get("/api/v1/queues/secret")
    assert secret.status_code == 200
    assert access_of(secret.json()) == (None, None, None)
    assert secret.json()["labels"] == {"team": "x"} and secret.json()["name"] == "secret"
    # mo may watch secret (a grant): he reads who may act on it.
    watched = api_as(member).get("/api/v1/queues/secret").json()
    assert access_of(watched) == (
        ["zed"],
        ["spies"],
        [{"subjects": [{"kind": "User", "name": "mo"}], "verbs": ["watch"]}],
    )
    assert api_as(owner).get("/api/v1/queues/demo").json()["owners"] == ["olive"]
    assert api_as(owner).get("/api/v1/queues/nowhere").status_code == 404


def test_lists_show_who_may_act_per_queue(api_as, queues, owner):
    for query in ({}, {"selector": "team"}, {"inverse": "true", "selector": "team"}):
        listed = {q["name"]: q for q in api_as(owner).get("/api/v1/queues", query).json()}
        for name, queue in listed.items():
            assert (access_of(queue) == (None, None, None)) == (name == "secret"), (query, name)
    assert set(listed) == {"demo"}


def test_watch_all_events_and_create_queue_read_every_queue(api_as, queues, outsider):
    assert api_as(outsider).get("/api/v1/queues/secret").json()["owners"] is None
    for codename in ("watch_all_events", "create_queue"):
        outsider.user_permissions.set(Permission.objects.filter(codename=codename))
        fresh = type(outsider).objects.get(pk=outsider.pk)
        assert api_as(fresh).get("/api/v1/queues/secret").json()["owners"] == ["zed"], codename


def test_the_gateway_leaves_them_out_too(queues, owner):
    client = Client()
    auth = "Basic " + base64.b64encode(b"olive:olive-password").decode()
    answer = json.loads(client.get("/v1/queue/secret", HTTP_AUTHORIZATION=auth).content)
    assert answer["name"] == "secret" and answer["labels"] == {"team": "x"}
    assert not any(answer.get(key) for key in ("userOwners", "groupOwners", "permissions"))
    mine = json.loads(client.get("/v1/queue/demo", HTTP_AUTHORIZATION=auth).content)
    assert mine["userOwners"] == ["olive"]
