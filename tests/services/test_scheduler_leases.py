"""The lease write (``services.scheduler_leases.write_leases``), on whichever database the
suite runs: PostgreSQL claims the jobs and inserts their runs in one statement and appends
the events column by column, other databases insert from rows made in Python; both must
leave the same rows. Each lease's run carries its job's requests, its pod name and, away
from home, its node type, priority and tolerations; every other column has the model's
default; the ``leased`` events come in the order the leases were planned, with their
payloads; a job no longer queued is left alone."""

from __future__ import annotations

import pytest

from armada.core.away import AwayOption, toleration_json
from armada.core.scheduling import Lease, Toleration
from armada.core.states import JobState, RunState
from armada.models import Event, Job, Run
from armada.services.scheduler_leases import leased_payload, plan_runs, pod_name, write_leases
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file

pytestmark = pytest.mark.django_db(transaction=True)

AWAY = AwayOption(
    priority=7,
    tolerations=(Toleration(key="gpu", operator="Equal", value="a100", effect="NoSchedule"),),
    node_types=("gpu-a", "gpu-b"),
)
# What a lease gives its run; every other field must be the model's default.
GIVEN = {
    "id",
    "job_id",
    "executor",
    "node",
    "pool",
    "state",
    "requests",
    "pod_name",
    "leased_at",
    "away_node_type",
    "scheduled_priority",
    "away_tolerations",
}


def leases_for(job_ids: list[str]) -> list[tuple[str, Lease]]:
    return [
        ("default", Lease(job_id=j, queue="demo", executor="ex-1", node=f"n{i}", node_id=f"n{i}"))
        for i, j in enumerate(job_ids)
    ]


def submit(owner, n: int) -> list[str]:
    jobs = [job(cpu=str(i + 1), memory=f"{i + 1}Gi") for i in range(n)]
    return job_submit(actor=owner, data=job_file(jobs=jobs), now=at(0))


def test_each_run_is_its_jobs_with_every_other_column_at_its_default(queue, owner):
    ids = submit(owner, 3)
    leases = leases_for(ids)
    planned = plan_runs(leases)
    written: list[dict] = []
    leased = write_leases(leases, at(10), away={ids[1]: AWAY}, written=written, planned=planned)
    assert leased == ids
    assert [r["job_id"] for r in written] == ids
    for job_id in ids:
        run = Run.objects.get(job_id=job_id)
        the_job = Job.objects.get(id=job_id)
        assert run.id == planned[job_id][0]
        assert (run.executor, run.node, run.pool) == planned[job_id][1:]
        assert run.state == RunState.LEASED
        assert run.requests == the_job.requests
        assert run.pod_name == pod_name(job_id)
        assert run.leased_at == at(10)
        if job_id == ids[1]:
            assert run.away_node_type == "gpu-a,gpu-b"
            assert run.scheduled_priority == 7
            assert run.away_tolerations == [toleration_json(t) for t in AWAY.tolerations]
        else:
            assert (run.away_node_type, run.scheduled_priority, run.away_tolerations) == (
                "",
                None,
                [],
            )
        for field in Run._meta.concrete_fields:
            if field.attname not in GIVEN:
                assert getattr(run, field.attname) == field.get_default(), field.name
        assert the_job.state == JobState.LEASED
        assert the_job.latest_run_id == run.id


def test_the_leased_events_follow_the_plan_with_their_payloads(queue, owner):
    ids = submit(owner, 4)
    order = [ids[2], ids[0], ids[3], ids[1]]
    leases = leases_for(order)
    planned = plan_runs(leases)
    before = Event.objects.count()
    write_leases(leases, at(10), away={ids[3]: AWAY}, planned=planned)
    events = list(Event.objects.filter(type="leased").order_by("id"))
    assert Event.objects.count() == before + 4
    assert [e.job_id for e in events] == order
    for event in events:
        run_id, executor, node, pool = planned[event.job_id]
        assert event.run_id == run_id
        assert (event.queue, event.job_set, event.created) == ("demo", "set-1", at(10))
        option = AWAY if event.job_id == ids[3] else None
        assert event.payload == leased_payload(executor, node, pool, option)


def test_a_job_no_longer_queued_is_left_alone(queue, owner):
    ids = submit(owner, 3)
    jobs_cancel(actor=owner, queue="demo", job_set="set-1", job_ids=[ids[1]], reason="", now=at(5))
    written: list[dict] = []
    leased = write_leases(leases_for(ids), at(10), written=written)
    assert leased == [ids[0], ids[2]]
    assert [r["job_id"] for r in written] == leased
    assert not Run.objects.filter(job_id=ids[1]).exists()
    assert not Event.objects.filter(job_id=ids[1], type="leased").exists()
    assert Job.objects.get(id=ids[1]).state == JobState.CANCELLED
