"""The scheduler's lease while a cycle runs: renewed from a thread of its own on the cycle's
clock (so a slow cycle never loses it, and a dead holder's lapses within its 3 s), a renewal
that finds the lease taken says so, a cycle whose lease was taken before its write leases
nothing, and (PostgreSQL, real parallel clients) a standby's claim waits for the holder's
lease write in progress, so the former holder's leases land before the successor holds it."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections

from armada.models import Job, LeaderLease, Run
from armada.services import cycle_writes, scheduler_leases
from armada.services.leader import LeaseKeeper, leader_acquire
from armada.services.scheduler import HOLDER, LEADER_NAME, lease_ttl, scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job_file
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def expiry() -> object:
    return LeaderLease.objects.get(name=LEADER_NAME).expires_at


def test_the_lease_lives_three_seconds_or_three_cycle_periods():
    assert lease_ttl(1.0) == timedelta(seconds=3)
    assert lease_ttl(4.0) == timedelta(seconds=12)


def test_a_keeper_renews_the_lease_on_the_works_clock_until_it_stops():
    ttl = timedelta(seconds=2)
    assert leader_acquire(name=LEADER_NAME, holder="a", now=at(0), ttl=ttl)
    with LeaseKeeper(name=LEADER_NAME, holder="a", now=at(0), ttl=ttl, every=0.05) as keeper:
        # Renewed at least half a second into the work: it now runs past at(2.5).
        wait_until("a renewal", lambda: expiry() >= at(2.5), timeout=60)
        assert not leader_acquire(name=LEADER_NAME, holder="b", now=at(2.2), ttl=ttl)
        assert not keeper.lost.is_set()
    renewed = expiry()
    assert not leader_acquire(
        name=LEADER_NAME, holder="b", now=renewed - timedelta(seconds=0.1), ttl=ttl
    )
    assert leader_acquire(
        name=LEADER_NAME, holder="b", now=renewed + timedelta(seconds=0.1), ttl=ttl
    )


def test_a_keeper_whose_lease_was_taken_says_so():
    ttl = timedelta(seconds=2)
    assert leader_acquire(name=LEADER_NAME, holder="a", now=at(0), ttl=ttl)
    with LeaseKeeper(name=LEADER_NAME, holder="a", now=at(0), ttl=ttl, every=0.05) as keeper:
        LeaderLease.objects.filter(name=LEADER_NAME).update(holder="b", expires_at=at(100))
        assert keeper.lost.wait(timeout=60)
    assert LeaderLease.objects.get(name=LEADER_NAME).holder == "b"


def test_a_cycle_whose_lease_was_taken_before_its_write_leases_nothing(
    settings, queue, owner, monkeypatch
):
    agent = fake_agent(settings)
    job_submit(actor=owner, data=job_file(), now=at(0))
    real = scheduler_leases.write_leases

    def taken_meanwhile(*args, **kwargs):
        LeaderLease.objects.filter(name=LEADER_NAME).update(holder="elsewhere:1:1")
        return real(*args, **kwargs)

    monkeypatch.setattr(cycle_writes, "write_leases", taken_meanwhile)
    report = scheduler_cycle(now=at(1))
    assert report.ran is False and report.leased == 0
    assert Job.objects.get().state == "queued" and not Run.objects.exists()
    monkeypatch.setattr(cycle_writes, "write_leases", real)
    LeaderLease.objects.filter(name=LEADER_NAME).update(holder=HOLDER)
    assert scheduler_cycle(now=at(2)).leased == 1
    agent.tick(at(2))


def test_a_standbys_claim_waits_for_the_holders_lease_write(settings, queue, owner, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL")
    fake_agent(settings)
    job_submit(actor=owner, data=job_file(), now=at(0))
    inside, release = threading.Event(), threading.Event()
    real_claim = scheduler_leases._claim_queued

    def slow_claim(*args, **kwargs):
        inside.set()  # past the fence: the lease's row is locked by this transaction
        assert release.wait(timeout=120)
        return real_claim(*args, **kwargs)

    monkeypatch.setattr(scheduler_leases, "_claim_queued", slow_claim)
    reports: list = []
    claims: list[bool] = []
    errors: list[BaseException] = []

    def holder() -> None:
        try:
            reports.append(scheduler_cycle(now=at(1)))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    def standby() -> None:
        try:
            # Long after the lease would have lapsed on the standby's clock.
            claims.append(
                leader_acquire(
                    name=LEADER_NAME, holder="elsewhere:1:1", now=at(3600), ttl=lease_ttl(1)
                )
            )
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    first = threading.Thread(target=holder)
    first.start()
    assert inside.wait(timeout=120)
    second = threading.Thread(target=standby)
    second.start()
    second.join(timeout=2)
    assert second.is_alive(), "the standby's claim did not wait for the lease write"
    release.set()
    first.join(timeout=120)
    second.join(timeout=120)
    assert not errors, errors
    assert reports[0].ran and reports[0].leased == 1
    assert claims == [True]
    assert Job.objects.get().state == "leased"
