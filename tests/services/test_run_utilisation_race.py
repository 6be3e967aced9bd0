"""Report batches with utilisation sent by several threads at once, on PostgreSQL, through the
executor API's handler as its worker threads call it: every run gets exactly one
``utilisation`` event for the period (none lost, none doubled), the batch's run events are
applied once, and sending everything again adds nothing."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection

from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.messages import timestamp
from armada.models import Event, Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from armada.wire.executor_server import handle
from tests.conftest import at, container, job_file
from tests.executor_api import credential_for
from tests.services.test_executor_api_race import EXECUTOR, PEER, Api, at_once, configure, event

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 4
RUNS = 12


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locks between real concurrent transactions are PostgreSQL's")


def utilisation(run_id: str, when: float) -> pb.RunUtilisation:
    return pb.RunUtilisation(
        run_id=run_id,
        at=timestamp(at(when)),
        kubernetes_id=f"uid-{run_id.lower()}",
        max_resources_for_period={"cpu": "500m", "memory": "100Mi"},
        avg_resources_for_period={"cpu": "250m", "memory": "80Mi"},
        total_cumulative_usage={"cpu": "12"},
    )


def report(api: Api, session: str, events: list, usage: list, now: float) -> pb.ReportResponse:
    request = pb.ReportRequest(
        executor_id=EXECUTOR,
        session=session,
        events=events,
        utilisation=usage,
        utilisation_period_seconds=30.0,
    )
    [raw] = handle("ReportEvents", api.metadata, PEER, request.SerializeToString(), at(now))
    return pb.ReportResponse.FromString(raw)


def test_utilisation_batches_sent_by_four_threads_at_once_are_recorded_once(settings, queue, owner):
    configure(settings)
    api = Api(credential_for(EXECUTOR, at(0)))
    session = api.open("host/1", at(0))
    api.round(session, [], at(0))
    spec = {"podSpec": {"containers": [container("1", "1Gi")]}}
    job_submit(actor=owner, data=job_file(jobs=[spec] * RUNS), now=at(0))
    assert scheduler_cycle(now=at(1)).leased == RUNS
    run_ids = sorted(Run.objects.values_list("id", flat=True))
    started = [
        event(r, phase, at(t), kubernetes_id=f"uid-{r.lower()}")
        for r in run_ids
        for phase, t in ((pb.PENDING, 2), (pb.RUNNING, 3))
    ]
    assert {r.outcome for r in api.report(session, started, at(3))} == {pb.APPLIED}

    # One batch: every run's utilisation (two periods' worth for the first run), and the
    # success of the last run, measured before it ended.
    usage = [utilisation(r, 40) for r in run_ids] + [utilisation(run_ids[0], 75)]
    ended = [event(run_ids[-1], pb.SUCCEEDED, at(50), exit_code=0, exit_codes={"main": 0})]
    results, errors = at_once([lambda: report(api, session, ended, usage, 80)] * THREADS)
    assert errors == []
    results += [report(api, session, ended, usage, 81 + i) for i in range(2)]
    for i in range(len(usage)):
        outcomes = Counter(r.utilisation_results[i].outcome for r in results)
        assert outcomes == {pb.APPLIED: 1, pb.DUPLICATE: len(results) - 1}, (i, outcomes)
    assert Counter(r.results[0].outcome for r in results)[pb.APPLIED] == 1

    recorded = Counter(Event.objects.filter(type="utilisation").values_list("run_id", flat=True))
    assert recorded == {**dict.fromkeys(run_ids, 1), run_ids[0]: 2}
    for run in Run.objects.filter(id__in=run_ids):
        assert run.utilisation_at == (at(75) if run.id == run_ids[0] else at(40))
    payloads = Event.objects.filter(type="utilisation").values_list("run_id", "payload")
    for run_id, payload in payloads:
        assert payload["kubernetesId"] == f"uid-{run_id.lower()}"
        assert payload["maxResourcesForPeriod"] == {"cpu": "500m", "memory": "100Mi"}
