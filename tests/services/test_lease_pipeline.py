"""A cycle's writes behind the next round (``services.lease_pipeline``), on PostgreSQL with
the writer on a thread of its own: the next cycle computes its round while the previous
cycle's writes are still going on; a job cancelled between the plan and the write is not
leased and the job database agrees with a fresh load afterwards; a write that fails (the
lease taken) makes the next cycle start over and nothing is leased twice; and with users
cancelling from parallel threads meanwhile, every job ends leased once or cancelled."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from armada.models import Job, LeaderLease, Run
from armada.services import cycle_writes, lease_pipeline, scheduler
from armada.services.jobdb import JobDb
from armada.services.scheduler import LEADER_NAME, scheduler_cycle
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="write-behind runs on PostgreSQL only"
    ),
]
FAKE = "fake.armadaproject.io/"
TIMEOUT = 120.0


@pytest.fixture(autouse=True)
def _fresh_scheduler():
    scheduler.scheduler_state_reset()
    yield
    lease_pipeline.lease_pipeline_drain()
    scheduler.scheduler_state_reset()


@pytest.fixture
def agent(settings):
    return fake_agent(settings, cpu="64", memory="256Gi")


def submit(owner, n: int, job_set: str = "set-1") -> list[str]:
    jobs = [job(annotations={FAKE + "duration": "1h"}) for _ in range(n)]
    return job_submit(actor=owner, data=job_file(jobs=jobs, job_set=job_set), now=at(0))


def view(db: JobDb) -> dict:
    return {
        "queued": sorted(db.queued),
        "delayed": sorted(db.delayed),
        "runs": {k: (r.id, r.node, r.stopping) for k, r in db.runs.items()},
    }


def fresh(settings) -> dict:
    db = JobDb(classes=settings.ARMADA.scheduling.priority_classes)
    db.sync()
    return view(db)


def settled() -> JobDb:
    """The process's job database once nothing is in flight."""
    lease_pipeline.lease_pipeline_drain()
    db = scheduler._jobdb
    assert db is not None
    assert lease_pipeline.lease_pipeline(3.0).settle(db) is not None
    return db


def runs_per_job() -> dict[str, int]:
    counts: dict[str, int] = {}
    for job_id in Run.objects.values_list("job_id", flat=True):
        counts[job_id] = counts.get(job_id, 0) + 1
    return counts


class HeldWrite:
    """The writer held at the start of its next write (until ``release``), and a flag set
    when a cycle reaches the point where it waits for a write in flight."""

    def __init__(self, monkeypatch) -> None:
        self.inside, self.released, self.waiting = (threading.Event() for _ in range(3))
        real_write, real_settle = cycle_writes.write_leases, lease_pipeline.LeasePipeline.settle

        def held(*args, **kwargs):
            self.inside.set()
            assert self.released.wait(TIMEOUT)
            return real_write(*args, **kwargs)

        def settle(pipeline, db):
            if pipeline._pending is not None:  # a write in flight, not a first cycle's
                self.waiting.set()
            return real_settle(pipeline, db)

        monkeypatch.setattr(cycle_writes, "write_leases", held)
        monkeypatch.setattr(lease_pipeline.LeasePipeline, "settle", settle)

    def release(self) -> None:
        self.released.set()


def cycle_in_thread(now, reports: list) -> threading.Thread:
    def cycle() -> None:
        try:
            reports.append(scheduler_cycle(now=now, write_behind=True))
        finally:
            connections.close_all()

    thread = threading.Thread(target=cycle)
    thread.start()
    return thread


def test_the_next_round_is_computed_while_the_previous_writes_go_on(
    settings, queue, owner, agent, monkeypatch
):
    """The first cycle's write is held at its start; the second cycle reaches the point
    where it waits for it (its round computed), and only then is the write let go."""
    first = submit(owner, 3)
    hold = HeldWrite(monkeypatch)
    try:
        report = scheduler_cycle(now=at(1), write_behind=True)
        assert report.leased == 3  # planned
        assert hold.inside.wait(TIMEOUT)
        assert not Run.objects.exists()  # not written yet
        second = submit(owner, 2, job_set="set-2")
        reports: list = []
        thread = cycle_in_thread(at(2), reports)
        assert hold.waiting.wait(TIMEOUT)  # the second round is computed; the write held
        assert not Run.objects.exists()
    finally:
        hold.release()
    thread.join(TIMEOUT)
    assert reports[0].ran and reports[0].leased == 2
    db = settled()
    assert runs_per_job() == {j: 1 for j in first + second}
    assert view(db) == fresh(settings)


def test_a_job_changed_while_its_lease_is_in_flight_is_read_once_the_write_is_known(
    settings, queue, owner, agent, monkeypatch
):
    """A planned job reprioritized before its lease is written: the next cycle's sync
    meets the change while the write is held, and leaves the job as planned (its row does
    not show the lease yet) instead of putting it back in its queue; it is read again once
    the write is known."""
    from armada.services.reprioritize import jobs_reprioritize

    ids = submit(owner, 2)
    hold = HeldWrite(monkeypatch)
    try:
        scheduler_cycle(now=at(1), write_behind=True)
        assert hold.inside.wait(TIMEOUT)
        jobs_reprioritize(
            actor=owner, queue="demo", job_set="set-1", job_ids=[ids[0]], priority=5, now=at(1)
        )
        thread = cycle_in_thread(at(2), [])
        assert hold.waiting.wait(TIMEOUT)
        db = scheduler._jobdb
        assert ids[0] in db.runs and ids[0] not in db.queued
        assert ids[0] in db.deferred
    finally:
        hold.release()
    thread.join(TIMEOUT)
    db = settled()
    assert runs_per_job() == {j: 1 for j in ids}
    assert view(db) == fresh(settings)


def test_a_job_cancelled_between_the_plan_and_the_write_is_not_leased(
    settings, queue, owner, agent
):
    ids = submit(owner, 4)
    real = cycle_writes.write_leases

    def cancelled_meanwhile(*args, **kwargs):
        jobs_cancel(
            actor=owner, queue="demo", job_set="set-1", job_ids=[ids[0]], reason="", now=at(1)
        )
        return real(*args, **kwargs)

    cycle_writes.write_leases = cancelled_meanwhile
    try:
        assert scheduler_cycle(now=at(1), write_behind=True).leased == 4  # planned
        lease_pipeline.lease_pipeline_drain()
    finally:
        cycle_writes.write_leases = real
    assert scheduler_cycle(now=at(2), write_behind=True).ran  # settles the first write
    db = settled()
    assert runs_per_job() == {j: 1 for j in ids[1:]}
    assert Job.objects.get(id=ids[0]).state in ("cancelled", "cancelling")
    assert ids[0] not in db.runs and ids[0] not in db.queued
    assert view(db) == fresh(settings)


def test_a_failed_write_makes_the_next_cycle_start_over(settings, queue, owner, agent):
    """The lease is taken before the first write: it writes nothing, the next cycle reports
    it did not run and drops the job database, and the one after leases every job once."""
    ids = submit(owner, 3)
    real = cycle_writes.write_leases

    def taken_meanwhile(*args, **kwargs):
        LeaderLease.objects.filter(name=LEADER_NAME).update(holder="elsewhere:1:1")
        return real(*args, **kwargs)

    cycle_writes.write_leases = taken_meanwhile
    try:
        assert scheduler_cycle(now=at(1), write_behind=True).leased == 3
        lease_pipeline.lease_pipeline_drain()
    finally:
        cycle_writes.write_leases = real
    assert not Run.objects.exists()
    LeaderLease.objects.filter(name=LEADER_NAME).update(holder=scheduler.HOLDER)
    assert scheduler_cycle(now=at(2), write_behind=True).ran is False
    assert scheduler._jobdb is None  # dropped: the next cycle loads it again
    assert scheduler_cycle(now=at(3), write_behind=True).leased == 3
    db = settled()
    assert runs_per_job() == {j: 1 for j in ids}
    assert view(db) == fresh(settings)


def test_parallel_cancels_during_write_behind_cycles_leave_every_job_leased_once_or_cancelled(
    settings, queue, owner
):
    fake_agent(settings, cpu="64", memory="256Gi", scheduling={"maximumJobsPerRound": 7})
    ids = submit(owner, 60)
    errors: list[BaseException] = []
    stop = threading.Event()

    def canceller(part: list[str]) -> None:
        try:
            for job_id in part:
                if stop.is_set():
                    break
                jobs_cancel(
                    actor=owner,
                    queue="demo",
                    job_set="set-1",
                    job_ids=[job_id],
                    reason="",
                    now=at(1),
                )
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=canceller, args=(ids[i::6],)) for i in range(2)]
    for t in threads:
        t.start()
    for second in range(1, 16):
        scheduler_cycle(now=at(second), write_behind=True)
    stop.set()
    for t in threads:
        t.join(TIMEOUT)
    scheduler_cycle(now=at(20), write_behind=True)
    db = settled()
    assert not errors, errors
    counts = runs_per_job()
    assert all(n == 1 for n in counts.values()), counts
    for job_id, state in Job.objects.values_list("id", "state"):
        if job_id in counts:
            assert state in ("leased", "pending", "running", "cancelling", "cancelled"), state
        else:
            assert state in ("queued", "cancelled"), state
    assert view(db) == fresh(settings)


def test_the_record_follows_its_leases_on_the_recorder_and_a_failed_one_changes_nothing_else(
    settings, queue, owner, agent, monkeypatch
):
    """The writer writes the leases; the recorder writes the cycle's record once they are
    committed. A record that fails is logged: the leases stand, the next cycle settles as
    usual (the job database is not dropped) and records again."""
    from armada.models import SchedulingRound

    ids = submit(owner, 3)
    seen: list[tuple] = []
    real_decisions, real_record = lease_pipeline.write_decisions, lease_pipeline.write_record

    def decisions(plan):
        out = real_decisions(plan)
        seen.append(("decisions", threading.current_thread().name))
        return out

    def failing_record(plan, out):
        seen.append(
            ("record", threading.current_thread().name, Run.objects.filter(job_id__in=ids).count())
        )
        raise RuntimeError("the record could not be written")

    monkeypatch.setattr(lease_pipeline, "write_decisions", decisions)
    monkeypatch.setattr(lease_pipeline, "write_record", failing_record)
    assert scheduler_cycle(now=at(1), write_behind=True).leased == 3
    lease_pipeline.lease_pipeline_drain()
    assert [s[0] for s in seen] == ["decisions", "record"]
    assert seen[0][1].startswith("lease-writer")
    assert seen[1][1].startswith("cycle-recorder")
    assert seen[1][2] == 3  # the leases were committed before the record began
    assert not SchedulingRound.objects.exists()

    monkeypatch.setattr(lease_pipeline, "write_record", real_record)
    second = scheduler_cycle(now=at(2), write_behind=True)
    assert second.ran  # the failed record dropped nothing
    assert scheduler._jobdb is not None
    db = settled()
    assert SchedulingRound.objects.count() == 1  # the second cycle's record
    assert runs_per_job() == {j: 1 for j in ids}
    assert view(db) == fresh(settings)


def test_a_cycle_hands_over_its_plan_only_once_the_previous_record_is_written(
    settings, queue, owner, agent, monkeypatch
):
    """At most one record is behind: while the first cycle's record is held, the second
    cycle waits before handing over its own writes."""
    from armada.models import SchedulingRound

    submit(owner, 2)
    inside, released = threading.Event(), threading.Event()
    real_record = lease_pipeline.write_record

    def held_record(plan, out):
        inside.set()
        assert released.wait(TIMEOUT)
        return real_record(plan, out)

    submitting = threading.Event()
    real_submit = lease_pipeline.LeasePipeline.submit

    def submit_seen(pipeline, plan):
        submitting.set()
        return real_submit(pipeline, plan)

    monkeypatch.setattr(lease_pipeline, "write_record", held_record)
    scheduler_cycle(now=at(1), write_behind=True)
    assert inside.wait(TIMEOUT)
    monkeypatch.setattr(lease_pipeline.LeasePipeline, "submit", submit_seen)
    submit(owner, 1, job_set="set-2")
    reports: list = []
    thread = cycle_in_thread(at(2), reports)
    try:
        assert submitting.wait(TIMEOUT)  # the second round is computed and handed over...
        thread.join(1.0)
        assert thread.is_alive()  # ... but waits for the first record
        assert lease_pipeline.lease_pipeline(3.0)._pending is None
        assert SchedulingRound.objects.count() == 0
    finally:
        monkeypatch.setattr(lease_pipeline, "write_record", real_record)
        released.set()
    thread.join(TIMEOUT)
    assert reports and reports[0].ran and reports[0].leased == 1
    db = settled()
    assert SchedulingRound.objects.count() == 2
    assert view(db) == fresh(settings)
