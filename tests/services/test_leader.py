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
