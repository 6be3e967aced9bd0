"""Utilisation reports (``services.run_utilisation``): each becomes one ``utilisation`` event
with the pod's details and quantities, at most one per run per period; what comes too soon,
again, for another executor's run or for a run that has not run changes nothing."""

from __future__ import annotations

import pytest

from armada.core.reports import RunReport, RunUtilisation
from armada.core.states import RunState
from armada.models import Event, Run
from armada.services.run_reports import Outcome, runs_apply_report_batch
from armada.services.run_utilisation import MIN_PERIOD, runs_record_utilisation
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, container, job_file
from tests.services.decision_world import configure

pytestmark = pytest.mark.django_db

APPLIED, DUPLICATE, REFUSED = Outcome.APPLIED, Outcome.DUPLICATE, Outcome.REFUSED
MIB = 1024 * 1024 * 1000  # one MiB in milli-bytes


def usage(run_id: str, when: float, memory_mib: int = 64) -> RunUtilisation:
    return RunUtilisation(
        run_id,
        at(when),
        kubernetes_id="uid-from-the-report",
        max_usage={"cpu": 250, "memory": memory_mib * MIB},
        avg_usage={"cpu": 200, "memory": 32 * MIB},
        cumulative={"cpu": 3000},
    )


def record(reports: list[RunUtilisation], period: float = 30.0, executor: str = "test"):
    outcomes = runs_record_utilisation(executor_id=executor, reports=reports, period_seconds=period)
    return [o.outcome for o in outcomes]


def events(run_id: str) -> list[Event]:
    return list(Event.objects.filter(run_id=run_id, type="utilisation").order_by("id"))


@pytest.fixture
def run_id(settings, owner, queue) -> str:
    agent = configure(settings)
    agent.tick(at(0))
    spec = {"namespace": "team", "podSpec": {"containers": [container("1", "1Gi")]}}
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(0))
    assert scheduler_cycle(now=at(1)).leased == 1
    return Run.objects.get(job_id=job_id).id


def start(run_id: str) -> None:
    reports = [
        RunReport(run_id, RunState.PENDING, at(2), kubernetes_id="pod-uid-1"),
        RunReport(run_id, RunState.RUNNING, at(3), kubernetes_id="pod-uid-1"),
    ]
    outcomes = runs_apply_report_batch(executor_id="test", reports=reports, now=at(3))
    assert [o.outcome for o in outcomes] == [APPLIED, APPLIED]


def test_a_utilisation_report_is_one_event_with_the_pods_details(run_id):
    start(run_id)
    assert record([usage(run_id, 40)]) == [APPLIED]
    [event] = events(run_id)
    run = Run.objects.get(id=run_id)
    assert event.created == at(40) and run.utilisation_at == at(40)
    assert event.payload == {
        "clusterId": "test",
        "kubernetesId": "pod-uid-1",  # the run's, from its first report
        "nodeName": run.node,
        "podName": run.pod_name,
        "podNamespace": "team",
        "podNumber": 0,
        "maxResourcesForPeriod": {"cpu": "250m", "memory": "64Mi"},
        "avgResourcesForPeriod": {"cpu": "200m", "memory": "32Mi"},
        "totalCumulativeUsage": {"cpu": "3"},
    }


def test_at_most_one_per_run_per_period_and_a_batch_sent_again_adds_nothing(run_id):
    start(run_id)
    batch = [usage(run_id, 40), usage(run_id, 50)]
    assert record(batch) == [APPLIED, DUPLICATE]
    assert record(batch) == [DUPLICATE, DUPLICATE]
    assert record([usage(run_id, 69)]) == [DUPLICATE]  # 29 s after the last: too soon
    assert record([usage(run_id, 70, memory_mib=128)]) == [APPLIED]
    recorded = [e.payload["maxResourcesForPeriod"]["memory"] for e in events(run_id)]
    assert recorded == ["64Mi", "128Mi"]


def test_the_period_is_never_shorter_than_the_servers_floor(run_id):
    start(run_id)
    assert record([usage(run_id, 10)], period=0.0) == [APPLIED]
    assert record([usage(run_id, 10 + MIN_PERIOD / 2)], period=0.0) == [DUPLICATE]
    assert record([usage(run_id, 10 + MIN_PERIOD)], period=0.0) == [APPLIED]


def test_refused_for_another_executors_run_a_run_not_started_and_after_its_end(run_id):
    assert record([usage(run_id, 40)], executor="other") == [REFUSED]
    assert record([usage(run_id, 40)]) == [REFUSED]  # leased, never ran
    start(run_id)
    done = RunReport(run_id, RunState.SUCCEEDED, at(45), exit_code=0, exit_codes={"main": 0})
    runs_apply_report_batch(executor_id="test", reports=[done], now=at(45))
    assert record([usage(run_id, 46)]) == [REFUSED]
    assert record([usage(run_id, 44)]) == [APPLIED]  # measured while it ran
    assert len(events(run_id)) == 1
