"""Armada's Jobs service over our rows: status, details, run details, errors, active queues
and the status by external job URI, each behind the ``watch`` permission."""

from __future__ import annotations

import pytest
from armada_client.armada import job_pb2, submit_pb2

from armada.models import Job, Run
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import jobs_cancel
from armada.services.submit import job_submit
from armada.wire.registry import Call, load_operations
from tests.conftest import T0, at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"


def call(name: str, user, request):
    return load_operations()[f"api.Jobs/{name}"].func(Call(actor=user, now=T0), request)


def timed(**annotations: str) -> dict:
    return job(annotations={FAKE + k: v for k, v in annotations.items()})


@pytest.fixture
def jobs(settings, queue, owner) -> dict[str, str]:
    """One job in each state we can reach in a few ticks, in queue ``demo``."""
    agent = fake_agent(settings, cpu="3", memory="16Gi")
    ids = job_submit(
        actor=owner,
        data=job_file(
            jobs=[
                timed(duration="1s"),
                timed(duration="1s", exitCode="2", terminationMessage="bad input"),
                timed(duration="1h"),
            ]
        ),
        now=at(0),
    )
    scheduler_cycle(now=at(1))
    for t in (2, 3, 4, 5):
        agent.tick(at(t))
    scheduler_cycle(now=at(6))
    [queued, cancelled] = job_submit(actor=owner, data=job_file(jobs=[timed(), timed()]), now=at(7))
    jobs_cancel(
        actor=owner, queue="demo", job_set="set-1", job_ids=[cancelled], reason="", now=at(8)
    )
    named = dict(zip(("succeeded", "failed", "running"), ids, strict=True))
    named |= {"queued": queued, "cancelled": cancelled}
    states = {name: Job.objects.get(id=job_id).state for name, job_id in named.items()}
    assert states == {
        "succeeded": "succeeded",
        "failed": "failed",
        "running": "running",
        "queued": "queued",
        "cancelled": "cancelled",
    }
    return named


@pytest.fixture
def elsewhere(admin_user) -> str:
    """A job in queue ``private``, which olive may not watch."""
    queue_create(actor=admin_user, data={"name": "private"}, now=T0)
    [job_id] = job_submit(actor=admin_user, data=job_file(queue="private"), now=T0)
    return job_id


def test_job_status_of_every_id_asked_for_unknown_ones_unknown(jobs, owner):
    asked = [*jobs.values(), "01nosuchjob"]
    response = call("GetJobStatus", owner, job_pb2.JobStatusRequest(job_ids=asked))
    states = {k: submit_pb2.JobState.Name(v) for k, v in response.job_states.items()}
    assert states == {
        jobs["succeeded"]: "SUCCEEDED",
        jobs["failed"]: "FAILED",
        jobs["running"]: "RUNNING",
        jobs["queued"]: "QUEUED",
        jobs["cancelled"]: "CANCELLED",
        "01nosuchjob": "UNKNOWN",
    }


def test_reads_need_watch_on_every_queue_involved(jobs, owner, outsider, admin_user, elsewhere):
    from armada.services.errors import PermissionDenied

    mixed = job_pb2.JobStatusRequest(job_ids=[jobs["running"], elsewhere])
    with pytest.raises(PermissionDenied, match="private"):
        call("GetJobStatus", owner, mixed)
    with pytest.raises(PermissionDenied, match="demo"):
        call("GetJobDetails", outsider, job_pb2.JobDetailsRequest(job_ids=[jobs["running"]]))
    with pytest.raises(PermissionDenied):
        call("GetJobErrors", outsider, job_pb2.JobErrorsRequest(job_ids=[jobs["failed"]]))
    run_id = Run.objects.get(job_id=jobs["running"]).id
    with pytest.raises(PermissionDenied):
        call("GetJobRunDetails", outsider, job_pb2.JobRunDetailsRequest(run_ids=[run_id]))
    # Ids that match nothing reveal nothing and need nothing.
    unknown = call("GetJobStatus", outsider, job_pb2.JobStatusRequest(job_ids=["01nope"]))
    assert dict(unknown.job_states) == {"01nope": submit_pb2.UNKNOWN}
    assert len(call("GetJobStatus", admin_user, mixed).job_states) == 2


@pytest.mark.parametrize(
    ("name", "request_"),
    [
        ("GetJobStatus", job_pb2.JobStatusRequest(job_ids=[f"j{i}" for i in range(501)])),
        ("GetJobDetails", job_pb2.JobDetailsRequest(job_ids=[f"j{i}" for i in range(501)])),
        ("GetJobErrors", job_pb2.JobErrorsRequest(job_ids=[f"j{i}" for i in range(501)])),
        ("GetJobRunDetails", job_pb2.JobRunDetailsRequest(run_ids=[f"r{i}" for i in range(501)])),
    ],
)
def test_more_than_500_ids_is_invalid_argument_naming_the_field(owner, name, request_):
    from armada.services.errors import ValidationFailed

    with pytest.raises(ValidationFailed) as raised:
        call(name, owner, request_)
    assert [e.field for e in raised.value.errors] == [
        "runIds" if name == "GetJobRunDetails" else "jobIds"
    ]


def test_job_details_without_expansion(jobs, owner):
    asked = [jobs["running"], jobs["queued"], "01nope"]
    details = call("GetJobDetails", owner, job_pb2.JobDetailsRequest(job_ids=asked)).job_details
    assert set(details) == {jobs["running"], jobs["queued"]}  # unknown ids left out
    running = details[jobs["running"]]
    assert (running.queue, running.jobset, running.namespace) == ("demo", "set-1", "default")
    assert running.state == submit_pb2.RUNNING
    assert running.submitted_ts.ToDatetime().replace(tzinfo=T0.tzinfo) == at(0)
    assert running.latest_run_id == Run.objects.get(job_id=jobs["running"]).id
    assert not running.HasField("job_spec") and len(running.job_runs) == 0
    assert details[jobs["queued"]].latest_run_id == ""


def test_job_details_expanded_with_spec_and_runs(jobs, owner):
    request = job_pb2.JobDetailsRequest(
        job_ids=[jobs["succeeded"], jobs["running"]], expand_job_spec=True, expand_job_run=True
    )
    details = call("GetJobDetails", owner, request).job_details
    done = details[jobs["succeeded"]]
    assert done.job_spec.id == jobs["succeeded"] and done.job_spec.owner == "olive"
    assert done.job_spec.pod_spec.containers[0].image == "busybox:latest"
    [run] = done.job_runs
    stored = Run.objects.get(job_id=jobs["succeeded"])
    assert (run.run_id, run.job_id, run.cluster, run.node) == (
        stored.id,
        jobs["succeeded"],
        "test",
        "n",
    )
    assert run.state == job_pb2.RUN_STATE_SUCCEEDED
    assert run.finished_ts.ToDatetime().replace(tzinfo=T0.tzinfo) == stored.finished_at
    assert run.started_ts.ToDatetime().replace(tzinfo=T0.tzinfo) == stored.running_at
    assert done.latest_run_id == stored.id
    [running_run] = details[jobs["running"]].job_runs
    assert running_run.state == job_pb2.RUN_STATE_RUNNING and not running_run.HasField(
        "finished_ts"
    )


def test_a_cancelled_job_says_when_why_and_who(jobs, owner):
    request = job_pb2.JobDetailsRequest(job_ids=[jobs["cancelled"]])
    detail = call("GetJobDetails", owner, request).job_details[jobs["cancelled"]]
    assert detail.state == submit_pb2.CANCELLED
    assert detail.cancel_ts.ToDatetime().replace(tzinfo=T0.tzinfo) == at(8)
    assert (detail.cancel_reason, detail.cancel_user) == ("cancelled by olive", "olive")


def test_job_details_of_many_jobs_cost_a_few_queries(jobs, owner, django_assert_max_num_queries):
    ids = job_submit(actor=owner, data=job_file(jobs=[timed() for _ in range(40)]), now=at(9))
    request = job_pb2.JobDetailsRequest(
        job_ids=[*ids, *jobs.values()], expand_job_spec=True, expand_job_run=True
    )
    with django_assert_max_num_queries(6):
        details = call("GetJobDetails", owner, request).job_details
    assert len(details) == 45


def test_run_details(jobs, owner):
    runs = {r.job_id: r for r in Run.objects.all()}
    asked = [runs[jobs["failed"]].id, runs[jobs["running"]].id, "01nope"]
    details = call("GetJobRunDetails", owner, job_pb2.JobRunDetailsRequest(run_ids=asked))
    got = details.job_run_details
    assert set(got) == set(asked[:2])
    assert got[asked[0]].state == job_pb2.RUN_STATE_FAILED
    assert got[asked[0]].job_id == jobs["failed"]
    assert got[asked[1]].state == job_pb2.RUN_STATE_RUNNING
    assert got[asked[1]].leased_ts.ToDatetime().replace(tzinfo=T0.tzinfo) == at(1)


def test_job_errors_are_the_error_a_job_ended_with(jobs, owner):
    asked = [jobs["failed"], jobs["succeeded"], jobs["running"], "01nope"]
    errors = call("GetJobErrors", owner, job_pb2.JobErrorsRequest(job_ids=asked)).job_errors
    assert set(errors) == set(asked[:3])
    assert "Error" in errors[jobs["failed"]] and "bad input" in errors[jobs["failed"]]
    assert errors[jobs["succeeded"]] == errors[jobs["running"]] == ""


def test_active_queues_by_pool_only_those_the_caller_may_watch(jobs, owner, admin_user, settings):
    request = job_pb2.GetActiveQueuesRequest()
    mine = call("GetActiveQueues", owner, request).active_queues_by_pool
    assert {pool: list(q.queues) for pool, q in mine.items()} == {"default": ["demo"]}
    # A running job of a queue olive may not watch is left out for her, not for root.
    queue_create(actor=admin_user, data={"name": "private"}, now=T0)
    Run.objects.filter(job_id=jobs["running"]).update(pool="gpu")
    Job.objects.filter(id=jobs["running"]).update(queue="private")
    assert call("GetActiveQueues", owner, request).active_queues_by_pool == {}
    every = call("GetActiveQueues", admin_user, request).active_queues_by_pool
    assert {pool: list(q.queues) for pool, q in every.items()} == {"gpu": ["private"]}


def test_status_using_the_external_job_uri(queue, owner, outsider):
    from armada.services.errors import PermissionDenied, ValidationFailed
    from armada.wire.podspec import pod_spec_message

    uri = "https://scheduler.example/runs/7"
    # Submitted through Armada's SubmitJobs, which keeps the URI with the job.
    submit = load_operations()["api.Submit/SubmitJobs"].func
    item = submit_pb2.JobSubmitRequestItem(pod_spec=pod_spec_message(job()["podSpec"]))
    tagged = submit_pb2.JobSubmitRequestItem()
    tagged.CopyFrom(item)
    tagged.external_job_uri = uri
    answer = submit(
        Call(actor=owner, now=T0),
        submit_pb2.JobSubmitRequest(
            queue="demo", job_set_id="set-1", job_request_items=[tagged, item]
        ),
    )
    [wanted, _other] = [i.job_id for i in answer.job_response_items]
    request = job_pb2.JobStatusUsingExternalJobUriRequest(
        queue="demo", jobset="set-1", external_job_uri=uri
    )
    response = call("GetJobStatusUsingExternalJobUri", owner, request)
    assert dict(response.job_states) == {wanted: submit_pb2.QUEUED}
    with pytest.raises(PermissionDenied):
        call("GetJobStatusUsingExternalJobUri", outsider, request)
    with pytest.raises(ValidationFailed) as raised:
        call(
            "GetJobStatusUsingExternalJobUri",
            owner,
            job_pb2.JobStatusUsingExternalJobUriRequest(queue="demo", jobset="set-1"),
        )
    assert [e.field for e in raised.value.errors] == ["externalJobUri"]
