"""Binoculars' Logs over our run logs: the order of checks, the lines and their times, the
options (since, tail, limit, previous, container), and the REST gateway's
``/v1/binoculars/log`` and ``/v1/binoculars/cordon`` (refused after its checks)."""

from __future__ import annotations

from datetime import datetime

import pytest
from armada_client.armada import binoculars_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta_v1
from django.test import Client

from armada.models import Node, RunLog
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.wire.binoculars_ops import (
    MAX_LOG_BYTES,
    LogQuery,
    log_lines,
    parse_rfc3339,
    rfc3339_nano,
)
from armada.wire.registry import Call, load_operations
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_live_executor, make_run
from tests.wire.gateway_calls import body, post

pytestmark = pytest.mark.django_db

JOB = "01binocularsjob00000000000"
TEXT = "starting\nreading input\n\nwrote 3 rows\ndone\n"
SENT = at(30)  # when the executor last sent the log


def logs(actor, **fields):
    request = binoculars_pb2.LogRequest(**fields)
    op = load_operations()["binoculars.Binoculars/Logs"]
    return op.func(Call(actor=actor, now=at(60)), request)


def lines_of(response) -> list[str]:
    return [line.line for line in response.log]


def problems(exc: ValidationFailed) -> dict[str, str]:
    return {e.field: e.message for e in exc.errors}


@pytest.fixture
def ran(queue) -> str:
    """A job of queue ``demo`` (olive's) with two runs: the first failed, the second ran."""
    make_job(
        JOB,
        namespace="team-a",
        pod_spec={"containers": [{"name": "main"}, {"name": "sidecar"}]},
    )
    first = make_run("01run-first", JOB, state="failed", leased_at=at(1))
    second = make_run("01run-second", JOB, state="succeeded", leased_at=at(10))
    RunLog.objects.create(run=first, text="attempt one\nout of memory\n", updated_at=at(5))
    RunLog.objects.create(run=second, text=TEXT, updated_at=SENT)
    return JOB


def test_every_line_of_the_latest_run_in_order_with_the_time_it_was_sent(ran, owner):
    response = logs(owner, job_id=ran, pod_namespace="team-a")
    assert lines_of(response) == ["starting", "reading input", "", "wrote 3 rows", "done"]
    assert {line.timestamp for line in response.log} == {"2026-01-01T12:00:30Z"}


def test_the_namespace_defaults_to_default_and_must_be_the_jobs(ran, owner, queue):
    with pytest.raises(NotFound, match="namespace 'default'.*'team-a'"):
        logs(owner, job_id=ran)
    make_job("01plainjob0000000000000000")  # namespace default
    make_run("01plain-run", "01plainjob0000000000000000")
    assert lines_of(logs(owner, job_id="01plainjob0000000000000000")) == []
    assert lines_of(logs(owner, job_id="01plainjob0000000000000000", pod_namespace="default")) == []


def test_previous_reads_the_run_before_the_latest(ran, owner):
    options = core_v1.PodLogOptions(previous=True)
    response = logs(owner, job_id=ran, pod_namespace="team-a", log_options=options)
    assert lines_of(response) == ["attempt one", "out of memory"]
    assert response.log[0].timestamp == "2026-01-01T12:00:05Z"


def test_tail_lines_keeps_the_last_lines(ran, owner):
    for tail, expected in ((2, ["wrote 3 rows", "done"]), (0, []), (99, lines_of_text())):
        options = core_v1.PodLogOptions(tailLines=tail)
        response = logs(owner, job_id=ran, pod_namespace="team-a", log_options=options)
        assert lines_of(response) == expected, tail


def lines_of_text() -> list[str]:
    return TEXT.rstrip("\n").split("\n")


def test_limit_bytes_sends_whole_lines_counted_as_kubernetes_counts_them(ran, owner):
    stamp = "2026-01-01T12:00:30Z"
    first_two = len(f"{stamp} starting\n") + len(f"{stamp} reading input\n")
    for limit, expected in (
        (first_two, ["starting", "reading input"]),
        (first_two - 1, ["starting"]),
        (1, []),
    ):
        options = core_v1.PodLogOptions(limitBytes=limit)
        response = logs(owner, job_id=ran, pod_namespace="team-a", log_options=options)
        assert lines_of(response) == expected, limit


def test_since_keeps_all_lines_or_none(ran, owner):
    for since, count in (("2026-01-01T12:00:30Z", 5), ("2026-01-01T12:00:30.000001Z", 0)):
        response = logs(owner, job_id=ran, pod_namespace="team-a", since_time=since)
        assert len(response.log) == count, since
    later = core_v1.PodLogOptions(sinceTime=meta_v1.Time(seconds=int(SENT.timestamp()) + 1))
    assert logs(owner, job_id=ran, pod_namespace="team-a", log_options=later).log == []
    # The call arrives at at(60): the last 30 s include the log's time, the last 29 s do not.
    for seconds, count in ((30, 5), (29, 0)):
        options = core_v1.PodLogOptions(sinceSeconds=seconds)
        response = logs(owner, job_id=ran, pod_namespace="team-a", log_options=options)
        assert len(response.log) == count, seconds


def test_a_container_must_be_one_of_the_pods(ran, owner):
    named = core_v1.PodLogOptions(container="sidecar")
    assert len(logs(owner, job_id=ran, pod_namespace="team-a", log_options=named).log) == 5
    with pytest.raises(ValidationFailed) as caught:
        logs(
            owner,
            job_id=ran,
            pod_namespace="team-a",
            log_options=core_v1.PodLogOptions(container="x"),
        )
    assert "main, sidecar" in problems(caught.value)["logOptions.container"]


def test_bad_fields_are_named_all_at_once(ran, owner):
    with pytest.raises(ValidationFailed) as caught:
        logs(
            owner,
            pod_number=-1,
            log_options=core_v1.PodLogOptions(tailLines=-1, limitBytes=0),
        )
    assert set(problems(caught.value)) == {
        "jobId",
        "podNumber",
        "logOptions.tailLines",
        "logOptions.limitBytes",
    }


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"since_time": "yesterday"}, "sinceTime"),
        ({"since_time": "2026-01-01"}, "sinceTime"),
        ({"since_time": "2026-01-01T10:00:00"}, "sinceTime"),
        ({"log_options": core_v1.PodLogOptions(sinceSeconds=0)}, "logOptions.sinceSeconds"),
        (
            {
                "log_options": core_v1.PodLogOptions(
                    sinceSeconds=5, sinceTime=meta_v1.Time(seconds=1)
                )
            },
            "logOptions.sinceSeconds",
        ),
    ],
)
def test_bad_times_name_their_field(ran, owner, fields, field):
    with pytest.raises(ValidationFailed) as caught:
        logs(owner, job_id=ran, pod_namespace="team-a", **fields)
    assert field in problems(caught.value)


def test_unknown_job_other_pod_and_no_run_are_not_found(ran, owner, queue):
    with pytest.raises(NotFound, match="does not exist"):
        logs(owner, job_id="01nosuchjob")
    with pytest.raises(NotFound, match="only pod is number 0"):
        logs(owner, job_id=ran, pod_namespace="team-a", pod_number=1)
    make_job("01queuedjob000000000000000")
    with pytest.raises(NotFound, match="has not run yet"):
        logs(owner, job_id="01queuedjob000000000000000")
    make_job("01onerunjob000000000000000")
    make_run("01only-run", "01onerunjob000000000000000")
    with pytest.raises(NotFound, match="no run before"):
        logs(
            owner,
            job_id="01onerunjob000000000000000",
            log_options=core_v1.PodLogOptions(previous=True),
        )


def test_reading_needs_watch_on_the_queue_as_lookouts_log_view(ran, outsider, member, admin_user):
    for caller in (outsider, member):  # member may only submit to demo
        with pytest.raises(PermissionDenied, match="may not watch on queue 'demo'"):
            logs(caller, job_id=ran, pod_namespace="team-a")
    assert len(logs(admin_user, job_id=ran, pod_namespace="team-a").log) == 5


def test_log_lines_drops_only_the_trailing_newline():
    query = LogQuery("j", 0, "", None, None, MAX_LOG_BYTES, "", False)
    assert [x.line for x in log_lines("a\n\nb", "T", query)] == ["a", "", "b"]
    assert [x.line for x in log_lines("a\r\n", "T", query)] == ["a\r"]
    assert log_lines("", "T", query) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-01T12:00:00Z", T0),
        ("2026-01-01T13:00:00+01:00", T0),
        ("2026-01-01T12:00:00.5Z", at(0.5)),
        ("2026-01-01T12:00:00.123456789Z", at(0.123456)),
        ("2026-01-01t12:00:00z", T0),
    ],
)
def test_rfc3339_times_are_read(text, expected):
    assert parse_rfc3339(text, "sinceTime") == expected


def test_times_are_written_as_kubernetes_writes_log_times():
    assert rfc3339_nano(T0) == "2026-01-01T12:00:00Z"
    assert rfc3339_nano(at(0.25)) == "2026-01-01T12:00:00.25Z"
    assert rfc3339_nano(at(0.000001)) == "2026-01-01T12:00:00.000001Z"
    written = rfc3339_nano(at(1.5))
    assert parse_rfc3339(written, "t") == at(1.5)
    assert isinstance(datetime.fromisoformat(written), datetime)


# -- the REST gateway -------------------------------------------------------------------


def test_the_gateway_answers_logs_in_armadas_json(ran, client):
    response = post(
        client,
        "/v1/binoculars/log",
        {"jobId": ran, "podNamespace": "team-a", "logOptions": {"tailLines": "2"}},
    )
    assert response.status_code == 200, response.content
    assert body(response) == {
        "log": [
            {"timestamp": "2026-01-01T12:00:30Z", "line": "wrote 3 rows"},
            {"timestamp": "2026-01-01T12:00:30Z", "line": "done"},
        ]
    }


def test_the_gateway_refuses_as_grpc_gateway_does(ran, client):
    missing = post(client, "/v1/binoculars/log", {"jobId": "01nosuchjob"})
    assert missing.status_code == 404
    assert body(missing)["code"] == 5
    bad = post(client, "/v1/binoculars/log", {"jobId": ran, "sinceTime": "soon"})
    assert bad.status_code == 400
    assert body(bad)["code"] == 3 and "sinceTime" in body(bad)["message"]


def test_cordon_on_the_gateway_cordons_the_node_after_its_checks(client, owner):
    make_live_executor(now=T0)
    make_live_executor("cluster-b", nodes=2, now=T0)
    olive = Client(HTTP_HOST="localhost")
    olive.force_login(owner)
    denied = post(olive, "/v1/binoculars/cordon", {"nodeName": "node-1"})
    assert (denied.status_code, body(denied)["code"]) == (403, 7)
    assert "update_executor_settings" in body(denied)["message"]
    unknown = post(client, "/v1/binoculars/cordon", {"nodeName": "node-9"})
    assert (unknown.status_code, body(unknown)["code"]) == (404, 5)
    empty = post(client, "/v1/binoculars/cordon", {})
    assert (empty.status_code, body(empty)["code"]) == (400, 3)
    assert "nodeName" in body(empty)["message"]
    assert not Node.objects.filter(cordoned=True).exists()  # nothing written so far
    done = post(client, "/v1/binoculars/cordon", {"nodeName": "node-1"})
    assert done.status_code == 200 and body(done) == {}
    # Binoculars names no cluster: every executor's node of that name.
    cordoned = Node.objects.filter(cordoned=True).values_list("executor_id", "name")
    assert sorted(cordoned) == [("cluster-a", "node-1"), ("cluster-b", "node-1")]
