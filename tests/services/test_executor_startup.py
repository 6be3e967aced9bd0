"""Executors the configuration no longer names stop receiving leases at start-up
(``services.executor_startup``): which are removed, what becomes of their runs, what is left
alone, doing it twice, and the scheduler's first cycle after it."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from armada.models import Event, Executor, Job, Node, Run
from armada.services.executor_startup import (
    Deregistered,
    executors_deregister_unconfigured,
    scheduler_start_up,
)
from armada.services.scheduler import scheduler_cycle
from tests.conftest import at
from tests.services.executor_world import configure, expired_events, run_of, submit


@pytest.fixture
def world(settings, queue, owner):
    """Executors a, b and c registered and alive; a long job running on a and one on b, a
    job on b that has already succeeded, nothing on c. Then the configuration is changed
    to name only a (a restart with another configuration)."""
    agents = configure(settings, "a", "b", "c")
    for agent in agents.values():
        agent.tick(at(0))
    [on_a] = submit(owner, on="a")
    [on_b] = submit(owner, on="b")
    [done_on_b] = submit(owner, on="b", duration="0s")
    scheduler_cycle(now=at(1))
    for t in (1.5, 2.5, 3.5):
        for agent in agents.values():
            agent.tick(at(t))
    assert [run_of(j).state for j in (on_a, on_b, done_on_b)] == [
        "running",
        "running",
        "succeeded",
    ]
    assert run_of(on_b).executor == "b"
    new_agents = configure(settings, "a")
    return SimpleNamespace(on_a=on_a, on_b=on_b, done_on_b=done_on_b, agent_a=new_agents["a"])


def test_unnamed_executors_go_and_their_runs_expire_as_a_lost_executors_do(world, caplog):
    caplog.set_level(logging.WARNING, logger="armada.services.executor_startup")
    done = executors_deregister_unconfigured(configured=["a"], now=at(4))
    assert done == [
        Deregistered(executor_id="b", registered=True, nodes=1, runs_expired=1),
        Deregistered(executor_id="c", registered=True, nodes=1, runs_expired=0),
    ]
    assert list(Executor.objects.values_list("id", flat=True)) == ["a"]
    assert list(Node.objects.values_list("name", flat=True)) == ["a-n"]
    run = run_of(world.on_b)
    assert (run.state, run.reason, run.failure_category, run.failure_subcategory) == (
        "lease_expired",
        "LeaseExpired",
        "internal",
        "lease-expired",
    )
    assert run.message == "executor b is no longer in the configuration"
    assert (run.finished_at, run.decided_at) == (at(4), None)
    assert expired_events(world.on_b) == [{"clusterId": "b", "nodeName": "b-n"}]
    # Named executors and ended runs are not touched.
    assert run_of(world.on_a).state == "running"
    assert run_of(world.done_on_b).state == "succeeded"
    assert Executor.objects.get(id="a").last_heartbeat == at(3.5)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "executor b is no longer in the configuration: deregistered with its 1 node(s); "
        "1 active run(s) expired (lease_expired)",
        "executor c is no longer in the configuration: deregistered with its 1 node(s); "
        "0 active run(s) expired (lease_expired)",
    ]
    # The next cycle decides the expired run as it decides a lost executor's.
    scheduler_cycle(now=at(5))
    run = run_of(world.on_b)
    assert run.decided_at == at(5)
    assert Job.objects.get(id=world.on_b).state in ("queued", "failed")


def test_doing_it_again_does_nothing(world):
    executors_deregister_unconfigured(configured=["a"], now=at(4))
    events = Event.objects.count()
    assert executors_deregister_unconfigured(configured=["a"], now=at(5)) == []
    assert Event.objects.count() == events
    assert run_of(world.on_b).finished_at == at(4)


def test_a_configuration_naming_every_executor_changes_nothing(world, settings):
    configure(settings, "a", "b", "c")
    events = Event.objects.count()
    assert scheduler_start_up() == []
    assert sorted(Executor.objects.values_list("id", flat=True)) == ["a", "b", "c"]
    assert Node.objects.count() == 3
    assert Event.objects.count() == events
    assert {run_of(j).state for j in (world.on_a, world.on_b)} == {"running"}


def test_runs_of_an_unnamed_executor_that_is_not_registered_expire_too(world):
    Executor.objects.filter(id="b").delete()  # gone, but its run had not ended
    done = executors_deregister_unconfigured(configured=["a"], now=at(4))
    assert Deregistered(executor_id="b", registered=False, nodes=0, runs_expired=1) in done
    assert run_of(world.on_b).state == "lease_expired"
    assert len(expired_events(world.on_b)) == 1


@pytest.mark.parametrize(("start_up", "leased_to"), [(True, None), (False, "b")])
def test_the_first_cycle_after_start_up_leases_nothing_to_an_unnamed_executor(
    settings, queue, owner, start_up, leased_to
):
    # Before the restart only b ran; the new configuration names only a, whose worker has
    # not registered yet. b is still "alive" (it heart-beat a second ago).
    configure(settings, "b")["b"].tick(at(0))
    configure(settings, "a")
    if start_up:
        scheduler_start_up()
    [job_id] = submit(owner)
    scheduler_cycle(now=at(1))
    assert list(Run.objects.filter(job_id=job_id).values_list("executor", flat=True)) == (
        [leased_to] if leased_to else []
    )
    assert Job.objects.get(id=job_id).state == ("leased" if leased_to else "queued")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("queues", "left"), [(["scheduler"], []), (["executor.b"], ["b"])])
def test_only_a_scheduler_worker_does_it_when_it_starts(settings, queues, left):
    from armada.celery import _scheduler_start_up

    configure(settings, "b")["b"].tick(at(0))
    configure(settings, "a")
    worker = SimpleNamespace(
        app=SimpleNamespace(
            amqp=SimpleNamespace(queues=SimpleNamespace(consume_from={q: q for q in queues}))
        )
    )
    _scheduler_start_up(sender="w@host", instance=worker)
    assert list(Executor.objects.values_list("id", flat=True)) == left
