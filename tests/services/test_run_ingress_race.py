"""Ingress info sent by several threads at once, on PostgreSQL, through the executor API's
handler (``wire.executor_server.handle``) as its worker threads call it: every run's
addresses are recorded once and published in exactly one ``ingress_info`` event; the
copies that lost the race are duplicates, and sending them all again changes nothing."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection

from armada.executor.api import executorapi_pb2 as pb
from armada.models import Event, Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, container, job_file
from tests.executor_api import credential_for
from tests.services.test_executor_api_race import EXECUTOR, Api, at_once, configure, event

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 4


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locks between real concurrent transactions are PostgreSQL's")


def addresses(run_id: str) -> dict[int, str]:
    return {8080: f"{run_id.lower()}.example.com:443", 9090: f"{run_id.lower()}.example.com:9443"}


def test_ingress_info_sent_by_four_threads_at_once_is_published_once(settings, queue, owner):
    configure(settings)
    api = Api(credential_for(EXECUTOR, at(0)))
    session = api.open("host/1", at(0))
    api.round(session, [], at(0))
    spec = {
        "podSpec": {"containers": [container("1", "1Gi")]},
        "ingress": [{"ports": [8080, 9090]}],
    }
    job_submit(actor=owner, data=job_file(jobs=[spec] * 8), now=at(0))
    assert scheduler_cycle(now=at(1)).leased == 8
    run_ids = sorted(Run.objects.values_list("id", flat=True))
    started = [
        event(r, phase, at(t)) for r in run_ids for phase, t in ((pb.PENDING, 2), (pb.RUNNING, 3))
    ]
    assert {r.outcome for r in api.report(session, started, at(3))} == {pb.APPLIED}

    # Half the runs get their ingress info in a batch that also brings a success for one.
    info = [event(r, pb.RUNNING, at(4), ingress_addresses=addresses(r)) for r in run_ids]
    info.append(event(run_ids[0], pb.SUCCEEDED, at(5), exit_code=0, exit_codes={"main": 0}))
    results, errors = at_once([lambda: api.report(session, info, at(6))] * THREADS)
    assert errors == []
    results += [api.report(session, info, at(7 + i)) for i in range(2)]
    for i, sent in enumerate(info):
        outcomes = Counter(r[i].outcome for r in results)
        assert outcomes == {pb.APPLIED: 1, pb.DUPLICATE: THREADS + 1}, (i, sent.run_id, outcomes)

    published = Counter(Event.objects.filter(type="ingress_info").values_list("run_id", flat=True))
    assert published == dict.fromkeys(run_ids, 1)
    for run in Run.objects.filter(id__in=run_ids):
        expected = {str(port): text for port, text in addresses(run.id).items()}
        assert run.ingress_addresses == expected
        payload = Event.objects.get(run_id=run.id, type="ingress_info").payload
        assert payload["ingressAddresses"] == expected
        assert (payload["clusterId"], payload["podName"]) == (EXECUTOR, run.pod_name)
    assert Event.objects.filter(type="succeeded").count() == 1
