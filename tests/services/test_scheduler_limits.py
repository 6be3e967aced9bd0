"""Limits on a cycle's leases: jobs per round, the lease rate (a token bucket paced by the
clock passed in) and what a job that a limited round never reached is told."""

from __future__ import annotations

import pytest

from armada.models import Job
from armada.services.records import NOT_REACHED, pending_reason
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db


def setup(settings, **scheduling) -> None:
    fake_agent(settings, cpu="64", memory="256Gi", scheduling=scheduling)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def leased() -> int:
    return Job.objects.filter(state="leased").count()


# (seconds after the previous cycle, leases that cycle may make): rate 2/s, burst 3.
RATE_STEPS = [(0.0, 3), (0.5, 1), (0.1, 0), (0.6, 1), (60.0, 3)]


def test_the_lease_rate_limit_paces_cycles_by_the_clock(settings, queue, owner):
    setup(settings, maximumSchedulingRate=2, maximumSchedulingBurst=3)
    job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(20)]), now=at(0))
    clock = Clock()
    total = 0
    for i, (wait, expected) in enumerate(RATE_STEPS):
        clock.now += wait
        report = scheduler_cycle(now=at(1 + i), clock=clock)
        total += expected
        assert (report.leased, leased()) == (expected, total), f"step {i}"


def test_without_a_rate_only_the_round_limit_applies(settings, queue, owner):
    setup(settings, maximumJobsPerRound=4)
    job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(10)]), now=at(0))
    clock = Clock()
    assert [scheduler_cycle(now=at(1 + i), clock=clock).leased for i in range(3)] == [4, 4, 2]


def test_a_job_the_limited_round_never_reached_is_told_so(settings, queue, owner):
    setup(settings, maximumJobsPerRound=2)
    ids = job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(5)]), now=at(0))
    before = Job.objects.get(id=ids[-1])
    assert pending_reason(before) is None  # no round has run since it was queued
    report = scheduler_cycle(now=at(1))
    assert report.leased == 2
    assert report.limit_reached
    last = Job.objects.get(id=ids[-1])
    assert pending_reason(last)["reason"] == NOT_REACHED
    assert pending_reason(Job.objects.get(id=ids[0])) is None  # leased: not pending
