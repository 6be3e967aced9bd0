"""Armada's SchedulerReporting paths (``/v1/scheduling-report``,
``/v1/queue/{queueName}/scheduler-report``, ``/v1/job/{jobId}/scheduler-report``) and its gRPC
service: the text ``armadactl`` prints for our REST API's reports, with the same permissions,
as ``{"report": "..."}``."""

from __future__ import annotations

import grpc
import pytest
from django.test import Client

from armada.cli.reports import render_job_report, render_queue_report, render_scheduling_report
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from armada.wire.scheduler_reporting_proto import SERVICE, message_class
from tests.conftest import at, fake_agent, job, job_file
from tests.wire.gateway_calls import body
from tests.wire.grpc_server import TIMEOUT, basic, failure

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(settings, queue, owner) -> dict[str, str]:
    """Queue ``demo`` (olive's) with a running job and one too big to fit, after a round."""
    agent = fake_agent(settings, cpu="2", memory="8Gi")
    [running] = job_submit(actor=owner, data=job_file(jobs=[job(cpu="1")]), now=at(0))
    [waiting] = job_submit(actor=owner, data=job_file(jobs=[job(cpu="64")]), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    return {"running": running, "waiting": waiting}


def as_user(username: str) -> Client:
    client = Client(HTTP_HOST="localhost")
    client.login(username=username, password=f"{username}-password")
    return client


def report(client: Client, path: str, **query) -> str:
    response = client.get(path, query)
    assert response.status_code == 200, response.content
    answer = body(response)
    assert set(answer) == {"report"}
    return answer["report"]


def api(client: Client, path: str, **query) -> dict:
    response = client.get(f"/api/v1/{path}", query)
    assert response.status_code == 200, response.content
    return response.json()


def test_queue_report_is_armadactls_text_of_our_report(world, owner):
    olive = as_user("olive")
    text = report(olive, "/v1/queue/demo/scheduler-report")
    assert text == render_queue_report(api(olive, "reports/queues/demo"), 0)
    assert text.startswith("Queue demo (pool: all pools)")
    assert "Queued jobs wait because:" in text
    verbose = report(olive, "/v1/queue/demo/scheduler-report", verbosity="2")
    assert verbose == render_queue_report(api(olive, "reports/queues/demo", verbosity=2), 2)
    assert world["waiting"] in verbose  # from verbosity 1: the waiting jobs' ids
    # Armada's -vvvv and more: our most detailed report.
    most = report(olive, "/v1/queue/demo/scheduler-report", verbosity="7")
    assert most == render_queue_report(api(olive, "reports/queues/demo", verbosity=3), 3)


def test_job_report_is_armadactls_text(world, owner):
    olive = as_user("olive")
    for job_id in world.values():
        text = report(olive, f"/v1/job/{job_id}/scheduler-report")
        expected = render_job_report(
            api(olive, f"jobs/{job_id}/scheduling"), api(olive, f"jobs/{job_id}")
        )
        assert text == expected
    waiting = report(olive, f"/v1/job/{world['waiting']}/scheduler-report")
    assert waiting.startswith(f"Job {world['waiting']} (queue demo, job set set-1): queued")
    assert "Unschedulable:" in waiting


def test_scheduling_report_and_armadas_older_filters(world, owner):
    olive = as_user("olive")
    text = report(olive, "/v1/scheduling-report")
    assert text == render_scheduling_report(api(olive, "reports/scheduling"), 0)
    assert text.startswith("Scheduling report (pool: all pools)") and "demo" in text
    by_queue = report(olive, "/v1/scheduling-report", **{"mostRecentForQueue.queueName": "demo"})
    assert by_queue == report(olive, "/v1/queue/demo/scheduler-report")
    by_job = report(olive, "/v1/scheduling-report", **{"mostRecentForJob.jobId": world["waiting"]})
    assert by_job == report(olive, f"/v1/job/{world['waiting']}/scheduler-report")


def test_the_reports_need_watch_as_ours_do(world, outsider):
    otto = as_user("otto")
    for path in ("/v1/queue/demo/scheduler-report", f"/v1/job/{world['running']}/scheduler-report"):
        response = otto.get(path)
        assert response.status_code == 403, path
        assert body(response)["code"] == 7 and "watch" in body(response)["message"]
    # The overall report shows only what the caller may watch.
    assert "demo" not in report(otto, "/v1/scheduling-report").split("\n", 1)[1]
    assert Client().get("/v1/scheduling-report").status_code == 401


@pytest.mark.parametrize(
    ("path", "query", "status", "field"),
    [
        ("/v1/queue/nosuch/scheduler-report", {}, 404, "nosuch"),
        ("/v1/job/01nosuchjob/scheduler-report", {}, 404, "01nosuchjob"),
        ("/v1/queue/demo/scheduler-report", {"verbosity": "-1"}, 400, "verbosity"),
        ("/v1/queue/demo/scheduler-report", {"verbosity": "lots"}, 400, "verbosity"),
        ("/v1/scheduling-report", {"verbosity": "99999999999"}, 400, "verbosity"),
        ("/v1/scheduling-report", {"mostRecentForQueue.queueName": " "}, 400, "queueName"),
        ("/v1/scheduling-report", {"mostRecentForJob.jobId": "01nosuchjob"}, 404, "01nosuchjob"),
    ],
)
def test_bad_requests_name_what_is_wrong(world, owner, path, query, status, field):
    response = as_user("olive").get(path, query)
    assert response.status_code == status, response.content
    assert field in body(response)["message"]


def _grpc_call(server, method: str, request, metadata):
    call = server.channel.unary_unary(
        f"/{SERVICE}/{method}",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=message_class(method.removeprefix("Get")).FromString,
    )
    return call(request, metadata=metadata, timeout=TIMEOUT)


@pytest.mark.django_db(transaction=True)  # the server's threads read what the test wrote
def test_the_grpc_service_answers_the_same_text(world, serve, owner, outsider):
    server = serve()
    olive = basic("olive", "olive-password")
    request = message_class("QueueReportRequest")(queue_name="demo", verbosity=1)
    answer = _grpc_call(server, "GetQueueReport", request, olive)
    assert answer.report == report(as_user("olive"), "/v1/queue/demo/scheduler-report", verbosity=1)
    job_request = message_class("JobReportRequest")(job_id=world["waiting"])
    job_answer = _grpc_call(server, "GetJobReport", job_request, olive)
    assert job_answer.report.startswith(f"Job {world['waiting']}")
    overall = _grpc_call(
        server, "GetSchedulingReport", message_class("SchedulingReportRequest")(), olive
    )
    assert overall.report.startswith("Scheduling report")
    denied = failure(
        lambda: _grpc_call(server, "GetQueueReport", request, basic("otto", "otto-password"))
    )
    assert denied.code() == grpc.StatusCode.PERMISSION_DENIED
    empty = failure(
        lambda: _grpc_call(server, "GetJobReport", message_class("JobReportRequest")(), olive)
    )
    assert empty.code() == grpc.StatusCode.INVALID_ARGUMENT and "jobId" in empty.details()
