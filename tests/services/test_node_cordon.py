"""Cordoning one node at the control plane (services.node_cordon, Binoculars' Cordon and
``/api/v1/executors/{id}/nodes/{node}/cordon``): no new leases on it while its jobs carry
on, kept across its executor's reports, undone by an uncordon; refusals that name what is
wrong and write nothing. On PostgreSQL, cordons race the executor reporting its nodes and
the scheduler leasing onto them: no deadlock, and the last word stays."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from armada.models import Node, Run
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.services.node_cordon import nodes_set_cordoned
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from tests.conftest import at
from tests.racing import Race, deadlocks, each_more_than
from tests.services.test_node_actions import configure, submit

pytestmark = pytest.mark.django_db


def leased_on(node: str) -> int:
    return Run.objects.filter(node=node).count()


def test_a_cordoned_node_gets_no_new_leases_until_it_is_uncordoned(
    settings, queue, owner, admin_user
):
    agent = configure(settings)  # two 4-cpu nodes: n-0, n-1
    assert nodes_set_cordoned(actor=admin_user, executor="test", node="n-0", cordoned=True) == [
        "test/n-0"
    ]
    submit(owner, 6)  # 1 cpu each: n-1 takes four, two wait
    scheduler_cycle(now=at(1))
    assert (leased_on("n-0"), leased_on("n-1")) == (0, 4)
    agent.tick(at(2))  # the executor reports its nodes again: the cordon stays
    scheduler_cycle(now=at(3))
    assert leased_on("n-0") == 0 and Node.objects.get(name="n-0").cordoned
    nodes_set_cordoned(actor=admin_user, executor="test", node="n-0", cordoned=False)
    scheduler_cycle(now=at(4))
    assert leased_on("n-0") == 2
    assert Node.objects.get(name="n-0").cordon_reason == ""


def test_a_cordon_keeps_its_reason_and_is_idempotent(settings, admin_user):
    configure(settings)
    for _ in range(2):
        nodes_set_cordoned(
            actor=admin_user, executor="test", node="n-1", cordoned=True, reason=" disk errors "
        )
    node = Node.objects.get(name="n-1")
    assert node.cordoned and node.cordon_reason == "disk errors"


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"node": "n-9"}, NotFound, "no node 'n-9' of executor 'test'"),
        ({"node": "n-0", "executor": "elsewhere"}, NotFound, "of executor 'elsewhere'"),
        ({"node": "n-0", "reason": "x" * 256}, ValidationFailed, "reason"),
        ({"node": "n-0", "reason": 5}, ValidationFailed, "reason"),
        ({"node": "n-0", "cordoned": False, "reason": "why"}, ValidationFailed, "no reason"),
    ],
)
def test_refusals_name_what_is_wrong_and_change_nothing(settings, admin_user, kwargs, error, words):
    configure(settings)
    call = {"executor": "test", "cordoned": True, **kwargs}
    with pytest.raises(error) as raised:
        nodes_set_cordoned(actor=admin_user, **call)
    assert words in str(raised.value) or any(words in e.field for e in raised.value.errors)
    assert not Node.objects.filter(cordoned=True).exists()


def test_cordoning_needs_update_executor_settings(settings, owner):
    configure(settings)
    with pytest.raises(PermissionDenied, match="update_executor_settings"):
        nodes_set_cordoned(actor=owner, executor="test", node="n-0", cordoned=True)
    assert not Node.objects.filter(cordoned=True).exists()


def test_the_api_cordons_and_uncordons_and_shows_it(settings, api):
    configure(settings)
    url = "/api/v1/executors/test/nodes/n-0"
    done = api.post(f"{url}/cordon", {"reason": "firmware"}, format="json")
    assert done.status_code == 200, done.json()
    assert done.json() == {"nodes": ["test/n-0"], "cordoned": True}
    [shown] = [n for n in api.get("/api/v1/executors/test").json()["nodes"] if n["name"] == "n-0"]
    assert (shown["cordoned"], shown["cordonReason"]) == (True, "firmware")
    refused = api.post(f"{url}/uncordon", {"reason": "no"}, format="json")
    assert refused.status_code == 400 and Node.objects.get(name="n-0").cordoned
    assert api.post(f"{url}/uncordon").json() == {"nodes": ["test/n-0"], "cordoned": False}
    assert api.post("/api/v1/executors/test/nodes/n-7/cordon").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_cordons_race_node_reports_and_leases_and_the_last_word_stays(
    settings, queue, owner, admin_user
):
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlock detection are PostgreSQL's")
    scheduler_state_reset()
    agent = configure(settings, nodes=2, cpu="16", scheduling={"cyclePeriod": "100ms"})
    before = deadlocks()
    race = Race()

    def cordon(n: int) -> None:
        nodes_set_cordoned(actor=admin_user, executor="test", node="n-0", cordoned=n % 2 == 0)
        race.stop.wait(0.02)

    def report(_: int) -> None:
        agent.tick(timezone.now())

    def lease(n: int) -> None:
        submit(owner, 2)
        scheduler_cycle(now=timezone.now())

    race.run(
        {"cordon": cordon, "executor": report, "scheduler": lease},
        5,
        until=each_more_than(3, ("cordon", "executor", "scheduler")),
    )
    assert race.errors == []
    assert deadlocks() == before
    assert all(race.counts[name] > 3 for name in ("cordon", "executor", "scheduler"))
    nodes_set_cordoned(actor=admin_user, executor="test", node="n-0", cordoned=True)
    leased_before = leased_on("n-0")
    for _ in range(3):
        agent.tick(timezone.now())
        submit(owner, 2)
        scheduler_cycle(now=timezone.now())
    assert Node.objects.get(name="n-0").cordoned  # no report of the executor undid it
    assert leased_on("n-0") == leased_before  # and the scheduler leased nothing more there
