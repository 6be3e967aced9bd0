from __future__ import annotations

from datetime import timedelta

import pytest

from armada.services.leader import leader_acquire, leader_release
from tests.conftest import at

pytestmark = pytest.mark.django_db
TTL = timedelta(seconds=30)


def test_one_holder_at_a_time_and_a_standby_takes_over_when_the_lease_lapses():
    assert leader_acquire(name="scheduler", holder="a", now=at(0), ttl=TTL)
    assert not leader_acquire(name="scheduler", holder="b", now=at(10), ttl=TTL)
    assert leader_acquire(name="scheduler", holder="a", now=at(20), ttl=TTL)  # renewal
    assert not leader_acquire(name="scheduler", holder="b", now=at(49), ttl=TTL)
    assert leader_acquire(name="scheduler", holder="b", now=at(51), ttl=TTL)  # a lapsed
    assert not leader_acquire(name="scheduler", holder="a", now=at(52), ttl=TTL)


def test_release_frees_the_lease_at_once():
    assert leader_acquire(name="scheduler", holder="a", now=at(0), ttl=TTL)
    leader_release(name="scheduler", holder="b")  # not b's to release
    assert not leader_acquire(name="scheduler", holder="b", now=at(1), ttl=TTL)
    leader_release(name="scheduler", holder="a")
    assert leader_acquire(name="scheduler", holder="b", now=at(2), ttl=TTL)


def test_a_cycle_does_nothing_while_another_process_holds_the_scheduler_lease(queue, owner):
    from armada.models import Job
    from armada.services.scheduler import LEADER_NAME, scheduler_cycle
    from armada.services.submit import job_submit
    from tests.conftest import job_file

    job_submit(actor=owner, data=job_file(), now=at(0))
    assert leader_acquire(name=LEADER_NAME, holder="another-host:1", now=at(0), ttl=TTL)
    report = scheduler_cycle(now=at(1))
    assert report.ran is False
    assert Job.objects.get().state == "queued"


def _dead_pid() -> int:
    """The pid of a process of ours that has exited (and been reaped)."""
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_lease_held_by_a_process_of_this_host_that_died_is_free_at_once():
    from armada.services.leader import process_holder

    host, namespace, _ = process_holder().split(":")
    dead = f"{host}:{namespace}:{_dead_pid()}"
    assert leader_acquire(name="scheduler", holder=dead, now=at(0), ttl=TTL)
    # Killed, then restarted with another pid: no need to wait for the 30 s to pass.
    assert leader_acquire(name="scheduler", holder=process_holder(), now=at(1), ttl=TTL)


@pytest.mark.parametrize(
    "make_holder",
    [
        lambda host, ns: f"{host}:{ns}:1",  # alive on this host (pid 1)
        lambda host, ns: f"elsewhere:{ns}:{_dead_pid()}",  # another host: cannot be checked
        lambda host, ns: f"{host}:other-namespace:{_dead_pid()}",  # another container
        lambda host, ns: "a",  # a holder of another form
    ],
    ids=["alive", "other-host", "other-pid-namespace", "other-form"],
)
def test_a_lease_whose_holder_may_be_alive_waits_for_its_expiry(make_holder):
    from armada.services.leader import process_holder

    host, namespace, _ = process_holder().split(":")
    assert leader_acquire(name="scheduler", holder=make_holder(host, namespace), now=at(0), ttl=TTL)
    assert not leader_acquire(name="scheduler", holder=process_holder(), now=at(1), ttl=TTL)
    assert leader_acquire(name="scheduler", holder=process_holder(), now=at(31), ttl=TTL)
