"""The executor agent over the executor API (``tests.executor_api``'s loopback channel, the
real client and the server's own handler): a server that cannot be reached for a while, or
for longer than executorTimeout; a restarted process that adopts its pods; a second process
with the same executor id, which fences the first; a revoked credential. Time is passed in;
the fake cluster (``FakeBackend``) outlives an agent when a test hands it to the next one."""

from __future__ import annotations

import logging
from datetime import datetime

import grpc
import pytest

from armada.core.config import parse_config
from armada.core.states import RunState
from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.client import ExecutorApiClient
from armada.executor.backends.base import PodRequest, PodStatus
from armada.executor.backends.fake import FakeBackend
from armada.models import Event, ExecutorCredential, Job, MetricCounter, Run
from armada.services.executor_credentials import executor_credential_revoke
from armada.services.runs import FAILURE_CATEGORY_COUNTER
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import CANCEL, runs_request_stop
from armada.services.submit import job_submit
from tests.conftest import T0, at, job, job_file
from tests.executor_api import (
    ApiAgent,
    LoopbackChannel,
    LoopbackError,
    api_agent,
    credential_for,
)
from tests.racing import exit_code_categories

pytestmark = pytest.mark.django_db

FAKE = "fake.armadaproject.io/"
TIMEOUT = 60.0  # executorTimeout's default
OUTCOME = {pb.APPLIED: "applied", pb.DUPLICATE: "duplicate", pb.REFUSED: "refused"}


def executor_config():
    return parse_config(
        {
            "executors": [
                {
                    "id": "test",
                    "nodes": [
                        {"name": "n", "count": 2, "allocatable": {"cpu": "8", "memory": "32Gi"}}
                    ],
                    "errorCategories": exit_code_categories("Retain"),
                }
            ]
        }
    ).executors[0]


class Recording:
    """A backend seen through one agent: what that agent asked of the cluster. With
    ``lose_deletions`` the deletions it asks for never happen (the process died first)."""

    def __init__(self, backend: FakeBackend, *, lose_deletions: bool = False) -> None:
        self.backend = backend
        self.lose_deletions = lose_deletions
        self.calls: list[tuple[str, str]] = []

    def create_pod(self, pod: PodRequest, now: datetime) -> None:
        self.calls.append(("create", pod.name))
        self.backend.create_pod(pod, now)

    def delete_pod(self, name: str, now: datetime, grace_seconds: float = 0.0) -> None:
        self.calls.append(("delete", name))
        if not self.lose_deletions:
            self.backend.delete_pod(name, now, grace_seconds)

    def poll(self, now: datetime) -> list[PodStatus]:
        return self.backend.poll(now)

    def read_log(self, name: str, limit_bytes: int = 1_000_000) -> str:
        return self.backend.read_log(name, limit_bytes)


class Answers:
    """Every round's answer an agent gets."""

    def __init__(self, agent: ApiAgent) -> None:
        self.seen: list = []
        real = agent.api.lease

        def lease(request: pb.LeaseRequest):
            answer = real(request)
            self.seen.append(answer)
            return answer

        agent.api.lease = lease


class Outcomes:
    """What the server answered each report an agent sent: (run, phase) -> outcomes, in the
    order they came, and the reasons."""

    def __init__(self, agent: ApiAgent) -> None:
        self.seen: list[tuple[str, RunState, str, str]] = []
        real = agent.api.report

        def report(request: pb.ReportRequest) -> list[pb.EventResult]:
            results = real(request)
            for event, result in zip(request.events, results, strict=True):
                self.seen.append(
                    (
                        event.run_id,
                        RunState(_STATE[event.phase]),
                        OUTCOME[result.outcome],
                        result.reason,
                    )
                )
            return results

        agent.api.report = report

    def of(self, run_id: str) -> list[tuple[str, str]]:
        return [(state, outcome) for r, state, outcome, _ in self.seen if r == run_id]


_STATE = {
    pb.PENDING: "pending",
    pb.RUNNING: "running",
    pb.SUCCEEDED: "succeeded",
    pb.FAILED: "failed",
    pb.CANCELLED: "cancelled",
    pb.PREEMPTED: "preempted",
    pb.LEASE_RETURNED: "lease_returned",
}


def submit(owner, n: int = 1, **annotations) -> list[str]:
    ann = {FAKE + k: v for k, v in annotations.items()}
    return job_submit(
        actor=owner, data=job_file(jobs=[job(annotations=ann) for _ in range(n)]), now=at(0)
    )


def run_of(job_id: str) -> Run:
    return Run.objects.get(job_id=job_id)


def types_for(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


def pods(backend, t: float) -> dict[str, PodStatus]:
    """The pods on the cluster at ``t``, by run, those being deleted left out."""
    return {s.run_id: s for s in backend.poll(at(t)) if not s.deleting}


def outbox(agent: ApiAgent) -> list[tuple[str, RunState]]:
    return [(p.report.run_id, p.report.state) for p in agent.outbox]


LIFE = ["submitted", "queued", "leased", "pending", "running"]


# --- (a) a partition shorter than executorTimeout ---------------------------------------------


def test_while_the_server_is_away_pods_run_and_end_nothing_starts_and_reports_wait(queue, owner):
    agent = api_agent(executor_config())
    agent.tick(at(0))
    long_jobs = submit(owner, 2, duration="1h")
    short_jobs = submit(owner, 2, duration="10s")  # end at 12 s, in the partition
    assert scheduler_cycle(now=at(1)).leased == 4
    agent.tick(at(2))
    running = {run_of(j).id for j in long_jobs + short_jobs}
    assert set(pods(agent.backend, 2)) == running
    assert {run_of(j).state for j in long_jobs + short_jobs} == {"running"}

    agent.channel.down = True
    [late_job] = submit(owner, 1, duration="1h")
    assert scheduler_cycle(now=at(3)).leased == 1  # the executor is not yet taken as lost
    calls = len(agent.channel.calls)
    for t in (5, 15, 25, 40):
        report = agent.tick(at(t))
        assert (report.reachable, report.fenced, report.created, report.reported) == (
            False,
            False,
            0,
            0,
        ), t
    assert len(agent.channel.calls) > calls  # it keeps trying
    # The short pods ended at 12 s and are kept until the server has their reports.
    assert set(pods(agent.backend, 40)) == running
    short_runs = [run_of(j).id for j in short_jobs]
    assert sorted(outbox(agent)) == sorted((r, RunState.SUCCEEDED) for r in short_runs)
    assert run_of(late_job).state == "leased"
    assert {run_of(j).state for j in short_jobs} == {"running"}

    agent.channel.down = False
    outcomes = Outcomes(agent)
    report = agent.tick(at(45))
    assert (report.reachable, report.created, report.reported) == (True, 1, 4)
    assert agent.outbox == []
    # Both successes once, with the time the pods ended; the late lease started at last.
    assert sorted(outcomes.seen[:2]) == sorted(
        (r, RunState.SUCCEEDED, "applied", "") for r in short_runs
    )
    for job_id in short_jobs:
        assert types_for(job_id) == [*LIFE, "succeeded"]
        assert run_of(job_id).finished_at == at(12)
        assert Job.objects.get(id=job_id).state == "succeeded"
    assert set(pods(agent.backend, 45)) == {*(run_of(j).id for j in long_jobs), run_of(late_job).id}
    assert run_of(late_job).state == "running"
    agent.tick(at(46))
    for job_id in short_jobs:
        assert types_for(job_id).count("succeeded") == 1
    for job_id in long_jobs:
        # Running 30 s and more (the default utilisationPeriod): one utilisation report,
        # held while the server was away and sent with the first batch after.
        assert types_for(job_id) == [*LIFE, "utilisation"]


# --- (b) a partition longer than executorTimeout ----------------------------------------------


def test_after_a_partition_longer_than_the_timeout_late_reports_are_refused_and_pods_stopped(
    queue, owner
):
    agent = api_agent(executor_config())
    agent.tick(at(0))
    [long_job] = submit(owner, 1, duration="1h")
    [short_job] = submit(owner, 1, duration="10s")
    [failing_job] = submit(owner, 1, duration="10s", exitCode="1")
    assert scheduler_cycle(now=at(1)).leased == 3
    agent.tick(at(2))
    jobs = (long_job, short_job, failing_job)
    long_run, short_run, failing_run = (run_of(j).id for j in jobs)

    agent.channel.down = True
    agent.tick(at(15))
    assert sorted(outbox(agent)) == sorted(
        [(short_run, RunState.SUCCEEDED), (failing_run, RunState.FAILED)]
    )
    # The server hears nothing for more than executorTimeout: the runs are expired, and the
    # scheduler decides each as one genuine failure.
    cycle = scheduler_cycle(now=at(2 + TIMEOUT + 5))
    assert (cycle.expired, cycle.decided) == (3, 3)
    for job_id in jobs:
        assert (run_of(job_id).state, Job.objects.get(id=job_id).failure_count) == (
            "lease_expired",
            1,
        )

    agent.channel.down = False
    outcomes = Outcomes(agent)
    agent.tick(at(2 + TIMEOUT + 10))
    assert sorted((r, s, o) for r, s, o, _ in outcomes.seen) == sorted(
        [
            (short_run, RunState.SUCCEEDED, "refused"),
            (failing_run, RunState.FAILED, "refused"),
        ]
    )
    assert {reason for *_, reason in outcomes.seen} == {
        "the run ended as lease_expired already; a report of succeeded changes nothing",
        "the run ended as lease_expired already; a report of failed changes nothing",
    }
    assert agent.outbox == [] and agent.runs == {}
    # The server said to stop every run it holds: the long pod is stopped, the succeeded one
    # deleted once its report was answered; the failed one is kept (Retain) as evidence.
    assert set(pods(agent.backend, 2 + TIMEOUT + 10)) == {failing_run}

    scheduler_cycle(now=at(2 + TIMEOUT + 11))
    agent.tick(at(2 + TIMEOUT + 12))
    for job_id in jobs:
        job_row = Job.objects.get(id=job_id)
        assert (job_row.state, job_row.failure_count) == ("failed", 1)
        assert types_for(job_id) == [*LIFE, "lease_expired", "failed"]
    assert not MetricCounter.objects.filter(name=FAILURE_CATEGORY_COUNTER).exists()


# --- (c) a restarted executor -----------------------------------------------------------------


def test_a_restarted_agent_adopts_its_pods_and_the_server_answers_what_it_knows(queue, owner):
    first = api_agent(executor_config(), instance="first")
    first.tick(at(0))
    [long_job] = submit(owner, 1, duration="1h")
    [short_job] = submit(owner, 1, duration="10s")  # ends at 12 s, while no agent runs
    scheduler_cycle(now=at(1))
    first.tick(at(2))
    long_run, short_run = run_of(long_job).id, run_of(short_job).id

    # The process dies; a new one starts on the same cluster, first without the server.
    second = api_agent(executor_config(), first.backend, instance="second")
    second.channel.down = True
    second.tick(at(20))
    assert set(second.runs) == {long_run, short_run}
    assert sorted(outbox(second)) == sorted(
        [
            (long_run, RunState.PENDING),
            (long_run, RunState.RUNNING),
            (short_run, RunState.PENDING),
            (short_run, RunState.RUNNING),
            (short_run, RunState.SUCCEEDED),
        ]
    )
    # Not acknowledged: the succeeded pod stays, to be found again were this one to die.
    assert pods(first.backend, 20)[short_run].succeeded

    second.channel.down = False
    outcomes = Outcomes(second)
    second.tick(at(21))
    assert outcomes.of(long_run) == [("pending", "duplicate"), ("running", "duplicate")]
    assert outcomes.of(short_run) == [
        ("pending", "duplicate"),
        ("running", "duplicate"),
        ("succeeded", "applied"),
    ]
    assert set(pods(first.backend, 21)) == {long_run}  # deleted once acknowledged
    assert types_for(long_job) == LIFE
    assert types_for(short_job) == [*LIFE, "succeeded"]
    assert run_of(short_job).finished_at == at(12)
    assert first.tick(at(22)).fenced  # the old process, were it still alive, stands down


def test_a_restart_between_the_acknowledgement_and_the_deletion_counts_nothing_twice(queue, owner):
    """The server has the run ended already: it tells the new process to let the run go
    (stop), and the new process deletes the succeeded pod left behind, reporting nothing."""
    cluster = FakeBackend()
    dying = Recording(cluster, lose_deletions=True)
    first = api_agent(executor_config(), dying, instance="first")
    first.tick(at(0))
    [job_id] = submit(owner, 1, duration="5s")
    scheduler_cycle(now=at(1))
    first.tick(at(2))
    first.tick(at(10))  # reported succeeded and acknowledged; the deletion is lost
    run_id = run_of(job_id).id
    assert ("delete", f"armada-{job_id}-0") in dying.calls
    assert pods(cluster, 10)[run_id].succeeded

    second = api_agent(executor_config(), cluster, instance="second")
    answers = Answers(second)
    outcomes = Outcomes(second)
    second.tick(at(11))
    assert answers.seen[0].stop == {run_id}
    assert outcomes.seen == [] and second.runs == {}
    assert pods(cluster, 11) == {}
    assert types_for(job_id) == [*LIFE, "succeeded"]
    assert run_of(job_id).finished_at == at(7)


def test_a_restarted_agent_leaves_a_reported_failure_alone_and_keeps_its_pod(queue, owner):
    first = api_agent(executor_config(), instance="first")
    first.tick(at(0))
    [job_id] = submit(owner, 1, duration="5s", exitCode="1")
    scheduler_cycle(now=at(1))
    first.tick(at(2))
    first.tick(at(10))  # failed at 7 s, reported; the pod is kept (Retain)
    scheduler_cycle(now=at(11))
    run_id = run_of(job_id).id
    assert pods(first.backend, 11)[run_id].finished_at == at(7)

    second = api_agent(executor_config(), first.backend, instance="second")
    outcomes = Outcomes(second)
    second.tick(at(12))
    scheduler_cycle(now=at(13))
    assert outcomes.seen == []
    assert run_id in pods(first.backend, 13)  # kept as evidence until its retention
    job_row = Job.objects.get(id=job_id)
    assert (job_row.state, job_row.failure_count) == ("failed", 1)
    assert types_for(job_id).count("failed") == 1
    counted = MetricCounter.objects.get(name=FAILURE_CATEGORY_COUNTER)
    assert (counted.labels["failure_category"], counted.value) == ("user-error", 1)


def test_a_batch_whose_answer_was_lost_is_sent_again_and_answered_duplicate(queue, owner):
    """The server applied a batch but its answer never came back: the agent keeps the
    reports and sends them again; the server answers duplicates, even for the phases before
    the run's end, and nothing is applied or counted twice."""
    agent = api_agent(executor_config())
    agent.tick(at(0))
    [job_id] = submit(owner, 1, pendingDuration="1s", duration="1s")
    scheduler_cycle(now=at(1))
    agent.tick(at(2))  # pending (running at 3 s, succeeded at 4 s)
    run_id = run_of(job_id).id
    assert run_of(job_id).state == "pending"

    real = agent.api._report
    lose = {"answers": 1}

    def answer_lost(request, metadata=None, timeout=None):
        answer = real(request, metadata=metadata, timeout=timeout)
        if lose["answers"]:
            lose["answers"] -= 1
            raise LoopbackError(grpc.StatusCode.UNAVAILABLE, "connection reset")
        return answer

    agent.api._report = answer_lost
    outcomes = Outcomes(agent)
    agent.tick(at(10))
    assert run_of(job_id).state == "succeeded"  # applied, though the agent does not know
    assert outbox(agent) == [(run_id, RunState.RUNNING), (run_id, RunState.SUCCEEDED)]
    assert run_id in pods(agent.backend, 10)  # not deleted: not acknowledged

    agent.tick(at(11))
    assert outcomes.seen == [
        (run_id, RunState.RUNNING, "duplicate", "the run is succeeded already, past running"),
        (run_id, RunState.SUCCEEDED, "duplicate", "the run is succeeded already"),
    ]
    assert agent.outbox == [] and agent.runs == {}
    assert pods(agent.backend, 11) == {}
    assert types_for(job_id) == [*LIFE, "succeeded"]


# --- (d) two processes with one executor id ---------------------------------------------------


def test_a_second_process_fences_the_first_which_stops_acting_on_the_cluster(queue, owner, caplog):
    cluster = FakeBackend()
    a_side, b_side = Recording(cluster), Recording(cluster)
    a = api_agent(executor_config(), a_side, instance="host-a")
    a.tick(at(0))
    first_jobs = submit(owner, 2, duration="1h")
    scheduler_cycle(now=at(1))
    a.tick(at(2))
    assert [kind for kind, _ in a_side.calls] == ["create", "create"]

    b = api_agent(executor_config(), b_side, instance="host-b")
    assert not b.tick(at(3)).fenced  # adopts both pods
    assert set(b.runs) == {run_of(j).id for j in first_jobs}

    a_side.calls.clear()
    with caplog.at_level(logging.ERROR, logger="armada.executor.agent"):
        report = a.tick(at(4))
    assert report.fenced and a.fenced
    assert "fenced, so this process stops acting on the cluster" in caplog.text
    assert "host-b" in caplog.text
    calls = len(a.channel.calls)

    # New work, a cancellation: the newer process carries on, the older touches nothing.
    [new_job] = submit(owner, 1, duration="1h")
    scheduler_cycle(now=at(5))
    runs_request_stop(job_ids=[first_jobs[0]], kind=CANCEL, reason="by hand", now=at(5))
    for t in (6, 7, 8, 2 + 3 * TIMEOUT):
        assert a.tick(at(t)).fenced
        b.tick(at(t))
        scheduler_cycle(now=at(t + 0.5))
    assert a_side.calls == []
    assert len(a.channel.calls) == calls  # and asks the server nothing more
    assert ("create", f"armada-{new_job}-0") in b_side.calls
    assert ("delete", f"armada-{first_jobs[0]}-0") in b_side.calls
    assert run_of(new_job).state == "running"
    assert run_of(first_jobs[0]).state == "cancelled"
    assert run_of(first_jobs[1]).state == "running"  # B holds it: never missing, never expired
    assert set(pods(cluster, 2 + 3 * TIMEOUT)) == {run_of(first_jobs[1]).id, run_of(new_job).id}


# --- (e) a revoked credential -----------------------------------------------------------------


def test_with_a_revoked_credential_the_agent_keeps_its_pods_and_resumes_with_a_good_one(
    queue, owner, admin_user, caplog
):
    holder = {"key": credential_for("test", T0)}
    channel = LoopbackChannel()
    channel.now = T0
    agent = ApiAgent(
        executor_config(),
        FakeBackend(),
        ExecutorApiClient(channel, lambda: holder["key"]),
        instance="host",
        channel=channel,
    )
    agent.tick(at(0))
    [long_job] = submit(owner, 1, duration="1h")
    [short_job] = submit(owner, 1, duration="10s")
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    long_run, short_run = run_of(long_job).id, run_of(short_job).id

    credential = ExecutorCredential.objects.get(cluster_id="test")
    executor_credential_revoke(actor=admin_user, credential_id=credential.pk, now=at(3))
    with caplog.at_level(logging.ERROR, logger="armada.executor.agent"):
        for t in (5, 15, 25):
            report = agent.tick(at(t))
            assert (report.reachable, report.fenced, report.reported) == (False, False, 0), t
    assert "a lease round refused: executor credential refused" in caplog.text
    assert "was revoked at" in caplog.text
    assert not agent.fenced
    assert set(pods(agent.backend, 25)) == {long_run, short_run}  # nothing stopped
    assert outbox(agent) == [(short_run, RunState.SUCCEEDED)]
    assert run_of(short_job).state == "running"

    holder["key"] = credential_for("test", at(26))  # read again on the next call
    report = agent.tick(at(30))
    assert (report.reachable, report.reported) == (True, 1)
    assert agent.outbox == []
    assert types_for(short_job) == [*LIFE, "succeeded"]
    assert run_of(short_job).finished_at == at(12)
    assert set(pods(agent.backend, 30)) == {long_run}
    assert run_of(long_job).state == "running"
