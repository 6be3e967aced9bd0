"""A run's ingress info (``services.run_ingress`` through ``services.run_reports``): a
RUNNING report with ingress addresses records them on the run and writes one
``ingress_info`` event; what is sent again, too early or for another run's executor is
duplicate or refused and changes nothing."""

from __future__ import annotations

from datetime import datetime

import pytest

from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.models import Event, Job, Run
from armada.services.run_reports import Outcome, runs_apply_report_batch
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, container, job_file
from tests.services.decision_world import configure

pytestmark = pytest.mark.django_db

PENDING, RUNNING, SUCCEEDED = RunState.PENDING, RunState.RUNNING, RunState.SUCCEEDED
APPLIED, DUPLICATE, REFUSED = Outcome.APPLIED, Outcome.DUPLICATE, Outcome.REFUSED
ADDRESSES = {8080: "web.example.com:443", 9090: "metrics.example.com:443"}
STORED = {"8080": "web.example.com:443", "9090": "metrics.example.com:443"}


def ingress(run_id: str, addresses: dict[int, str] | None = None, when: int = 4) -> RunReport:
    return RunReport(run_id, RUNNING, at(when), ingress_addresses=addresses or dict(ADDRESSES))


def progress(run_id: str, state: RunState, when: int) -> RunReport:
    extra = {"exit_code": 0, "exit_codes": {"main": 0}} if state == SUCCEEDED else {}
    return RunReport(run_id, state, at(when), **extra)


def apply(reports: list[RunReport], now: datetime, executor_id: str = "test") -> list:
    return [
        o.outcome
        for o in runs_apply_report_batch(executor_id=executor_id, reports=reports, now=now)
    ]


def ingress_events(run_id: str) -> list[Event]:
    return list(Event.objects.filter(run_id=run_id, type="ingress_info").order_by("id"))


def state_of(run_id: str) -> tuple:
    run = Run.objects.get(id=run_id)
    job = Job.objects.get(id=run.job_id)
    return (
        run.state,
        run.ingress_addresses,
        run.running_at,
        job.state,
        list(Event.objects.filter(run_id=run_id).values_list("type", flat=True)),
    )


@pytest.fixture
def run_id(settings, owner, queue) -> str:
    """A run leased at 1 s to executor ``test`` of a job with an ingress on 8080 and 9090."""
    agent = configure(settings)
    agent.tick(at(0))
    spec = {
        "namespace": "default",
        "podSpec": {"containers": [container("1", "1Gi")]},
        "ingress": [{"ports": [8080, 9090]}],
        "services": [{"type": "Headless", "ports": [8080]}],
    }
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(0))
    assert scheduler_cycle(now=at(1)).leased == 1
    return Run.objects.get(job_id=job_id).id


def running(run_id: str) -> None:
    assert apply([progress(run_id, PENDING, 2), progress(run_id, RUNNING, 3)], at(3)) == [
        APPLIED,
        APPLIED,
    ]


def test_the_ingress_info_is_recorded_and_published_once(run_id):
    running(run_id)
    assert apply([ingress(run_id)], at(5)) == [APPLIED]
    run = Run.objects.get(id=run_id)
    assert run.ingress_addresses == STORED
    [event] = ingress_events(run_id)
    job = Job.objects.get(id=run.job_id)
    assert (event.queue, event.job_set, event.job_id, event.created) == (
        "demo",
        "set-1",
        job.id,
        at(4),
    )
    assert event.payload == {
        "clusterId": "test",
        "nodeName": run.node,
        "podName": run.pod_name,
        "podNamespace": "default",
        "ingressAddresses": STORED,
        "kubernetesId": run.kubernetes_id,
        "podNumber": 0,
    }
    assert run.node and run.pod_name == f"armada-{job.id}-0"
    # The run and the job are as the running report left them.
    assert (run.state, job.state, run.running_at) == ("running", "running", at(3))


def test_the_same_addresses_again_are_a_duplicate_and_change_nothing(run_id):
    running(run_id)
    apply([ingress(run_id)], at(5))
    before = state_of(run_id)
    assert apply([ingress(run_id)], at(6)) == [DUPLICATE]
    # In another order of ports, and sent twice in one batch: still the same addresses.
    swapped = dict(reversed(list(ADDRESSES.items())))
    assert apply([ingress(run_id, swapped), ingress(run_id, swapped)], at(7)) == [
        DUPLICATE,
        DUPLICATE,
    ]
    assert state_of(run_id) == before
    assert len(ingress_events(run_id)) == 1


def test_twice_in_one_batch_is_applied_once(run_id):
    running(run_id)
    assert apply([ingress(run_id), ingress(run_id)], at(5)) == [APPLIED, DUPLICATE]
    assert len(ingress_events(run_id)) == 1


def test_other_addresses_later_are_refused(run_id):
    running(run_id)
    apply([ingress(run_id)], at(5))
    before = state_of(run_id)
    [outcome] = runs_apply_report_batch(
        executor_id="test", reports=[ingress(run_id, {8080: "elsewhere:1"})], now=at(6)
    )
    assert outcome.outcome == REFUSED
    assert "recorded already" in outcome.reason and "8080: web.example.com:443" in outcome.reason
    assert state_of(run_id) == before


@pytest.mark.parametrize("reached", [None, PENDING], ids=["leased", "pending"])
def test_before_the_run_runs_it_is_refused(run_id, reached):
    if reached is not None:
        apply([progress(run_id, reached, 2)], at(2))
    before = state_of(run_id)
    [outcome] = runs_apply_report_batch(executor_id="test", reports=[ingress(run_id)], now=at(5))
    assert outcome.outcome == REFUSED
    assert "not running" in outcome.reason
    assert state_of(run_id) == before


def test_after_the_run_ended_it_is_a_duplicate(run_id):
    running(run_id)
    apply([progress(run_id, SUCCEEDED, 4)], at(4))
    before = state_of(run_id)
    [outcome] = runs_apply_report_batch(executor_id="test", reports=[ingress(run_id)], now=at(6))
    assert (outcome.outcome, "ended as succeeded" in outcome.reason) == (DUPLICATE, True)
    assert state_of(run_id) == before
    assert ingress_events(run_id) == []


def test_another_executors_report_is_refused(run_id):
    running(run_id)
    before = state_of(run_id)
    assert apply([ingress(run_id)], at(5), executor_id="intruder") == [REFUSED]
    assert state_of(run_id) == before


def test_in_one_batch_it_comes_after_the_running_report_and_before_the_end(run_id):
    """Whatever the order sent: pending, running, the ingress info, then the success."""
    batch = [
        progress(run_id, SUCCEEDED, 6),
        ingress(run_id, when=5),
        progress(run_id, RUNNING, 3),
        progress(run_id, PENDING, 2),
    ]
    assert apply(batch, at(7)) == [APPLIED] * 4
    types = list(Event.objects.filter(run_id=run_id).values_list("type", flat=True))
    assert types == ["leased", "pending", "running", "ingress_info", "succeeded"]
    run = Run.objects.get(id=run_id)
    assert (run.state, run.ingress_addresses) == ("succeeded", STORED)


def test_beside_a_returned_lease_in_the_full_tier(run_id, owner):
    """A batch that writes every run column (a lease returned for another run) still writes
    the addresses."""
    running(run_id)
    other_job = job_submit(
        actor=owner,
        data=job_file(jobs=[{"podSpec": {"containers": [container("1", "1Gi")]}}]),
        now=at(4),
    )[0]
    assert scheduler_cycle(now=at(5)).leased == 1
    other = Run.objects.get(job_id=other_job).id
    returned = RunReport(other, RunState.LEASE_RETURNED, at(6), reason="PodCreationFailed")
    assert apply([returned, ingress(run_id)], at(6)) == [APPLIED, APPLIED]
    assert Run.objects.get(id=run_id).ingress_addresses == STORED
    assert Run.objects.get(id=other).state == "lease_returned"


def test_addresses_on_another_phase_are_refused(run_id):
    running(run_id)
    before = state_of(run_id)
    success = RunReport(
        run_id, SUCCEEDED, at(5), exit_code=0, exit_codes={"main": 0}, ingress_addresses=ADDRESSES
    )
    [outcome] = runs_apply_report_batch(executor_id="test", reports=[success], now=at(6))
    assert outcome.outcome == REFUSED and "running report" in outcome.reason
    assert state_of(run_id) == before


def test_a_running_report_without_addresses_is_no_ingress_info(run_id):
    assert apply([RunReport(run_id, RUNNING, at(3), ingress_addresses={})], at(3)) == [APPLIED]
    assert Run.objects.get(id=run_id).ingress_addresses == {}
    assert ingress_events(run_id) == []
