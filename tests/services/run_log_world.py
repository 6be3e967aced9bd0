"""What the run-log service tests share: a fake executor with one running run whose log the
test writes itself, piece by piece (``services.run_logs``)."""

from __future__ import annotations

from armada.core.runlog import LogPiece
from armada.models import Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file

FAKE = "fake.armadaproject.io/"
EXECUTOR = "test"


def running_run(settings, owner) -> Run:
    """A run of executor ``test`` that runs (its pod runs for an hour, logging nothing), of
    a job in queue ``demo`` (the test asks for the ``queue`` fixture)."""
    agent = fake_agent(settings)
    ann = {FAKE + "duration": "1h"}
    job_id = job_submit(actor=owner, data=job_file(jobs=[job(annotations=ann)]), now=at(0))[0]
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    agent.tick(at(3))
    run = Run.objects.get(job_id=job_id)
    assert run.state == "running"
    return run


def line(i: int) -> str:
    """Line ``i`` of the test's logs: 11 bytes, numbered so that order and gaps show."""
    return f"line {i:05d}\n"


def piece_of(run_id: str, first: int, count: int, size: int = 11) -> LogPiece:
    """Lines ``first`` to ``first + count - 1`` as one piece, at their offset."""
    text = "".join(line(i) for i in range(first, first + count))
    return LogPiece(run_id, "", first * size, text.encode())
