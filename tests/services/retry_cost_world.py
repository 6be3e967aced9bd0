"""Jobs whose failures are retried and which then succeed or keep running, driven through the
real services (executor ticks on the fake backend, scheduler cycles); the world of
tests/services/decision_world.py with the policy of its ``with_policy`` fixture."""

from __future__ import annotations

from armada.models import Job
from armada.services.scheduler import scheduler_cycle
from tests.conftest import at
from tests.services.decision_world import configure, submit

OOM_THEN_OK = {"condition": "OOMKilled", "duration": "30s"}  # rule 4 retries it (memory x1.5)


def drive_until(agent, start: int, done, limit: int = 300) -> int:
    """A scheduler cycle and an executor tick each second from ``start`` until ``done()``
    holds after a cycle; returns that second, its executor tick not yet run (so that a test
    may change what the next pod does before the executor starts it)."""
    t = start
    while True:
        scheduler_cycle(now=at(t))
        if done():
            return t
        assert t < start + limit, "the jobs did not get there in time"
        agent.tick(at(t + 0.5))
        t += 1


def resume(agent, t: int) -> int:
    """The executor tick left out by ``drive_until``; returns the next second."""
    agent.tick(at(t + 0.5))
    return t + 1


def retried_then_succeeds(settings, owner, *, retries: int = 2) -> tuple[str, int]:
    """A job that is OOM-killed ``retries`` times, is retried each time, then succeeds."""
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, OOM_THEN_OK)
    t = drive_until(agent, 1, lambda: Job.objects.get(id=job_id).retry_count >= retries)
    Job.objects.filter(id=job_id).update(annotations={"fake.armadaproject.io/duration": "20s"})
    t = drive_until(
        agent, resume(agent, t), lambda: Job.objects.get(id=job_id).state == "succeeded"
    )
    return job_id, resume(agent, t)
