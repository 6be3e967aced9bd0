"""The scheduler's in-memory job database: synced from the event log, it always agrees with
what a fresh load from the database would give."""

from __future__ import annotations

import pytest

from armada.models import Event, Job
from armada.services.jobdb import JobDb
from armada.services.reprioritize import jobs_reprioritize
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import jobs_cancel, runs_request_preemption
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"


@pytest.fixture
def agent(settings):
    return fake_agent(settings, cpu="4", memory="16Gi")


def fresh(settings) -> JobDb:
    db = JobDb(classes=settings.ARMADA.scheduling.priority_classes)
    db.sync()
    return db


def view(db: JobDb) -> dict:
    """Everything the scheduler reads from the job database, comparable between two."""
    return {
        "order": {q: [j.id for j in jobs] for q, jobs in db.by_queue.items() if jobs},
        "queued": {k: (j.priority, j.urgency, dict(j.requests)) for k, j in db.queued.items()},
        "gangs": {k: sorted(v) for k, v in db.gangs.items()},
        "avoid": dict(db.avoid),
        "runs": {
            k: (r.id, r.pool, r.executor, r.node, dict(r.requests), r.stopping)
            for k, r in db.runs.items()
        },
    }


def submit(owner, n: int, now, **extra) -> list[str]:
    jobs = [job(annotations={FAKE + "duration": "1h"}, **extra) for _ in range(n)]
    return job_submit(actor=owner, data=job_file(jobs=jobs), now=now)


def test_cold_start_loads_every_queued_job_in_scheduling_order(settings, queue, owner, agent):
    low = submit(owner, 2, at(1), priority=5)
    high = submit(owner, 2, at(2), priority=1)
    db = fresh(settings)
    report = db.sync()  # nothing new: the first sync loaded everything
    assert report.jobs == 0
    assert [j.id for j in db.queue_jobs("demo", lookback=10)] == high + low
    assert [j.id for j in db.queue_jobs("demo", lookback=3)] == high + low[:1]
    assert [j.id for j in db.queue_jobs("demo", lookback=10, exclude={high[0]})] == [
        high[1],
        *low,
    ]
    assert db.cursor == Event.objects.order_by("-id").values_list("id", flat=True).first()


def test_incremental_sync_follows_every_kind_of_change(settings, queue, owner, admin_user, agent):
    db = fresh(settings)
    ids = submit(owner, 6, at(1))
    db.sync()
    assert set(db.queued) == set(ids)

    # Leased (4 cpu fit four 1-cpu jobs) and then running on the node.
    scheduler_cycle(now=at(2))
    db.sync()
    running = set(Job.objects.filter(state="leased").values_list("id", flat=True))
    assert len(running) == 4
    assert set(db.runs) == running
    assert set(db.queued) == set(ids) - running
    agent.tick(at(3))
    db.sync()
    assert all(not r.stopping for r in db.runs.values())

    # A stop requested shows as stopping; reprioritize reorders; cancel removes.
    victim = sorted(running)[0]
    runs_request_preemption(job_ids=[victim], reason="test", now=at(4))
    waiting = sorted(set(ids) - running)
    jobs_reprioritize(
        actor=admin_user, queue="demo", job_set="set-1", job_ids=[waiting[1]], priority=0, now=at(4)
    )
    jobs_reprioritize(
        actor=admin_user, queue="demo", job_set="set-1", job_ids=[waiting[0]], priority=9, now=at(4)
    )
    db.sync()
    assert db.runs[victim].stopping
    assert [j.id for j in db.queue_jobs("demo", lookback=10)] == [waiting[1], waiting[0]]
    jobs_cancel(
        actor=admin_user, queue="demo", job_set="set-1", job_ids=[waiting[0]], reason="", now=at(5)
    )
    db.sync()
    assert [j.id for j in db.queue_jobs("demo", lookback=10)] == [waiting[1]]

    # The stopped run ends (after the pod's grace period): it leaves the active runs.
    agent.tick(at(6))
    agent.tick(at(120))
    db.sync()
    assert victim not in db.runs
    assert len(db.runs) == 3
    assert view(db) == view(fresh(settings))


def test_a_sync_limited_in_events_catches_up_on_the_next(settings, queue, owner, agent):
    db = fresh(settings)
    first = submit(owner, 3, at(1))  # 6 events: submitted + queued per job
    second = submit(owner, 3, at(2))
    report = db.sync(max_events=6)
    assert report.events == 6
    assert set(db.queued) == set(first)
    db.sync(max_events=6)
    assert set(db.queued) == set(first + second)
    assert view(db) == view(fresh(settings))


def test_an_event_log_that_went_back_reloads_everything(settings, queue, owner, agent):
    db = fresh(settings)
    ids = submit(owner, 2, at(1))
    db.sync()
    db.cursor += 1000  # as if the database were restored from an older backup
    report = db.sync()
    assert report.cold
    assert set(db.queued) == set(ids)


def test_gangs_avoided_nodes_and_shared_shapes(settings, queue, owner, agent):
    gang = {
        "armadaproject.io/gangId": "g1",
        "armadaproject.io/gangCardinality": "2",
        FAKE + "duration": "1h",
    }
    ids = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations=gang), job(annotations=gang), job(), job()]),
        now=at(1),
    )
    Job.objects.filter(id=ids[2]).update(mutations={"avoidNodes": ["n-0"]})
    Event.objects.create(
        created=at(2), queue="demo", job_set="set-1", job_id=ids[2], type="queued", payload={}
    )
    db = fresh(settings)
    assert sorted(db.gangs[("demo", "g1")]) == sorted(ids[:2])
    assert [j.id for j in db.gang_members()[("demo", "g1")]] == ids[:2]
    assert db.avoid == {ids[2]: frozenset({"n-0"})}
    # Jobs of one shape share their requests object.
    assert db.queued[ids[2]].requests is db.queued[ids[3]].requests


@pytest.mark.django_db(transaction=True)
def test_the_schedulers_own_leases_are_applied_at_once_and_not_read_again(
    settings, queue, owner, admin_user, agent
):
    """The leases a cycle commits are applied to the scheduler's own job database at once
    (``JobDb.note_leased``); the next sync skips their ``leased`` events and still agrees
    with a fresh load, and a job changed meanwhile by anyone else is read again."""
    from armada.services import scheduler

    scheduler.scheduler_state_reset()
    ids = submit(owner, 6, at(1))
    scheduler_cycle(now=at(2))
    db, _ = scheduler.scheduler_state(settings.ARMADA)
    leased = set(Job.objects.filter(state="leased").values_list("id", flat=True))
    assert len(leased) == 4
    assert set(db.own_leases) == leased  # applied, not read yet
    assert set(db.runs) == leased
    assert set(db.queued) == set(ids) - leased
    assert view(db) == view(fresh(settings))

    report = db.sync()
    assert report.jobs == 0  # only our own leases' events since the cursor
    assert db.own_leases == {}
    assert view(db) == view(fresh(settings))

    # Leased again, then one of them cancelled and the others reported by the executor
    # before the next sync: those are read again, like any change.
    scheduler_cycle(now=at(3))
    assert view(db) == view(fresh(settings))
    victim = sorted(db.own_leases)[0] if db.own_leases else sorted(leased)[0]
    jobs_cancel(
        actor=admin_user, queue="demo", job_set="set-1", job_ids=[victim], reason="", now=at(4)
    )
    agent.tick(at(5))
    db.sync()
    assert db.own_leases == {}
    assert view(db) == view(fresh(settings))
    scheduler.scheduler_state_reset()
