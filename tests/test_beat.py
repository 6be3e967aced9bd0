"""Beat under a lease (``armada.beat``): only the holder sends, it renews as it ticks, a
standby takes over when the lease lapses or is released, and an unreachable database means
sending nothing. Real processes racing for the lease are in ``tests/e2e/test_beat.py``."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import OperationalError

from armada.beat import LEASE_NAME, LEASE_TTL, LeasedScheduler
from armada.celery import app
from armada.models import LeaderLease
from tests.conftest import at

pytestmark = pytest.mark.django_db(transaction=True)  # beat closes stale connections


class Clocks:
    """A wall clock and a monotonic clock that tests move by hand."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wall(self):
        return at(self.seconds)

    def mono(self) -> float:
        return self.seconds


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()


def beat(clocks: Clocks, sent: list[str], name: str) -> LeasedScheduler:
    scheduler = LeasedScheduler(app=app)
    scheduler.clock = clocks.mono
    scheduler.wall_clock = clocks.wall
    scheduler.holder = name

    def apply_entry(entry, producer=None):
        sent.append(f"{name}:{entry.name}")

    scheduler.apply_entry = apply_entry
    for entry in scheduler.schedule.values():  # everything is due at once
        entry.last_run_at = entry.default_now() - timedelta(hours=1)
    return scheduler


def test_the_schedule_lives_in_memory_and_has_every_periodic_task(clocks):
    scheduler = beat(clocks, [], "a")
    assert "scheduler cycle" in scheduler.schedule
    assert "metrics history sample" in scheduler.schedule
    assert not hasattr(scheduler, "_store")  # no shelve file shared between beats


def test_only_the_holder_sends(clocks, caplog):
    sent: list[str] = []
    a, b = beat(clocks, sent, "a"), beat(clocks, sent, "b")
    with caplog.at_level(logging.INFO, logger="armada.beat"):
        a.tick()
        assert b.tick() == b.retry_seconds
        for _ in range(5):
            a.tick()
            b.tick()
    assert sent and all(s.startswith("a:") for s in sent)
    assert {s.split(":", 1)[1] for s in sent} >= {"scheduler cycle"}
    assert LeaderLease.objects.get(name=LEASE_NAME).holder == "a"
    assert "beat a: took the 'beat' lease" in caplog.text
    assert "beat b: the 'beat' lease is held by another beat; standing by" in caplog.text


def test_the_holder_renews_as_it_ticks_and_keeps_the_lease(clocks):
    a, b = beat(clocks, [], "a"), beat(clocks, [], "b")
    assert a.hold_lease()
    for _ in range(20):  # 20 s: four times the lease's time to live
        clocks.seconds += 1.0
        assert a.hold_lease()
        assert not b.hold_lease()
    lease = LeaderLease.objects.get(name=LEASE_NAME)
    assert lease.expires_at == at(20) + LEASE_TTL


def test_a_standby_takes_over_once_the_holder_stops_renewing(clocks):
    sent: list[str] = []
    a, b = beat(clocks, sent, "a"), beat(clocks, sent, "b")
    assert a.hold_lease()
    clocks.seconds = LEASE_TTL.total_seconds() - 0.5
    assert not b.hold_lease()
    clocks.seconds = LEASE_TTL.total_seconds() + 0.5
    assert b.hold_lease()
    b.tick()
    assert sent and all(s.startswith("b:") for s in sent)


def test_a_holder_that_was_overtaken_stops_sending_and_says_so(clocks, caplog):
    sent: list[str] = []
    a = beat(clocks, sent, "a")
    a.tick()
    sent.clear()
    # Another beat owns it now (a was paused for longer than the lease lives, say).
    LeaderLease.objects.filter(name=LEASE_NAME).update(holder="c", expires_at=at(60))
    clocks.seconds += a.renew_seconds / 2
    assert a.hold_lease()  # within its renewal interval it does not ask
    clocks.seconds += a.renew_seconds
    with caplog.at_level(logging.WARNING, logger="armada.beat"):
        assert a.tick() == a.retry_seconds
    assert sent == []
    assert "beat a: lost the 'beat' lease" in caplog.text


def test_a_clean_stop_releases_the_lease_at_once(clocks):
    a, b = beat(clocks, [], "a"), beat(clocks, [], "b")
    assert a.hold_lease()
    a.close()
    assert LeaderLease.objects.get(name=LEASE_NAME).holder == ""
    assert b.hold_lease()


def test_no_database_means_no_sending(clocks, caplog, monkeypatch):
    sent: list[str] = []
    a = beat(clocks, sent, "a")

    def unreachable(**_):
        raise OperationalError("could not connect to server")

    monkeypatch.setattr("armada.services.leader.leader_acquire", unreachable)
    with caplog.at_level(logging.WARNING, logger="armada.beat"):
        assert a.tick() == a.retry_seconds
    assert sent == []
    assert "cannot reach the database" in caplog.text


def test_the_lease_outlives_the_renewal_interval_many_times():
    # A holder misses several renewals before a standby may take over.
    assert timedelta(seconds=LeasedScheduler.renew_seconds * 4) <= LEASE_TTL
